package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// The hosted pages in a real headless Chromium (Debian's chromium package),
// driven over the DevTools protocol, against the whole service of `paywatch
// dev`: the customer chooses a network on the page, `paywatch devnet send`
// pays the address on a devnet chain, the scanner sees the transfer, the
// payment workflow counts its confirmations, and the open page turns paid
// without a reload.
//
// Run them with `go test -run Browser ./cmd/paywatch/`. Screenshots of every
// state go to $PAYWATCH_ARTIFACTS/browser (default: the test's temporary
// directory); with PAYWATCH_UPDATE_SCREENSHOTS=1 the page with its address
// and QR code is also written to docs/screenshots/payment-page.png for the
// README.

// chromiumPath is where Debian's chromium package puts the browser.
const chromiumPath = "/usr/bin/chromium"

// viewport is a small phone: the pages must work 360 px wide.
const viewportWidth, viewportHeight = 360, 780

// newBrowser starts a headless Chromium for the test. Without the browser the
// test fails (`make test` installs it when run as root).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing: the browser tests need Debian's chromium package (make test-deps as root, or apt-get install -y chromium)", chromiumPath)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first run starts the browser; it must not carry a timeout.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(viewportWidth, viewportHeight)))
	return ctx
}

// browserPage is one tab of the browser, closed when its test ends.
type browserPage struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
}

func newBrowserPage(t *testing.T, browser context.Context, base, dir string) *browserPage {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	// The first run opens the tab; like the browser's, it must not carry a
	// timeout, which would close the tab when it ends.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(viewportWidth, viewportHeight)))
	return &browserPage{t: t, ctx: ctx, base: base, dir: dir}
}

func (p *browserPage) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 45*time.Second)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, actions...))
}

func (p *browserPage) open(path string) {
	p.t.Helper()
	p.do(chromedp.Navigate(p.base + path))
	p.do(chromedp.WaitReady(chromedp.CSS("body")))
}

// evalJS runs a JavaScript expression in the page and decodes its value.
func evalJS[T any](p *browserPage, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(p.t, err, expr)
	return v
}

// waitFor waits until a JavaScript predicate holds. Evaluation errors (a
// page that is navigating) count as not yet.
func (p *browserPage) waitFor(what, predicate string, within time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+predicate+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("waiting for %s (%s): not within %s (last error: %v)", what, predicate, within, last)
}

// waitState waits until the payment page shows a state.
func (p *browserPage) waitState(state string, within time.Duration) {
	p.t.Helper()
	p.waitFor("state "+state, fmt.Sprintf(`(document.getElementById('payment')||{}).dataset?.state === %q`, state), within)
}

// submit clicks a button that submits a form and waits for the page it
// leads to; it returns that page's HTTP status.
func (p *browserPage) submit(css string) int64 {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(css)))
	require.NoError(p.t, err)
	return resp.Status
}

// text is the visible text of the first element matching a CSS selector.
func (p *browserPage) text(css string) string {
	p.t.Helper()
	return evalJS[string](p, fmt.Sprintf(`(document.querySelector(%q)||{}).innerText || ''`, css))
}

// visible reports whether an element is shown (not hidden, laid out).
func (p *browserPage) visible(css string) bool {
	p.t.Helper()
	return evalJS[bool](p, fmt.Sprintf(`(function(){var e=document.querySelector(%q);return !!e && !e.closest('[hidden]') && e.getClientRects().length>0})()`, css))
}

// fitsPhone asserts the page fits the 360 px viewport.
func (p *browserPage) fitsPhone() {
	p.t.Helper()
	w := evalJS[int](p, `document.documentElement.scrollWidth`)
	assert.LessOrEqual(p.t, w, viewportWidth, "the page must fit 360 px without scrolling sideways")
}

// screenshot saves the whole page as a PNG artifact.
func (p *browserPage) screenshot(name string) []byte {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(p.t, err)
	require.NoError(p.t, os.WriteFile(filepath.Join(p.dir, name+".png"), png, 0o644))
	return png
}

// artifactDir is where the screenshots go.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("PAYWATCH_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "browser")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// watchCSP records Content-Security-Policy violations of the page.
const watchCSP = `window.__csp = []; document.addEventListener('securitypolicyviolation', function (e) { window.__csp.push(e.violatedDirective + ' ' + e.blockedURI); }); true`

func TestBrowserHostedPages(t *testing.T) {
	browser := newBrowser(t)
	cfg := devConfig(t, t.TempDir())
	// Devnet chains make blocks only when a transfer is sent or blocks are
	// mined on request, so the test decides when confirmations arrive.
	cfg.DevnetBlockInterval = 0
	m, out := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	payBase := "http://" + m.PayAddr()
	c := apiClient{t: t, base: base}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	devnet := devnetCLI(base)

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@merchant.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Shop", "slug": "shop", "owner_email": "ops@merchant.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{
		"xpubs": map[string]any{"evm": accountXPub(t, 60), "tron": accountXPub(t, 195)},
	})
	require.Equal(t, http.StatusOK, code, body)
	code, body = c.do("POST", "/v1/projects/shop/payment-links", master, map[string]any{
		"slug": "tip-jar", "title": "Tip jar for the coffee club", "amount": nil, "token": "USDT",
	})
	require.Equal(t, http.StatusCreated, code, body)

	create := func(req map[string]any) string {
		t.Helper()
		code, body := c.do("POST", "/v1/payments", merchant, req)
		require.Equal(t, http.StatusCreated, code, body)
		return body["payment"].(map[string]any)["id"].(string)
	}
	payment := func(id string) map[string]any {
		t.Helper()
		code, body := c.do("GET", "/v1/payments/"+id, merchant, nil)
		require.Equal(t, http.StatusOK, code, body)
		return body["payment"].(map[string]any)
	}
	waitStatus := func(id, status string) map[string]any {
		t.Helper()
		var p map[string]any
		require.Eventually(t, func() bool { p = payment(id); return p["status"] == status },
			45*time.Second, time.Second, "payment %s never became %s\n%s", id, status, out.String())
		return p
	}
	send := func(network, token, to, amount string) {
		t.Helper()
		code, _, errOut := devnet("send", "--network", network, "--token", token, "--to", to, "--amount", amount)
		require.Equal(t, 0, code, errOut)
	}
	mine := func(network string, count int) {
		t.Helper()
		code, _, errOut := devnet("blocks", "--network", network, "--count", fmt.Sprint(count))
		require.Equal(t, 0, code, errOut)
	}
	// backdated creates a payment as if it had been created `ago` in the
	// past (the store's clock), so its window has really run out.
	backdated := func(ago time.Duration) string {
		t.Helper()
		ctx := context.Background()
		past := store.New(m.pool, store.WithClock(func() time.Time { return time.Now().Add(-ago) }))
		prj, err := past.ProjectBySlug(ctx, "shop")
		require.NoError(t, err)
		p, _, err := past.CreatePayment(ctx, store.NewPayment{
			ProjectID: prj.ID, ExternalRef: "late", Network: paywatch.TRC20, Token: paywatch.USDT,
			Amount: paywatch.MustParseAmount("10", 6), ExpiresIn: 300 * time.Second,
		})
		require.NoError(t, err)
		return p.ID
	}

	dir := artifactDir(t)
	t.Logf("screenshots in %s", dir)

	t.Run("network choice, devnet transfer, paid without reload", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		id := create(map[string]any{"amount": 25, "external_ref": "browser", "expires_in": 1800})
		p.open("/" + id)
		evalJS[bool](p, watchCSP)
		p.waitState("choose", 5*time.Second)
		assert.Equal(t, "25.00", p.text(`[data-f="amount"]`))
		assert.Contains(t, p.text("#choose"), "Ethereum (ERC20)")
		assert.False(t, p.visible("#pay"), "no address before a network is chosen")
		assert.True(t, p.visible("#countdown"))
		p.fitsPhone()
		p.screenshot("01-choose-network")

		// A marker that a reload would wipe out.
		evalJS[bool](p, `window.__sameDocument = true`)
		p.do(chromedp.Click(chromedp.CSS(`button[data-pair="ERC20:USDT"]`)))
		p.waitFor("the address", `/^0x[0-9a-fA-F]{40}$/.test(document.getElementById('address').textContent) && !document.getElementById('pay').hidden`, 15*time.Second)
		p.waitFor("the QR code", `document.getElementById('qr').naturalWidth > 0 && document.getElementById('qr').src.startsWith('data:image/png;base64,')`, 5*time.Second)
		address := p.text("#address")
		assert.Equal(t, payment(id)["address"], address)
		assert.True(t, p.visible("#qr"))
		assert.True(t, p.visible("#copy"), "the copy button appears with JavaScript")
		assert.False(t, p.visible("#choose"))
		p.waitFor("the network name", `document.getElementById('network-line').innerText.includes('Ethereum (ERC20)')`, 5*time.Second)
		p.fitsPhone()
		png := p.screenshot("02-address-and-qr")
		if os.Getenv("PAYWATCH_UPDATE_SCREENSHOTS") == "1" {
			require.NoError(t, os.MkdirAll("../../docs/screenshots", 0o755))
			require.NoError(t, os.WriteFile("../../docs/screenshots/payment-page.png", png, 0o644))
		}
		p.do(chromedp.Click(chromedp.ID("copy")))
		p.waitFor("the copy confirmation", `/Copied|Select and copy/.test(document.getElementById('copy').textContent)`, 5*time.Second)
		p.showsShopAndReference("Shop", "", id)

		// A devnet chain has its network's mainnet chain id but its own
		// token contract: a real wallet opening a request would call
		// transfer on the mainnet contract, so the dev page offers none
		// (the request itself is checked in api/pay_wallet_test.go).
		noWalletLink := func(why string) {
			t.Helper()
			assert.False(t, p.visible("#wallet"), why)
			assert.False(t, p.visible("#qr-toggle"), why)
			assert.Empty(t, evalJS[string](p, `document.getElementById('wallet-link').getAttribute('href') || ''`), why)
			assert.False(t, p.visible("#wallet-qr"), why)
		}
		noWalletLink("no wallet link on a devnet chain")
		// A link the page shows goes away, with its QR code, once a status
		// answer comes without one (a transfer confirms, time is up):
		// planted here, since the devnet never offers one.
		require.True(t, evalJS[bool](p, `(function () {
			document.getElementById('wallet-link').setAttribute('href', 'ethereum:0x0000000000000000000000000000000000000001@1/transfer');
			document.getElementById('wallet-qr').setAttribute('src', document.getElementById('qr').getAttribute('src'));
			document.getElementById('pay').setAttribute('data-qr', 'wallet');
			document.getElementById('wallet').hidden = false;
			return true;
		})()`))
		p.waitFor("the planted wallet link withdrawn", `document.getElementById('wallet').hidden &&
			document.getElementById('wallet-link').getAttribute('href') === '' &&
			!document.getElementById('wallet-qr').hasAttribute('src') &&
			document.getElementById('pay').getAttribute('data-qr') === 'address'`, 15*time.Second)
		noWalletLink("withdrawn")
		assert.True(t, p.visible("#qr"), "the address QR code is back")

		// The customer pays on the devnet chain: one block deep it shows
		// as confirming on the page's next refresh; with 12 blocks it is
		// paid, and the open page turns paid by itself.
		send("ERC20", "USDT", address, "25")
		p.waitState("confirming", 30*time.Second)
		assert.Regexp(t, `\d+ of 12`, p.text(`.state[data-state="confirming"]`))
		noWalletLink("none after the page's refreshes either")
		assert.True(t, p.visible("#qr"))
		p.screenshot("03-confirming")
		mine("ERC20", 12)
		p.waitState("paid", 45*time.Second)
		assert.True(t, evalJS[bool](p, `window.__sameDocument === true`), "the page must not reload")
		assert.Contains(t, p.text(`.state[data-state="paid"]`), "25.00 USDT")
		assert.Equal(t, "Payment received", p.text(`.state[data-state="paid"] h2`))
		p.showsShopAndReference("Shop", "", id)
		assert.False(t, p.visible("#pay"), "no address once paid")
		assert.False(t, p.visible("#countdown"))
		p.screenshot("04-paid")
		assert.Equal(t, "paid", payment(id)["status"])
		assert.Empty(t, evalJS[[]string](p, `window.__csp`), "no Content-Security-Policy violation")
	})

	t.Run("payment link to payment page", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		p.open("/l/tip-jar")
		assert.Equal(t, "Pay Shop", p.text("h1"), "the buyer pays the shop")
		assert.Equal(t, "Tip jar for the coffee club", p.text("#item"), "for the link's item")
		assert.True(t, p.visible("#amount"))
		p.fitsPhone()
		p.screenshot("05-link-form")

		// A mistake is shown on the form.
		p.do(chromedp.SetValue(chromedp.ID("amount"), "12.1234567"))
		assert.EqualValues(t, http.StatusBadRequest, p.submit("#link-submit"))
		assert.Equal(t, "Enter an amount with at most 6 decimal places", p.text("#amount-error"))
		p.screenshot("06-link-form-error")

		p.do(chromedp.SetValue(chromedp.ID("amount"), "12.50"))
		p.do(chromedp.SendKeys(chromedp.ID("email"), "buyer@example.com"))
		p.do(chromedp.SendKeys(chromedp.ID("name"), "Ana Lima"))
		p.do(chromedp.SendKeys(chromedp.ID("note"), "For Friday's beans"))
		assert.EqualValues(t, http.StatusOK, p.submit("#link-submit"), "the 303 leads to the payment page")
		loc := evalJS[string](p, `location.pathname`)
		require.Regexp(t, `^/[0-9a-f-]{36}$`, loc)
		p.waitState("choose", 5*time.Second)
		assert.Equal(t, "12.50", p.text(`[data-f="amount"]`))
		assert.Equal(t, 0, evalJS[int](p, `document.querySelectorAll('button[data-pair$=":USDC"]').length`), "the link asks for USDT")
		linkID := strings.TrimPrefix(loc, "/")
		p.showsShopAndReference("Shop", "Tip jar for the coffee club", linkID)
		assert.NotContains(t, p.text("body"), "link:tip-jar", "the link's external_ref is not the buyer's reference")
		p.fitsPhone()
		p.screenshot("07-link-payment")
		got := payment(linkID)
		assert.Equal(t, "12.50", got["amount"])
		assert.Equal(t, "link:tip-jar:buyer@example.com", got["external_ref"])
	})

	t.Run("countdown and expiry", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		countdown := regexp.MustCompile(`^(\d+:)?\d{2}:\d{2}$`)

		// The countdown runs down once a second from the time left.
		id := create(map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20", "expires_in": 600})
		p.open("/" + id)
		first := p.text("#countdown")
		require.Regexp(t, countdown, first)
		assert.True(t, strings.HasPrefix(first, "10:00") || strings.HasPrefix(first, "09:5"), first)
		p.waitFor("the countdown to move", fmt.Sprintf(`document.getElementById('countdown').textContent !== %q`, first), 5*time.Second)
		assert.Less(t, p.text("#countdown"), first)

		// At zero the page says time is up, without a reload.
		soon := backdated(294 * time.Second) // a 300 s window: 6 s left
		p.open("/" + soon)
		p.waitState("pending", 4*time.Second)
		evalJS[bool](p, `window.__sameDocument = true`)
		p.waitState("pending-late", 10*time.Second)
		assert.Equal(t, "00:00", evalJS[string](p, `document.getElementById('countdown').textContent`))
		assert.True(t, evalJS[bool](p, `window.__sameDocument === true`))
		assert.Contains(t, p.text("#states"), "Time is up")
		p.screenshot("08-time-is-up")

		// 3 minutes after expires_at the payment shows as expired, with no
		// address to send to.
		old := backdated(10 * time.Minute)
		p.open("/" + old)
		p.waitState("expired", 5*time.Second)
		assert.Contains(t, p.text("#states"), "Payment expired")
		p.showsShopAndReference("Shop", "", old)
		assert.False(t, p.visible("#pay"))
		assert.False(t, p.visible("#countdown"))
		p.screenshot("09-expired")
	})

	t.Run("without JavaScript", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		p.do(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return chromedp.Void{}, err
		})
		id := create(map[string]any{"amount": 7, "external_ref": "nojs"})
		p.open("/" + id)
		assert.True(t, p.visible(`button[data-pair="TRC20:USDT"]`))
		assert.False(t, p.visible("#copy"), "the copy button needs JavaScript")
		// The choice is a plain form post, redirected back to the page.
		assert.EqualValues(t, http.StatusOK, p.submit(`button[data-pair="TRC20:USDT"]`))
		assert.Equal(t, "/"+id, evalJS[string](p, `location.pathname`))
		assert.Equal(t, payment(id)["address"], p.text("#address"))
		assert.True(t, p.visible("#qr"))
		p.screenshot("10-without-javascript")
	})

	t.Run("partial, overpaid, cancelled and the 404 page", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		partial := create(map[string]any{"amount": 30, "external_ref": "u", "network": "BEP20"})
		overpaid := create(map[string]any{"amount": 10, "external_ref": "u", "network": "BEP20"})
		cancelled := create(map[string]any{"amount": 10, "external_ref": "u", "network": "BEP20"})
		send("BEP20", "USDT", payment(partial)["address"].(string), "10")
		send("BEP20", "USDT", payment(overpaid)["address"].(string), "15")
		mine("BEP20", 15)
		code, body := c.do("PATCH", "/v1/payments/"+cancelled, merchant, map[string]any{"status": "cancelled"})
		require.Equal(t, http.StatusOK, code, body)
		waitStatus(partial, "partial")
		waitStatus(overpaid, "overpaid")

		p.open("/" + partial)
		p.waitState("partial", 5*time.Second)
		assert.Contains(t, p.text("#states"), "Still missing: 20.00 USDT")
		p.showsShopAndReference("Shop", "", partial)
		assert.True(t, p.visible("#address"), "the rest goes to the same address")
		p.screenshot("11-partial")
		p.open("/" + overpaid)
		p.waitState("overpaid", 5*time.Second)
		assert.Contains(t, p.text("#states"), "15.00 USDT")
		p.showsShopAndReference("Shop", "", overpaid)
		p.screenshot("12-overpaid")
		p.open("/" + cancelled)
		p.waitState("cancelled", 5*time.Second)
		assert.False(t, p.visible("#pay"))
		p.showsShopAndReference("Shop", "", cancelled)
		p.screenshot("13-cancelled")
		p.open("/not-a-payment")
		assert.Equal(t, "Not found", p.text("h1"))
		p.screenshot("14-not-found")
	})
}
