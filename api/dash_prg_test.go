package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// shownOnce is the flash of a page of secrets opened a second time.
const shownOnce = "Secrets are shown once, and that page was already shown."

// Every form that succeeds answers with a redirect to a page
// (post/redirect/get), so that reloading what the browser shows never
// posts again; secrets shown once (a new project's keys, regenerated keys,
// recovery codes) cross the redirect sealed, and a reload of their page
// shows them no more (issue 28, item 4).
func TestDashboardActionsRedirect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)

	// Registration: the notice is a page of its own; reloading it sends
	// nothing again.
	b.get("/dashboard/register")
	p := b.send(http.MethodPost, "/dashboard/register", b.form(map[string]string{"email": "prg@example.com", "password": dashPassword}))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	assert.Equal(t, "/dashboard/notice", p.Location)
	assert.Contains(t, b.get(p.Location).Body, paywatch.MsgCheckInbox)
	assert.Equal(t, 1, e.mailCount(t, "prg@example.com"))
	path, token := link(t, e.mailTo(t, "prg@example.com", "Confirm"))
	b.get(path + "?token=" + token)
	b.post("/dashboard/confirm", map[string]string{"token": token, "password": dashPassword})
	b.signIn("prg@example.com", dashPassword)

	// A new project's keys: shown once, after a redirect.
	b.get("/dashboard/projects/new")
	p = b.send(http.MethodPost, "/dashboard/projects/new", b.form(map[string]string{"slug": "prg"}))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	assert.Equal(t, "/dashboard/p/prg/created", p.Location)
	created := b.get(p.Location)
	require.Equal(t, http.StatusOK, created.Code, created.Body)
	key := credential("api-key").FindStringSubmatch(created.Body)
	require.NotNil(t, key, created.Body)
	assert.Equal(t, http.StatusOK, e.call(key[1], "GET", "/v1/payments", nil).Code)
	again := b.get("/dashboard/p/prg/created")
	assert.Contains(t, again.Body, shownOnce)
	assert.NotContains(t, again.Body, key[1])

	// Regenerated keys: the same.
	b.get("/dashboard/security")
	p = b.send(http.MethodPost, "/dashboard/security/protection-key", b.form(map[string]string{"current": dashPassword, "key": "prg-guard-key"}))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	b.get("/dashboard/p/prg/keys")
	p = b.send(http.MethodPost, "/dashboard/p/prg/keys", b.form(map[string]string{"protection_key": "prg-guard-key"}))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	assert.Equal(t, "/dashboard/p/prg/keys/new", p.Location)
	fresh := b.get(p.Location)
	newKey := credential("api-key").FindStringSubmatch(fresh.Body)
	require.NotNil(t, newKey, fresh.Body)
	assert.Equal(t, http.StatusOK, e.call(newKey[1], "GET", "/v1/payments", nil).Code)
	again = b.get("/dashboard/p/prg/keys/new")
	assert.Contains(t, again.Body, shownOnce)
	assert.NotContains(t, again.Body, newKey[1])
	assert.Equal(t, http.StatusOK, e.call(newKey[1], "GET", "/v1/payments", nil).Code, "the reload regenerated nothing")

	// The sealed keys open only for the session they were made for.
	thief := e.browser(t)
	thief.signIn("prg@example.com", dashPassword)
	b.get("/dashboard/p/prg/keys")
	p = b.send(http.MethodPost, "/dashboard/p/prg/keys", b.form(map[string]string{"protection_key": "prg-guard-key"}))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	copied := 0
	for name, ck := range b.cookies {
		if strings.Contains(name, "reveal") {
			thief.cookies[name] = ck
			copied++
		}
	}
	require.Equal(t, 1, copied, "the sealed keys are in one cookie")
	stolen := thief.get("/dashboard/p/prg/keys/new")
	assert.Contains(t, stolen.Body, shownOnce)
	assert.NotRegexp(t, credential("api-key"), stolen.Body)
	assert.Regexp(t, credential("api-key"), b.get("/dashboard/p/prg/keys/new").Body, "the session that made them opens them")

	// Two factors: the secret's page and the recovery codes, each a GET.
	b.get("/dashboard/security")
	p = b.send(http.MethodPost, "/dashboard/security/totp/begin", b.form(nil))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	setup := b.get(p.Location)
	m := secretField.FindStringSubmatch(setup.Body)
	require.NotNil(t, m, setup.Body)
	assert.Equal(t, m[1], secretField.FindStringSubmatch(b.get("/dashboard/security/totp").Body)[1], "a reload shows the same secret")
	p = b.send(http.MethodPost, "/dashboard/security/totp/enable", b.form(map[string]string{"code": b.totpCode(m[1])}))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	codes := b.get(p.Location)
	require.Len(t, recoveryField.FindAllStringSubmatch(codes.Body, -1), 10, codes.Body)
	again = b.get("/dashboard/security/codes")
	assert.Contains(t, again.Body, shownOnce)
	assert.Empty(t, recoveryField.FindAllStringSubmatch(again.Body, -1))

	// A password reset: the notice is a page too.
	out := e.browser(t)
	out.get("/dashboard/password/forgot")
	p = out.send(http.MethodPost, "/dashboard/password/forgot", out.form(map[string]string{"email": "prg@example.com"}))
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	assert.Contains(t, out.get(p.Location).Body, paywatch.MsgCheckInboxReset)
}

// A new account sets its protection key on the wallet form itself, and
// the wallet is saved in the same step (issue 28, item 1).
func TestDashboardWalletSetsTheProtectionKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("first@example.com", "first")
	b.get("/dashboard/p/first/wallet")
	p := b.post("/dashboard/p/first/wallet", map[string]string{"action": "preview", "xpub_evm": testXPubEVM})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, `id="set-protection-key"`)
	p = b.post("/dashboard/p/first/wallet", map[string]string{
		"action": "save", "xpub_evm": testXPubEVM, "password": dashPassword, "new_protection_key": "first-guard-key",
	})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Wallet saved.")
	w, err := e.store.WalletOf(t.Context(), projectID(t, e, "first"))
	require.NoError(t, err)
	require.NotNil(t, w)
	assert.Equal(t, testXPubEVM, w.XPubs[paywatch.FamilyEVM])
	assert.Contains(t, p.Body, `id="wallet_protection_key"`, "from now on the form asks for the key")
	// The key set works where keys are asked for.
	b.get("/dashboard/p/first/keys")
	p = b.post("/dashboard/p/first/keys", map[string]string{"protection_key": "first-guard-key"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Regexp(t, credential("api-key"), p.Body)
}
