package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The merchant dashboard in a real headless Chromium against the whole
// service of `paywatch dev`, its e-mail going through real SMTP to an
// in-process server: a merchant registers, confirms the address from the
// e-mail, turns on two factors, signs in again with a code, creates a
// project, a wallet and a payment link, a buyer pays the link with a
// devnet transfer, the open payment page turns paid without a reload, the
// merchant sends a webhook again and regenerates the keys (getting the
// security alert), and a viewer sees the payments but none of the owner's
// actions. With PAYWATCH_UPDATE_SCREENSHOTS=1 the main pages are written to
// docs/screenshots/dashboard-*.png for the README.

// linkIn is the dashboard path and query of the link in an e-mail (the
// dev base URL of a test has port 0, so the host is the test's own).
var linkIn = regexp.MustCompile(`/dashboard/[a-z/]+\?token=[A-Za-z0-9_-]+`)

func mailLink(t *testing.T, m sunkMail) string {
	t.Helper()
	l := linkIn.FindString(m.Text)
	require.NotEmpty(t, l, "no link in %q", m.Text)
	return l
}

// hookReceiver records the webhooks a project receives.
type hookReceiver struct {
	mu     sync.Mutex
	events []map[string]any
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &ev)
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (h *hookReceiver) count(event string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ev := range h.events {
		if ev["event"] == event {
			n++
		}
	}
	return n
}

// fill types into the fields of a form, by element id.
func (p *browserPage) fill(fields map[string]string) {
	p.t.Helper()
	for id, v := range fields {
		p.do(chromedp.SetValue(chromedp.ID(id), v))
	}
}

// shot saves a screenshot of the page as a laptop shows it, and for the
// README when asked to; the page is then back at phone width.
func (p *browserPage) shot(name string) {
	p.t.Helper()
	p.do(chromedp.EmulateViewport(1100, 800))
	defer p.do(chromedp.EmulateViewport(viewportWidth, viewportHeight))
	png := p.screenshot(name)
	if os.Getenv("PAYWATCH_UPDATE_SCREENSHOTS") == "1" {
		require.NoError(p.t, os.MkdirAll("../../docs/screenshots", 0o755))
		require.NoError(p.t, os.WriteFile("../../docs/screenshots/"+name+".png", png, 0o644))
	}
}

func TestBrowserDashboard(t *testing.T) {
	browser := newBrowser(t)
	sink := newMailSink(t)
	hooks := &hookReceiver{}
	receiver := httptest.NewServer(hooks)
	t.Cleanup(receiver.Close)
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 0
	cfg.SMTPURL = "smtp://" + sink.addr
	// Real ports, so the pages and e-mails show the addresses a browser
	// uses (the screenshots go in the README).
	cfg.APIAddr, cfg.PayAddr = freeAddr(t), freeAddr(t)
	cfg.BaseURL, cfg.PayURL = "http://"+cfg.APIAddr, "http://"+cfg.PayAddr
	m, out := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	payBase := "http://" + m.PayAddr()
	devnet := devnetCLI(base)
	dir := artifactDir(t)
	const email, password = "mia@shop.test", "a long dashboard password"

	p := newBrowserPage(t, browser, base, dir)

	// 1-2. Register, and confirm the address from the e-mail (with the
	// password chosen at registration).
	p.open("/dashboard/register")
	p.fitsPhone()
	p.fill(map[string]string{"email": email, "password": password})
	assert.EqualValues(t, http.StatusOK, p.submit("#register-form button[type=submit]"))
	assert.Contains(t, p.text("main"), "confirmation link is on its way")
	p.open(mailLink(t, sink.wait(t, email, "Confirm")))
	p.fill(map[string]string{"password": password})
	assert.EqualValues(t, http.StatusOK, p.submit("#confirm-form button[type=submit]"))
	assert.Contains(t, p.text("main"), "Your address is confirmed")

	// 3. Sign in, and turn on two factors with a code computed here.
	p.fill(map[string]string{"email": email, "password": password})
	assert.EqualValues(t, http.StatusOK, p.submit("#login-form button[type=submit]"))
	p.open("/dashboard/security")
	assert.EqualValues(t, http.StatusOK, p.submit("#totp-begin button[type=submit]"))
	secret := p.text("#totp-secret")
	require.Regexp(t, `^[A-Z2-7]{16,}$`, secret)
	p.shot("dashboard-two-factor")
	code, err := totp.GenerateCode(secret, time.Now())
	require.NoError(t, err)
	p.fill(map[string]string{"code": code})
	assert.EqualValues(t, http.StatusOK, p.submit("#totp-enable button[type=submit]"))
	assert.Equal(t, 10, evalJS[int](p, `document.querySelectorAll('#recovery-codes li').length`))

	// 4. Sign out, and sign in with the password and a code (the next
	// 30-second step's: a code is good once).
	p.open("/dashboard")
	p.submit("form[action='/dashboard/logout'] button")
	p.open("/dashboard/login")
	p.fill(map[string]string{"email": email, "password": password})
	p.submit("#login-form button[type=submit]")
	require.Equal(t, "/dashboard/login/code", evalJS[string](p, `location.pathname`))
	code, err = totp.GenerateCode(secret, time.Now().Add(30*time.Second))
	require.NoError(t, err)
	p.fill(map[string]string{"code": code})
	assert.EqualValues(t, http.StatusOK, p.submit("#code-form button[type=submit]"))
	require.Equal(t, "/dashboard", evalJS[string](p, `location.pathname`))

	// 5. A project with a webhook URL, and a wallet whose first addresses
	// are previewed before it is saved.
	p.open("/dashboard/projects/new")
	p.fill(map[string]string{"slug": "mias-shop", "name": "Mia's shop", "webhook_url": receiver.URL + "/hook"})
	assert.EqualValues(t, http.StatusOK, p.submit("#project-form button[type=submit]"))
	assert.Regexp(t, `^pk_live_`, evalJS[string](p, `document.getElementById('api-key').value`))
	// The keys page came after a redirect: a reload shows the keys no
	// more, and creates nothing.
	p.do(chromedp.Reload())
	assert.Contains(t, p.text("main"), "Secrets are shown once")
	// Changing where payments go needs a protection key, which a new
	// account sets on the wallet form itself, with its password.
	p.open("/dashboard/p/mias-shop/wallet")
	p.fill(map[string]string{"xpub_evm": accountXPub(t, 60), "xpub_tron": accountXPub(t, 195)})
	p.submit("#wallet-form button[value=preview]")
	assert.Regexp(t, `0x[0-9a-fA-F]{40}`, p.text("main"))
	p.fill(map[string]string{"wallet_password": "not the password", "wallet_new_key": "my protection key"})
	assert.EqualValues(t, http.StatusForbidden, p.submit("#wallet-form button[value=save]"))
	assert.Equal(t, accountXPub(t, 60), evalJS[string](p, `document.getElementById('xpub_evm').value`), "the form is kept")
	p.fill(map[string]string{"wallet_password": password, "wallet_new_key": "my protection key"})
	assert.EqualValues(t, http.StatusOK, p.submit("#wallet-form button[value=save]"))
	assert.Contains(t, p.text("main"), "Wallet saved.")
	p.shot("dashboard-wallet")

	// 6. A payment link, paid by a buyer with a devnet transfer.
	p.open("/dashboard/p/mias-shop/links")
	p.fill(map[string]string{"slug": "mia-tee", "title": "Mia's T-shirt", "amount": "12.5"})
	p.do(chromedp.SetValue(chromedp.CSS(`#link-form select[name=token]`), "USDT"))
	p.do(chromedp.SetValue(chromedp.CSS(`#link-form select[name=network]`), "TRC20"))
	assert.EqualValues(t, http.StatusOK, p.submit("#link-form button[type=submit]"))
	assert.Contains(t, p.text("main"), payBase+"/l/mia-tee")
	p.shot("dashboard-links")

	buyer := newBrowserPage(t, browser, payBase, dir)
	buyer.open("/l/mia-tee")
	buyer.do(chromedp.SendKeys(chromedp.ID("email"), "buyer@example.com"))
	assert.EqualValues(t, http.StatusOK, buyer.submit("#link-submit"))
	paymentID := evalJS[string](buyer, `location.pathname.slice(1)`)
	buyer.waitFor("the address", `/^T[1-9A-HJ-NP-Za-km-z]{33}$/.test(document.getElementById('address').textContent)`, 15*time.Second)
	address := buyer.text("#address")

	// 7. The payment's page in the dashboard turns paid by itself.
	p.open("/dashboard/p/mias-shop/payments/" + paymentID)
	evalJS[bool](p, `window.__sameDocument = true`)
	evalJS[bool](p, watchCSP)
	assert.Contains(t, p.text(`[data-live="status"]`), "pending")
	code2, _, errOut := devnet("send", "--network", "TRC20", "--token", "USDT", "--to", address, "--amount", "12.5")
	require.Equal(t, 0, code2, errOut)
	code2, _, errOut = devnet("blocks", "--network", "TRC20", "--count", "20")
	require.Equal(t, 0, code2, errOut)
	p.waitFor("the paid status", `document.querySelector('[data-live="status"]').textContent.includes('paid')`, 60*time.Second)
	assert.True(t, evalJS[bool](p, `window.__sameDocument === true`), "the status changes without a reload")
	assert.Empty(t, evalJS[[]string](p, `window.__csp`), "no Content-Security-Policy violation")
	require.Eventually(t, func() bool { return hooks.count("payment.completed") == 1 }, 30*time.Second, 200*time.Millisecond, out.String())

	// 8. The delivery is listed; "send again" delivers it once more.
	p.open("/dashboard/p/mias-shop/payments/" + paymentID)
	assert.Contains(t, p.text("main"), "payment.completed")
	p.shot("dashboard-payment")
	p.submit(`form[action*="/redeliver"] button`)
	require.Eventually(t, func() bool { return hooks.count("payment.completed") == 2 }, 30*time.Second, 200*time.Millisecond)

	// The link's row leads to its payments.
	p.open("/dashboard/p/mias-shop/links")
	assert.Contains(t, p.text("main"), "1 / 1")
	p.submit(`a[href*="payments?link="]`)
	assert.Contains(t, p.text("main"), paymentID[:8])
	assert.Contains(t, p.text("#link-filter"), "one payment link")

	p.open("/dashboard/p/mias-shop/payments")
	assert.Contains(t, p.text("main"), "paid")
	p.fitsPhone()
	p.shot("dashboard-payments")

	// Unmatched funds: the only transfer was the payment's, so the page is
	// empty and the navigation shows no count.
	p.open("/dashboard/p/mias-shop/unmatched")
	assert.Equal(t, "Unmatched funds", p.text("main h1"))
	assert.Contains(t, p.text("#unmatched-empty"), "No unmatched funds waiting to be handled.")
	assert.False(t, p.visible("#unmatched-count"))
	p.fitsPhone()

	// 9. Key regeneration needs the protection key and e-mails an alert.
	p.open("/dashboard/p/mias-shop/keys")
	p.fill(map[string]string{"protection_key": "my protection key"})
	assert.EqualValues(t, http.StatusOK, p.submit("#keys-form button[type=submit]"))
	assert.Regexp(t, `^pk_live_`, evalJS[string](p, `document.getElementById('api-key').value`))
	alert := sink.wait(t, email, "Security alert")
	assert.Contains(t, alert.Text, "mias-shop")

	// 10. A viewer sees the payments and none of the owner's actions.
	p.open("/dashboard/p/mias-shop/viewers")
	p.fill(map[string]string{"email": "vic@shop.test"})
	p.submit("#invite-form button[type=submit]")
	invite := mailLink(t, sink.wait(t, "vic@shop.test", "invited"))

	viewerBrowser := newBrowser(t)
	v := newBrowserPage(t, viewerBrowser, base, dir)
	v.open(invite)
	assert.Contains(t, v.text("#invite-what"), "mia@shop.test invited vic@shop.test to view the payments of the project Mia's shop")
	v.fill(map[string]string{"password": "the viewer's password"})
	v.submit("#invite-form button[type=submit]")
	// Signed in on acceptance, on the project's payments; home offers a
	// viewer only what a viewer can use.
	assert.Equal(t, "/dashboard/p/mias-shop/payments", evalJS[string](v, `location.pathname`))
	assert.Contains(t, v.text("main"), paymentID[:8])
	v.open("/dashboard")
	assert.Contains(t, v.text("main"), "Mia's shop")
	assert.Zero(t, evalJS[int](v, `document.querySelectorAll('#new-project, #usage, #project-limit').length`))
	v.open("/dashboard/p/mias-shop/payments/" + paymentID)
	assert.Contains(t, v.text(`[data-live="status"]`), "paid")
	assert.Zero(t, evalJS[int](v, `document.querySelectorAll('form[action*="/recheck"], form[action*="/redeliver"]').length`))
	assert.Zero(t, evalJS[int](v, `document.querySelectorAll('a[href$="/settings"], a[href$="/wallet"], a[href$="/keys"]').length`))
	v.shot("dashboard-viewer")
	for _, path := range []string{"/settings", "/wallet", "/links", "/keys", "/viewers"} {
		v.open("/dashboard/p/mias-shop" + path)
		assert.Contains(t, v.text("main"), "Only the project's owner can do this.", path)
	}
}
