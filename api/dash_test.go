package api_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/api"
)

const dashPassword = "correct horse battery"

var (
	secretField   = regexp.MustCompile(`id="totp-secret"[^>]*>([A-Z2-7]+)<`)
	recoveryField = regexp.MustCompile(`<li><code>([a-z0-9-]+)</code></li>`)
	credential    = func(id string) *regexp.Regexp { return regexp.MustCompile(`id="` + id + `"[^>]*value="([^"]+)"`) }
)

// A merchant registers, confirms the address from the e-mail, turns on two
// factors, and signs in again with a code and then with a recovery code,
// which works once.
func TestDashboardRegisterAndTwoFactorSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.register("ann@example.com", dashPassword)

	home := b.signIn("ann@example.com", dashPassword)
	require.Equal(t, http.StatusOK, home.Code, home.Body)
	assert.Contains(t, home.Body, "ann@example.com")
	// The session cookie is HttpOnly, Secure and SameSite=Lax, and the page
	// has the strict policy.
	ck := b.cookies["__Host-paywatch_session"]
	require.NotNil(t, ck)
	assert.True(t, ck.HttpOnly)
	assert.True(t, ck.Secure)
	assert.Equal(t, http.SameSiteLaxMode, ck.SameSite)
	assert.Equal(t, "/", ck.Path, "the __Host- prefix: this host only, over HTTPS, the whole site")
	assert.Contains(t, home.Header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.Equal(t, "no-store", home.Header.Get("Cache-Control"))

	b.get("/dashboard/security")
	setup := b.post("/dashboard/security/totp/begin", nil)
	m := secretField.FindStringSubmatch(setup.Body)
	require.NotNil(t, m, setup.Body)
	secret := m[1]
	assert.Contains(t, setup.Body, `src="data:image/png;base64,`)

	// A wrong code changes nothing.
	bad := b.post("/dashboard/security/totp/enable", map[string]string{"code": "000000", "secret": secret})
	assert.Equal(t, http.StatusUnauthorized, bad.Code)
	assert.Contains(t, bad.Body, html.EscapeString(paywatch.MsgInvalidCode))

	codes := b.post("/dashboard/security/totp/enable", map[string]string{"code": b.totpCode(secret)})
	require.Equal(t, http.StatusOK, codes.Code, codes.Body)
	recovery := recoveryField.FindAllStringSubmatch(codes.Body, -1)
	require.Len(t, recovery, 10)

	b.post("/dashboard/logout", nil)
	assert.Nil(t, b.cookies["__Host-paywatch_session"])
	assert.Equal(t, http.StatusSeeOther, b.send(http.MethodGet, "/dashboard", nil).Code)

	// The password alone no longer signs in: a code is asked for.
	p := b.signIn("ann@example.com", dashPassword)
	assert.Contains(t, p.Body, `name="code"`)
	assert.Nil(t, b.cookies["__Host-paywatch_session"])
	p = b.post("/dashboard/login/code", map[string]string{"code": b.totpCode(secret)})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	require.NotNil(t, b.cookies["__Host-paywatch_session"])

	// A recovery code works once.
	b.post("/dashboard/logout", nil)
	b.signIn("ann@example.com", dashPassword)
	p = b.post("/dashboard/login/code", map[string]string{"code": recovery[0][1]})
	require.NotNil(t, b.cookies["__Host-paywatch_session"], p.Body)
	b.post("/dashboard/logout", nil)
	b.signIn("ann@example.com", dashPassword)
	p = b.post("/dashboard/login/code", map[string]string{"code": recovery[0][1]})
	assert.Equal(t, http.StatusUnauthorized, p.Code)
	assert.Nil(t, b.cookies["__Host-paywatch_session"])
}

// A form without the session's token is refused and changes nothing, and
// wrong passwords say the same for a known and an unknown address.
func TestDashboardFormsNeedTheirTokenAndRevealNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "free", nil, nil)
	b := e.browser(t)
	b.register("bob@example.com", dashPassword)
	b.signIn("bob@example.com", dashPassword)
	b.get("/dashboard/projects/new")
	b.csrf = "forged"
	p := b.post("/dashboard/projects/new", map[string]string{"slug": "bobs"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgFormExpired))
	_, err := e.store.ProjectBySlug(context.Background(), "bobs")
	assert.Equal(t, paywatch.ENOTFOUND, paywatch.ErrorCode(err))

	other := e.browser(t)
	known := other.signIn("bob@example.com", "wrong password!")
	unknown := other.signIn("nobody@example.com", "wrong password!")
	assert.Equal(t, http.StatusUnauthorized, known.Code)
	assert.Equal(t, known.Code, unknown.Code)
	assert.Contains(t, known.Body, html.EscapeString(paywatch.MsgInvalidCredentials))
	assert.Contains(t, unknown.Body, html.EscapeString(paywatch.MsgInvalidCredentials))

	// Registering a taken address answers as a new one does.
	fresh := e.browser(t)
	fresh.get("/dashboard/register")
	taken := fresh.post("/dashboard/register", map[string]string{"email": "bob@example.com", "password": dashPassword})
	assert.Equal(t, http.StatusOK, taken.Code)
	assert.Contains(t, taken.Body, "a confirmation link is on its way")
}

// The owner creates a project within the plan, and a settings form with bad
// input shows the API's message and changes nothing.
func TestDashboardProjectAndSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/accounts", map[string]any{"email": "ops@example.com", "plan": "pro"}).Code)
	b := e.browser(t)
	b.register("cat@example.com", dashPassword)
	b.signIn("cat@example.com", dashPassword)
	b.get("/dashboard/projects/new")
	p := b.post("/dashboard/projects/new", map[string]string{"slug": "cats", "name": "Cat shop"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	key := credential("api-key").FindStringSubmatch(p.Body)
	require.NotNil(t, key, p.Body)
	assert.Equal(t, http.StatusOK, e.call(key[1], "GET", "/v1/payments", nil).Code)

	// The free plan allows one project.
	b.get("/dashboard/projects/new")
	p = b.post("/dashboard/projects/new", map[string]string{"slug": "cats-two"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, "Plan limit exceeded")

	b.get("/dashboard/p/cats/settings")
	form := map[string]string{
		"name": "Cat shop", "webhook_url": "http://127.0.0.1/hook", "owner_email": "ops@example.com",
		"address_mode": "per_payment", "pool_matching": "micro_amount", "micro_amount_decimals": "3",
		"payment_expiry_minutes": "60",
	}
	p = b.post("/dashboard/p/cats/settings", form)
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgWebhookURLPrivate))
	form["webhook_url"], form["payment_expiry_minutes"] = "https://example.com/hook", "soon"
	p = b.post("/dashboard/p/cats/settings", form)
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, "payment_expiry_minutes must be a whole number")
	prj, err := e.store.ProjectBySlug(context.Background(), "cats")
	require.NoError(t, err)
	assert.Equal(t, "", prj.WebhookURL)
	assert.Equal(t, 60, prj.PaymentExpiryMinutes)

	form["payment_expiry_minutes"] = "90"
	p = b.post("/dashboard/p/cats/settings", form)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Settings saved.")
	prj, err = e.store.ProjectBySlug(context.Background(), "cats")
	require.NoError(t, err)
	assert.Equal(t, "https://example.com/hook", prj.WebhookURL)
	assert.Equal(t, 90, prj.PaymentExpiryMinutes)
	assert.Equal(t, "cat@example.com", prj.OwnerEmail(), "the form cannot hand the project over")

	// The owner turns the project off and on; one the operator turned off
	// stays off.
	p = b.post("/dashboard/p/cats/deactivate", map[string]string{"active": "false"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	requireError(t, e.call(key[1], "GET", "/v1/payments", nil), http.StatusForbidden, "Project is deactivated")
	p = b.post("/dashboard/p/cats/deactivate", map[string]string{"active": "true"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Equal(t, http.StatusOK, e.call(key[1], "GET", "/v1/payments", nil).Code)
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/cats", map[string]any{"active": false}).Code)
	p = b.post("/dashboard/p/cats/deactivate", map[string]string{"active": "true"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgOperatorDeactivated))
	// Turning it off again first does not take the operator's mark away.
	b.post("/dashboard/p/cats/deactivate", map[string]string{"active": "false"})
	p = b.post("/dashboard/p/cats/deactivate", map[string]string{"active": "true"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	requireError(t, e.call(key[1], "GET", "/v1/payments", nil), http.StatusForbidden, "Project is deactivated")
}

// A viewer sees the payments of the project they were invited to, and every
// owner page and action refuses them.
func TestDashboardViewerCannotActAsOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	owner := e.browser(t)
	owner.register("own@example.com", dashPassword)
	owner.signIn("own@example.com", dashPassword)
	owner.get("/dashboard/projects/new")
	p := owner.post("/dashboard/projects/new", map[string]string{"slug": "owned"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	owner.get("/dashboard/p/owned/viewers")
	p = owner.post("/dashboard/p/owned/viewers", map[string]string{"email": "view@example.com"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)

	viewer := e.browser(t)
	path, token := link(t, e.mailTo(t, "view@example.com", "invited"))
	p = viewer.get(path + "?token=" + token)
	// The invitation names the project and who invited (issue 28, item 6).
	assert.Contains(t, p.Body, `<strong id="invite-from">own@example.com</strong> invited`)
	assert.Contains(t, p.Body, `<strong id="invite-project">owned</strong>`)
	p = viewer.post("/dashboard/invite", map[string]string{"token": token, "password": dashPassword})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	// Accepting signs the new account in, on the project's payments.
	assert.Contains(t, p.Body, "You accepted the invitation")
	assert.Contains(t, p.Body, `<h1>Payments</h1>`)
	require.NotNil(t, viewer.cookies["__Host-paywatch_session"])
	// A viewer's home shows what a viewer can use: the projects it views.
	home := viewer.get("/dashboard")
	assert.Contains(t, home.Body, `href="/dashboard/p/owned/payments"`)
	for _, owners := range []string{`id="new-project"`, `id="usage"`, `id="project-limit"`, "Usage against your plan"} {
		assert.NotContains(t, home.Body, owners)
	}

	assert.Equal(t, http.StatusOK, viewer.get("/dashboard/p/owned/payments").Code)
	csrf := viewer.csrf
	for _, r := range api.DashboardProjectRoutes(e.server) {
		if !r.Owner {
			continue
		}
		path := "/dashboard/p/owned" + strings.NewReplacer(":id", "00000000-0000-0000-0000-000000000000", ":event", "x").Replace(r.Path)
		viewer.csrf = csrf
		var got page
		if r.Method == http.MethodGet {
			got = viewer.send(http.MethodGet, path, nil)
		} else {
			got = viewer.post(path, map[string]string{"protection_key": "whatever1", "email": "x@example.com"})
		}
		assert.Equal(t, http.StatusForbidden, got.Code, "%s %s", r.Method, path)
		assert.Contains(t, got.Body, html.EscapeString(paywatch.MsgOwnerOnly), "%s %s", r.Method, path)
	}
	// A new project's keys page, outside the route table (dash.go), is
	// the owner's too.
	got := viewer.send(http.MethodGet, "/dashboard/p/owned/created", nil)
	assert.Equal(t, http.StatusForbidden, got.Code)
	// A project the account has no role in does not exist for it.
	e.merchant("elsewhere", "free", nil, nil)
	assert.Equal(t, http.StatusNotFound, viewer.get("/dashboard/p/elsewhere/payments").Code)
}

// Regenerating keys needs the protection key, shows the new keys once,
// stops the old API key at once and e-mails the owner; two sessions
// regenerating at once leave exactly one working key, the one shown last.
func TestDashboardKeyRegeneration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.register("key@example.com", dashPassword)
	b.signIn("key@example.com", dashPassword)
	b.get("/dashboard/projects/new")
	p := b.post("/dashboard/projects/new", map[string]string{"slug": "keys"})
	old := credential("api-key").FindStringSubmatch(p.Body)[1]

	b.get("/dashboard/p/keys/keys")
	p = b.post("/dashboard/p/keys/keys", map[string]string{"protection_key": "anything"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgSetProtectionKey))

	b.get("/dashboard/security")
	p = b.post("/dashboard/security/protection-key", map[string]string{"current": "not my password", "key": "guard-2026-key"})
	assert.Equal(t, http.StatusForbidden, p.Code, "the first key needs the password")
	assert.Contains(t, p.Body, paywatch.MsgWrongPassword)
	p = b.post("/dashboard/security/protection-key", map[string]string{"current": dashPassword, "key": "guard-2026-key"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)

	b.get("/dashboard/p/keys/keys")
	p = b.post("/dashboard/p/keys/keys", map[string]string{"protection_key": "not the key"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgWrongProtectionKey))
	assert.Equal(t, http.StatusOK, e.call(old, "GET", "/v1/payments", nil).Code)

	second := e.browser(t)
	second.signIn("key@example.com", dashPassword)
	second.get("/dashboard/p/keys/keys")
	b.get("/dashboard/p/keys/keys")
	var wg sync.WaitGroup
	shown := make([]string, 2)
	for i, br := range []*browser{b, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := br.post("/dashboard/p/keys/keys", map[string]string{"protection_key": "guard-2026-key"})
			if m := credential("api-key").FindStringSubmatch(p.Body); m != nil {
				shown[i] = m[1]
			}
		}()
	}
	wg.Wait()
	require.NotEmpty(t, shown[0])
	require.NotEmpty(t, shown[1])
	assert.NotEqual(t, shown[0], shown[1])
	working := 0
	for _, k := range shown {
		if e.call(k, "GET", "/v1/payments", nil).Code == http.StatusOK {
			working++
		}
	}
	assert.Equal(t, 1, working, "exactly one of the two keys shown works")
	requireError(t, e.call(old, "GET", "/v1/payments", nil), http.StatusUnauthorized, paywatch.MsgInvalidAPIKey)
	alert := e.mailTo(t, "key@example.com", "Security alert")
	assert.NotContains(t, alert.Text, shown[0])
	assert.NotContains(t, alert.Text, shown[1])
}

// An account the operator creates gets an e-mail to set its password; a
// forgotten password is reset the same way, and the old one stops working.
func TestDashboardOperatorAccountSetsItsPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("ops", "pro", nil, nil)
	b := e.browser(t)
	path, token := link(t, e.mailTo(t, "ops@example.com", "Set your paywatch password"))
	b.get(path + "?token=" + token)
	p := b.post("/dashboard/password/reset", map[string]string{"token": token, "password": "short"})
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgPasswordLength))
	p = b.post("/dashboard/password/reset", map[string]string{"token": token, "password": dashPassword})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	p = b.signIn("ops@example.com", dashPassword)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Shop ops")

	// The link works once.
	again := e.browser(t)
	again.get(path + "?token=" + token)
	p = again.post("/dashboard/password/reset", map[string]string{"token": token, "password": "another password!"})
	assert.Equal(t, http.StatusGone, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgLinkGone))

	// A reset signs the open session out.
	again.get("/dashboard/password/forgot")
	again.post("/dashboard/password/forgot", map[string]string{"email": "ops@example.com"})
	path, token = link(t, e.mailTo(t, "ops@example.com", "Reset your paywatch password"))
	again.get(path + "?token=" + token)
	again.post("/dashboard/password/reset", map[string]string{"token": token, "password": "a brand new password"})
	assert.Equal(t, http.StatusSeeOther, b.send(http.MethodGet, "/dashboard", nil).Code)
	assert.Equal(t, http.StatusUnauthorized, b.signIn("ops@example.com", dashPassword).Code)
	assert.Equal(t, http.StatusOK, b.signIn("ops@example.com", "a brand new password").Code)
}

// Text that PostgreSQL cannot store is refused on the form, never a 500.
func TestDashboardUnstorableInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.get("/dashboard/login")
	for _, bad := range []string{"a\x00@example.com", "\xff\xfe@example.com"} {
		p := b.post("/dashboard/login", map[string]string{"email": bad, "password": dashPassword})
		assert.Equal(t, http.StatusBadRequest, p.Code, "%q", bad)
		assert.Contains(t, p.Body, paywatch.MsgInvalidForm)
	}
	b.owner("nul@example.com", "nul")
	b.get("/dashboard/p/nul/settings")
	p := b.post("/dashboard/p/nul/settings", map[string]string{"name": "Shop\x00", "payment_expiry_minutes": "60", "micro_amount_decimals": "3"})
	assert.Equal(t, http.StatusBadRequest, p.Code)
}

// An owner who lost the protection key asks the operator, who removes it;
// the owner is told by e-mail and sets a new one with their password.
func TestOperatorClearsProtectionKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("lost@example.com", "lost")
	b.get("/dashboard/security")
	b.post("/dashboard/security/protection-key", map[string]string{"current": dashPassword, "key": "forgotten key"})

	// An account without a key is told nothing.
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/accounts", map[string]any{"email": "nokey@example.com", "plan": "free"}).Code)
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/nokey@example.com", map[string]any{"protection_key": nil}).Code)
	ms, err := e.store.ListMail(t.Context(), 100)
	require.NoError(t, err)
	for _, m := range ms {
		assert.NotContains(t, m.Subject, "protection key was removed", "to %s", m.To)
	}
	requireError(t, e.op("PATCH", "/v1/accounts/lost@example.com", map[string]any{"protection_key": "new"}),
		http.StatusBadRequest, paywatch.MsgProtectionKeyNull)
	r := e.op("PATCH", "/v1/accounts/lost@example.com", map[string]any{"protection_key": nil})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Contains(t, e.mailTo(t, "lost@example.com", "protection key was removed").Text, "/dashboard/security")

	b.get("/dashboard/p/lost/keys")
	p := b.post("/dashboard/p/lost/keys", map[string]string{"protection_key": "forgotten key"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgSetProtectionKey)
	b.get("/dashboard/security")
	p = b.post("/dashboard/security/protection-key", map[string]string{"current": dashPassword, "key": "a fresh key"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	b.get("/dashboard/p/lost/keys")
	p = b.post("/dashboard/p/lost/keys", map[string]string{"protection_key": "a fresh key"})
	assert.Equal(t, http.StatusOK, p.Code, p.Body)
}
