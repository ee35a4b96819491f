package api_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// owner registers an account through the pages, signs it in and creates a
// project; it returns the project's API key.
func (b *browser) owner(email, slug string) string {
	b.t.Helper()
	b.register(email, dashPassword)
	b.signIn(email, dashPassword)
	b.get("/dashboard/projects/new")
	p := b.post("/dashboard/projects/new", map[string]string{"slug": slug})
	require.Equal(b.t, http.StatusOK, p.Code, p.Body)
	return credential("api-key").FindStringSubmatch(p.Body)[1]
}

// The wallet page previews the first derived addresses before saving, and
// no static address or wallet a payment still needs can be removed; the
// wallet goes only with the protection key.
func TestDashboardWallet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser(t)
	key := b.owner("wal@example.com", "wal")
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/wal", map[string]any{"address_mode": "pool", "pool_matching": "txid"}).Code)

	b.get("/dashboard/p/wal/wallet")
	p := b.post("/dashboard/p/wal/wallet", map[string]string{"action": "preview", "xpub_tron": testXPubTron})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, testTronIndex1, "index 1 is the first payment address")
	w, err := e.store.WalletOf(t.Context(), projectID(t, e, "wal"))
	require.NoError(t, err)
	assert.Nil(t, w, "a preview saves nothing")

	p = b.post("/dashboard/p/wal/wallet", map[string]string{"action": "preview", "xpub_evm": testXPrv})
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, "private")

	// Changing where payments go needs the protection key, and e-mails
	// the owner; a new name alone does not.
	save := map[string]string{"action": "save", "name": "Main", "addresses_TRC20": tronAddrs[0] + "\n" + tronAddrs[2]}
	p = b.post("/dashboard/p/wal/wallet", save)
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgSetProtectionKey)
	assert.Contains(t, p.Body, tronAddrs[2], "the form keeps what was typed")
	// The form offers to set the key right there (issue 28, item 1): a
	// wrong password keeps the form as typed, and sets nothing.
	assert.Contains(t, p.Body, `id="set-protection-key"`)
	assert.NotContains(t, p.Body, `id="wallet_protection_key"`)
	save["password"], save["new_protection_key"] = "not my password", "wallet-guard-key"
	p = b.post("/dashboard/p/wal/wallet", save)
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgWrongPassword)
	assert.Contains(t, p.Body, tronAddrs[2], "the form keeps what was typed")
	// The right password sets the key, and the wallet with it, in one
	// step; a wallet refused after that keeps the key set.
	save["password"] = dashPassword
	save["addresses_TRC20"] = "not-an-address"
	p = b.post("/dashboard/p/wal/wallet", save)
	assert.Equal(t, http.StatusBadRequest, p.Code, p.Body)
	assert.Contains(t, p.Body, `id="key-just-set"`)
	assert.Contains(t, p.Body, `id="wallet_protection_key"`, "the key is set: the form asks for it now")
	assert.Contains(t, p.Body, "not-an-address", "the form keeps what was typed")
	assert.Contains(t, b.get("/dashboard/security").Body, `<span class="badge on">set</span>`)
	delete(save, "password")
	delete(save, "new_protection_key")
	save["addresses_TRC20"] = tronAddrs[0] + "\n" + tronAddrs[2]
	b.get("/dashboard/p/wal/wallet")
	save["protection_key"] = "not the key"
	p = b.post("/dashboard/p/wal/wallet", save)
	assert.Equal(t, http.StatusForbidden, p.Code)
	w, err = e.store.WalletOf(t.Context(), projectID(t, e, "wal"))
	require.NoError(t, err)
	assert.Nil(t, w)
	save["protection_key"] = "wallet-guard-key"
	p = b.post("/dashboard/p/wal/wallet", save)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Wallet saved.")
	assert.Contains(t, p.Body, tronAddrs[2])
	assert.Contains(t, e.mailTo(t, "wal@example.com", "the wallet of").Text, "2 static address(es)")
	p = b.post("/dashboard/p/wal/wallet", map[string]string{"action": "save", "name": "Renamed"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	alerts := 0
	ms, err := e.store.ListMail(t.Context(), 100)
	require.NoError(t, err)
	for _, m := range ms {
		if strings.Contains(m.Subject, "the wallet of") {
			alerts++
		}
	}
	assert.Equal(t, 1, alerts, "a new name alone sends no alert")

	// A payment on the pool takes an address; while it is open neither
	// that address nor the wallet can go.
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "c1", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	busy, id := r.str("payment.address"), r.str("payment.id")
	p = b.post("/dashboard/p/wal/wallet", map[string]string{"remove_address": "TRC20 " + busy})
	assert.Equal(t, http.StatusConflict, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgStaticAddressBusy))

	p = b.post("/dashboard/p/wal/wallet/delete", map[string]string{"protection_key": "wrong key!"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgWrongProtectionKey)
	p = b.post("/dashboard/p/wal/wallet/delete", map[string]string{"protection_key": "wallet-guard-key"})
	assert.Equal(t, http.StatusConflict, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgWalletInUse))

	require.Equal(t, http.StatusOK, e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"}).Code)
	p = b.post("/dashboard/p/wal/wallet", map[string]string{"remove_address": "TRC20 " + busy})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.NotContains(t, p.Body, busy)
	// A removed address goes to no new payment; added again, it does.
	for i := range 3 {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": fmt.Sprint("r", i), "network": "TRC20"})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		assert.NotEqual(t, busy, r.str("payment.address"))
		require.Equal(t, http.StatusOK, e.call(key, "PATCH", "/v1/payments/"+r.str("payment.id"), map[string]any{"status": "cancelled"}).Code)
	}
	p = b.post("/dashboard/p/wal/wallet", map[string]string{"action": "save", "name": "Main", "addresses_TRC20": busy, "protection_key": "wallet-guard-key"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, busy)
	p = b.post("/dashboard/p/wal/wallet", map[string]string{"remove_address": "TRC20 " + busy})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	p = b.post("/dashboard/p/wal/wallet/delete", map[string]string{"protection_key": "wallet-guard-key"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Wallet deleted.")
	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "c2", "network": "TRC20"}),
		http.StatusBadRequest, paywatch.MsgNoWallet)
}

// Payment links are created with the API's checks, listed with their
// payments and deactivated; another project's link is not found.
func TestDashboardLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("lnk@example.com", "lnk")
	b.get("/dashboard/p/lnk/links")
	p := b.post("/dashboard/p/lnk/links", map[string]string{"slug": "tee", "title": "T-shirt", "amount": "twelve"})
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgBuyerAmount)
	assert.Contains(t, p.Body, `value="T-shirt"`, "the form keeps what was typed")
	p = b.post("/dashboard/p/lnk/links", map[string]string{"slug": "tee", "title": "T-shirt", "amount": "12.5", "token": "USDT", "network": "TRC20"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, payURL+"/l/tee")
	assert.Contains(t, p.Body, "12.50")

	// The free plan allows three links.
	for _, slug := range []string{"two", "three"} {
		require.Equal(t, http.StatusOK, b.post("/dashboard/p/lnk/links", map[string]string{"slug": slug, "title": slug}).Code)
	}
	p = b.post("/dashboard/p/lnk/links", map[string]string{"slug": "four", "title": "four"})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, "Plan limit exceeded")

	id := regexp.MustCompile(`/links/([0-9a-f-]{36})/deactivate`).FindStringSubmatch(p.Body)
	require.NotNil(t, id, p.Body)
	p = b.post("/dashboard/p/lnk/links/"+id[1]+"/deactivate", nil)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Payment link deactivated.")

	other := e.browser(t)
	other.owner("oth@example.com", "oth")
	other.get("/dashboard/p/oth/links")
	p = other.post("/dashboard/p/oth/links/"+id[1]+"/deactivate", nil)
	assert.Equal(t, http.StatusNotFound, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgLinkNotFound)
}

// The payment list takes the API's filters, with its messages.
func TestDashboardPaymentFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("flt@example.com", "flt")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/flt/wallet", hdWallet()).Code)
	for _, ref := range []string{"a", "b", "c"} {
		require.Equal(t, http.StatusCreated, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": ref, "network": "TRC20"}).Code)
	}
	p := b.get("/dashboard/p/flt/payments?link=not-a-uuid")
	assert.NotContains(t, p.Body, "one payment link", "a malformed link id filters nothing")
	p = b.get("/dashboard/p/flt/payments?status=pending&limit=2&created_after=&updated_after=")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "offset=2", "a link to the next page")
	p = b.get("/dashboard/p/flt/payments?status=lost")
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgInvalidStatus)
	p = b.get("/dashboard/p/flt/payments?created_after=yesterday")
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgInvalidCreated)
}

// With PAYWATCH_REQUIRE_2FA an owner must turn on two factors before any
// project page opens; the first project can still be created.
func TestDashboardOperatorRequiresTwoFactor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true, requireTwoFactor: true})
	b := e.browser(t)
	b.owner("tfa@example.com", "tfa")
	p := b.send(http.MethodGet, "/dashboard/p/tfa/settings", nil)
	require.Equal(t, http.StatusSeeOther, p.Code)
	assert.Equal(t, "/dashboard/security", p.Location)
	p = b.get("/dashboard/p/tfa/settings")
	assert.Contains(t, p.Body, "requires two-factor sign-in")
	// The payment page's script gets JSON, not a page to follow.
	p = b.send(http.MethodGet, "/dashboard/p/tfa/payments/00000000-0000-0000-0000-000000000000/status", nil)
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Header.Get("Content-Type"), "application/json")
	b.post("/dashboard/logout", nil)
	p = b.send(http.MethodGet, "/dashboard/p/tfa/payments/00000000-0000-0000-0000-000000000000/status", nil)
	assert.Equal(t, http.StatusUnauthorized, p.Code)
	p = b.send(http.MethodGet, "/dashboard/p/tfa/payments", nil)
	assert.Equal(t, http.StatusSeeOther, p.Code, "every project page waits for two factors")
}

// projectID is a project's row id.
func projectID(t *testing.T, e *env, slug string) int64 {
	t.Helper()
	p, err := e.store.ProjectBySlug(t.Context(), slug)
	require.NoError(t, err)
	return p.ID
}

// "Re-check chain" goes through the payment's workflow, and a payment is
// checked at most six times a minute.
func TestDashboardRecheckChain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser(t)
	key := b.owner("rck@example.com", "rck")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/rck/wallet", hdWallet()).Code)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "a", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	path := "/dashboard/p/rck/payments/" + r.str("payment.id")
	b.get(path)
	for range 6 {
		p := b.post(path+"/recheck", nil)
		require.Equal(t, http.StatusOK, p.Code, p.Body)
		assert.Contains(t, p.Body, "The chain was checked again.")
	}
	p := b.post(path+"/recheck", nil)
	assert.Equal(t, http.StatusTooManyRequests, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgTooManyRequests)
}

// The settings take a Telegram chat with the API's check; without a bot
// the page says chat notifications are off.
func TestDashboardTelegramSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("tgs@example.com", "tgs")
	p := b.get("/dashboard/p/tgs/settings")
	assert.Contains(t, p.Body, "Chat notifications are off on this server")
	form := map[string]string{"address_mode": "per_payment", "pool_matching": "micro_amount", "micro_amount_decimals": "3", "payment_expiry_minutes": "60"}
	form["telegram_chat_id"] = "my chat"
	p = b.post("/dashboard/p/tgs/settings", form)
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgChatID))
	form["telegram_chat_id"] = "@shop_payments"
	p = b.post("/dashboard/p/tgs/settings", form)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	prj, err := e.store.ProjectBySlug(t.Context(), "tgs")
	require.NoError(t, err)
	assert.Equal(t, "@shop_payments", prj.TelegramChatID)

	// A chat linked (here by the operator) while the page was open is not
	// undone by saving other settings from it.
	b.get("/dashboard/p/tgs/settings")
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/tgs", map[string]any{"telegram_chat_id": "4242"}).Code)
	form["telegram_chat_id"], form["telegram_chat_was"], form["payment_expiry_minutes"] = "@shop_payments", "@shop_payments", "90"
	p = b.post("/dashboard/p/tgs/settings", form)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	prj, err = e.store.ProjectBySlug(t.Context(), "tgs")
	require.NoError(t, err)
	assert.Equal(t, "4242", prj.TelegramChatID)
	assert.Equal(t, 90, prj.PaymentExpiryMinutes)
	p = b.post("/dashboard/p/tgs/telegram-link", nil)
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgTelegramOff)
	requireError(t, e.op("POST", "/v1/projects/tgs/telegram-link", nil), http.StatusBadRequest, paywatch.MsgTelegramOff)
}

// The settings turn transfer.unmatched webhooks on and off with a
// checkbox; the page shows the saved choice.
func TestDashboardUnmatchedWebhooksSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("umw@example.com", "umw")
	p := b.get("/dashboard/p/umw/settings")
	assert.NotContains(t, p.Body, `name="unmatched_webhooks" value="on" checked`)
	form := map[string]string{"address_mode": "per_payment", "pool_matching": "micro_amount", "micro_amount_decimals": "3",
		"payment_expiry_minutes": "60", "unmatched_webhooks": "on"}
	p = b.post("/dashboard/p/umw/settings", form)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	prj, err := e.store.ProjectBySlug(t.Context(), "umw")
	require.NoError(t, err)
	assert.True(t, prj.UnmatchedWebhooks)
	assert.Contains(t, b.get("/dashboard/p/umw/settings").Body, `name="unmatched_webhooks" value="on" checked`)
	delete(form, "unmatched_webhooks")
	p = b.post("/dashboard/p/umw/settings", form)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	prj, err = e.store.ProjectBySlug(t.Context(), "umw")
	require.NoError(t, err)
	assert.False(t, prj.UnmatchedWebhooks, "an unticked box turns it off")
}

// An invitation to an address that has an account is taken only by that
// account, signed in: the link alone (forwarded, intercepted) neither
// accepts it nor adds the project to another account (issue 28, item 20).
func TestDashboardInvitationToAnExistingAccountNeedsItsSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	owner := e.browser(t)
	owner.owner("inv@example.com", "inv")
	pat := e.browser(t)
	pat.register("pat@example.com", dashPassword)
	owner.get("/dashboard/p/inv/viewers")
	p := owner.post("/dashboard/p/inv/viewers", map[string]string{"email": "pat@example.com"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	path, token := link(t, e.mailTo(t, "pat@example.com", "invited"))

	holder := e.browser(t) // whoever has the link, signed in as nobody
	p = holder.get(path + "?token=" + token)
	assert.Contains(t, p.Body, `id="invite-sign-in"`)
	assert.NotContains(t, p.Body, `id="invite-form"`)
	holder.get("/dashboard/login") // a form's token, to post the invitation anyway
	p = holder.post("/dashboard/invite", map[string]string{"token": token})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, "Sign in as pat@example.com to accept this invitation")

	mallory := e.browser(t)
	mallory.register("mallory@example.com", dashPassword)
	mallory.signIn("mallory@example.com", dashPassword)
	mallory.get(path + "?token=" + token)
	p = mallory.post("/dashboard/invite", map[string]string{"token": token})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.NotContains(t, mallory.get("/dashboard").Body, "/dashboard/p/inv/", "the project is not the other account's")

	pat.signIn("pat@example.com", dashPassword)
	p = pat.get(path + "?token=" + token)
	assert.Contains(t, p.Body, `id="invite-form"`)
	p = pat.post("/dashboard/invite", map[string]string{"token": token})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Equal(t, http.StatusOK, pat.get("/dashboard/p/inv/payments").Code, "pat views the project")
}

// Before sign-in, the anti-forgery token is one the server signed: a
// cookie an attacker plants, with the same value in the form, is refused;
// and a token in the query string counts for nothing (issue 28, item 18).
func TestDashboardPreSessionTokenIsTheServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.register("tok@example.com", dashPassword)

	planted := e.browser(t)
	planted.cookies["__Host-paywatch_csrf"] = &http.Cookie{Name: "__Host-paywatch_csrf", Value: "attacker-chosen-value-0123456789"}
	planted.csrf = "attacker-chosen-value-0123456789"
	p := planted.post("/dashboard/login", map[string]string{"email": "tok@example.com", "password": dashPassword})
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgFormExpired))

	q := e.browser(t)
	q.get("/dashboard/login")
	token := q.csrf
	p = q.send(http.MethodPost, "/dashboard/login?csrf="+url.QueryEscape(token),
		url.Values{"email": {"tok@example.com"}, "password": {dashPassword}})
	assert.Equal(t, http.StatusForbidden, p.Code, "a token in the URL is not read")
	p = q.post("/dashboard/login", map[string]string{"email": "tok@example.com", "password": dashPassword})
	assert.Equal(t, http.StatusOK, p.Code, "the form's token is")
}

// The webhook hint says what this deployment does: dev takes plain HTTP
// and private addresses, production neither (issue 28, item 8).
func TestDashboardWebhookHintFollowsTheDeployment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    envOptions
		hint string
	}{
		{envOptions{noWorkflows: true, requireHTTPS: true}, "HTTPS; private and local addresses are refused."},
		{envOptions{noWorkflows: true, allowPrivate: true}, "HTTP or HTTPS, local and private addresses included (this server is in development mode)."},
	} {
		e := newEnv(t, tc.o)
		b := e.browser(t)
		b.owner("hint@example.com", "hint")
		assert.Contains(t, b.get("/dashboard/p/hint/settings").Body, tc.hint)
		assert.Contains(t, b.get("/dashboard/projects/new").Body, tc.hint)
	}
}

// Each credential is named for what it does: the API secret is not what
// the protected actions ask for (that is the account's protection key),
// and a payment's status line does not say "paid" twice (issue 28, items
// 2 and 10).
func TestDashboardNamesEachCredentialAndAmount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("cred@example.com", "cred")
	keys := b.get("/dashboard/p/cred/keys").Body
	assert.NotContains(t, keys, "API secret</strong> for the dashboard")
	assert.Contains(t, keys, "protection key")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/cred/wallet", hdWallet()).Code)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 25, "external_ref": "a", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	page := b.get("/dashboard/p/cred/payments/" + r.str("payment.id")).Body
	assert.Contains(t, page, "of 25.00 USDT received")
	assert.NotContains(t, page, `<span class="muted">paid <span`)
}

// "Re-check chain" is offered only where a transfer found could still
// count: on an open payment, not on a cancelled one, where it could only
// answer 409 (issue 28, item 4).
func TestDashboardRecheckOnlyWhereItCanHelp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("rch@example.com", "rch")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/rch/wallet", hdWallet()).Code)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "a", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	id := r.str("payment.id")
	assert.Contains(t, b.get("/dashboard/p/rch/payments/"+id).Body, `id="recheck-form"`, "open: offered")
	_, err := e.store.Pool().Exec(t.Context(), `UPDATE payments SET status = 'cancelled' WHERE id = $1`, id)
	require.NoError(t, err)
	assert.NotContains(t, b.get("/dashboard/p/rch/payments/"+id).Body, `id="recheck-form"`, "cancelled: not offered")
}
