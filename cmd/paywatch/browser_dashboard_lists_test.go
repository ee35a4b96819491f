package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The payment list and a payment's page in Chromium, on a 360 px phone in
// Tokyo (issue 28, items 3, 5, 9 and 10): the list updates itself (a new
// payment appears, a cancelled and a paid one change) without a reload;
// a link payment shows the link's title and the buyer; the rows are cards
// whose status, amount, delivery state and "Send again" are on screen; the
// filters are folded; dates are in the viewer's time zone with the UTC
// value on hover.

// ownerFromOperator creates, through the operator API, an account with a
// project (its webhooks going to hookURL) and an HD wallet, and signs the
// account in in p with the password it sets from the dev outbox's e-mail.
// It returns the project's API key.
func ownerFromOperator(t *testing.T, p *browserPage, c apiClient, master map[string]string, email, slug, hookURL string) string {
	t.Helper()
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": email, "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Lee's shop", "slug": slug, "owner_email": email, "webhook_url": hookURL})
	require.Equal(t, http.StatusCreated, code, body)
	key := body["api_key"].(string)
	code, body = c.do("PUT", "/v1/projects/"+slug+"/wallet", master, map[string]any{"xpubs": map[string]any{"evm": accountXPub(t, 60), "tron": accountXPub(t, 195)}})
	require.Equal(t, http.StatusOK, code, body)

	var set string
	require.Eventually(t, func() bool {
		_, outbox := c.do("GET", "/dev/mail", nil, nil)
		ms, _ := outbox["messages"].([]any)
		for _, m := range ms {
			m := m.(map[string]any)
			if m["to"] == email && strings.Contains(m["subject"].(string), "password") {
				set = linkIn.FindString(m["text"].(string))
			}
		}
		return set != ""
	}, 30*time.Second, 200*time.Millisecond)
	const password = "a long dashboard password"
	p.open(set)
	p.fill(map[string]string{"password": password})
	require.EqualValues(t, http.StatusOK, p.submit("#reset-form button[type=submit]"))
	p.open("/dashboard/login")
	p.fill(map[string]string{"email": email, "password": password})
	require.EqualValues(t, http.StatusOK, p.submit("#login-form button[type=submit]"))
	return key
}

// onScreen reports whether the element is laid out inside the phone's
// width, and not cut off by a box that scrolls or clips.
func (p *browserPage) onScreen(css string) bool {
	p.t.Helper()
	return evalJS[bool](p, fmt.Sprintf(`(function(){
		var e = document.querySelector(%q); if (!e) return false;
		var r = e.getBoundingClientRect();
		if (r.width === 0 || r.left < 0 || r.right > window.innerWidth) return false;
		for (var a = e.parentElement; a && a !== document.body; a = a.parentElement) {
			var s = getComputedStyle(a);
			if (s.overflowX !== 'visible') {
				var b = a.getBoundingClientRect();
				if (r.left < b.left || r.right > b.right) return false;
			}
		}
		return true })()`, css))
}

func TestBrowserDashboardLists(t *testing.T) {
	browser := newBrowser(t)
	hooks := &hookReceiver{}
	receiver := httptest.NewServer(hooks)
	t.Cleanup(receiver.Close)
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 0
	m, out := startMain(t, cfg, nil)
	base, payBase := "http://"+m.APIAddr(), "http://"+m.PayAddr()
	devnet := devnetCLI(base)
	c := apiClient{t: t, base: base, patient: true}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	p := newBrowserPage(t, browser, base, artifactDir(t))
	p.do(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return chromedp.Void{}, err
	})
	key := ownerFromOperator(t, p, c, master, "lee@shop.test", "lees-shop", receiver.URL+"/hook")
	merchant := map[string]string{"x-api-key": key}
	create := func(ref string) (string, string) {
		t.Helper()
		code, body := c.do("POST", "/v1/payments", merchant, map[string]any{"amount": json.Number("7.5"), "external_ref": ref, "network": "TRC20", "token": "USDT"})
		require.Equal(t, http.StatusCreated, code, body)
		pay := body["payment"].(map[string]any)
		return pay["id"].(string), pay["address"].(string)
	}

	// A buyer pays through a link with a name, an e-mail and a note.
	code, body := c.do("POST", "/v1/projects/lees-shop/payment-links", master, map[string]any{"slug": "lee-mug", "title": "Lee's <mug>", "amount": 9, "token": "USDT", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, code, body)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(payBase+"/l/lee-mug", url.Values{"email": {"ana@buyer.test"}, "name": {"Ana Lima"}, "note": {"Gift wrap, please"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	linkPayment := strings.TrimPrefix(resp.Header.Get("Location"), "/")
	toCancel, _ := create("order-1")
	toPay, address := create("order-2")

	// The list at 360 px in Tokyo: cards, folded filters, local dates.
	p.open("/dashboard/p/lees-shop/payments")
	evalJS[bool](p, `window.__sameDocument = true`)
	evalJS[bool](p, watchCSP)
	p.fitsPhone()
	assert.False(t, evalJS[bool](p, `document.getElementById('filters').open`), "the filters are folded on a phone")
	assert.False(t, evalJS[bool](p, `document.getElementById('filter-form').checkVisibility()`))
	assert.Regexp(t, `^Filters:\s+none$`, p.text("#filters summary"))
	marker := `getComputedStyle(document.querySelector('#filters summary'), '::before')`
	assert.Equal(t, "8px", evalJS[string](p, marker+`.borderLeftWidth`), "the folded filters show a disclosure triangle")
	assert.Equal(t, "none", evalJS[string](p, marker+`.transform`), "pointing right while folded")
	assert.Equal(t, "Created after (UTC)", evalJS[string](p, `document.querySelector('label[for=created_after]').textContent`), "the date filters say they count UTC days")
	assert.Less(t, evalJS[float64](p, `document.querySelector('#payments tbody tr').getBoundingClientRect().top`), float64(viewportHeight), "the first payment is on the first screen")
	row := func(id string) string { return fmt.Sprintf(`#payments tr[data-id=%q]`, id) }
	for _, cell := range []string{"td[data-label=Status] .badge", "td[data-label=Amount]", "td[data-label=Received]"} {
		assert.True(t, p.onScreen(row(toPay)+" "+cell), cell)
	}
	linkRow := p.text(row(linkPayment) + " td[data-label=Customer]")
	assert.Contains(t, linkRow, "Lee's <mug>")
	assert.Contains(t, linkRow, "Ana Lima")
	assert.Contains(t, linkRow, "ana@buyer.test")
	assert.NotContains(t, linkRow, "link:lee-mug")

	// Dates: the viewer's time zone (Tokyo, UTC+9), the UTC value on hover.
	tm := row(toPay) + " time"
	at, err := time.Parse(time.RFC3339, evalJS[string](p, `document.querySelector('`+tm+`').getAttribute('datetime')`))
	require.NoError(t, err)
	tokyo := time.FixedZone("JST", 9*3600)
	assert.Equal(t, at.In(tokyo).Format("2 Jan 2006, 15:04"), p.text(tm))
	assert.Equal(t, at.UTC().Format("2006-01-02 15:04:05 UTC"), evalJS[string](p, `document.querySelector('`+tm+`').title`))
	p.screenshot("dashboard-lists-phone")

	// The first poll sends the page's ETag and, the list being as shown,
	// leaves it alone: the same table, the focus where it was.
	evalJS[bool](p, `(function () {
		window.__polls = [];
		var f = window.fetch;
		window.fetch = function (u, o) {
			var poll = { url: String(u), etag: ((o && o.headers) || {})['If-None-Match'] || '' };
			window.__polls.push(poll);
			return f.apply(this, arguments).then(function (r) { poll.status = r.status; return r; });
		};
		document.getElementById('payments').__shown = true;
		document.querySelector('#payments a').focus();
		return true })()`)
	p.waitFor("the first poll", `window.__polls.length > 0 && window.__polls[0].status`, 15*time.Second)
	assert.Equal(t, evalJS[string](p, `document.getElementById('payments-live').getAttribute('data-etag')`), evalJS[string](p, `window.__polls[0].etag`))
	assert.EqualValues(t, http.StatusNotModified, evalJS[float64](p, `window.__polls[0].status`))
	assert.True(t, evalJS[bool](p, `document.getElementById('payments').__shown === true`), "the table is not replaced by an unchanged one")
	assert.True(t, evalJS[bool](p, `document.activeElement === document.querySelector('#payments a')`), "the focus stays")
	assert.Contains(t, p.text("[data-live=checked]"), "Updated")

	// Live: a new payment appears, a cancelled one and a paid one change.
	fresh, _ := create("order-3")
	code, body = c.do("PATCH", "/v1/payments/"+toCancel, merchant, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, code, body)
	changed := func(id string) bool {
		return evalJS[bool](p, `document.querySelector('`+row(id)+`').classList.contains('changed')`)
	}
	p.waitFor("the new payment", `document.querySelector('`+row(fresh)+`')`, 30*time.Second)
	assert.True(t, changed(fresh), "the new row is marked")
	freshAt, err := time.Parse(time.RFC3339, evalJS[string](p, `document.querySelector('`+row(fresh)+` time').getAttribute('datetime')`))
	require.NoError(t, err)
	assert.Equal(t, freshAt.In(tokyo).Format("2 Jan 2006, 15:04"), p.text(row(fresh)+" time"), "new rows get local dates too")
	p.waitFor("the cancelled status", `document.querySelector('`+row(toCancel)+` .badge').textContent === 'cancelled'`, 30*time.Second)
	assert.True(t, changed(toCancel), "the cancelled row is marked")
	code, _, errOut := devnet("send", "--network", "TRC20", "--token", "USDT", "--to", address, "--amount", "7.5")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = devnet("blocks", "--network", "TRC20", "--count", "20")
	require.Equal(t, 0, code, errOut)
	p.waitFor("the paid status", `document.querySelector('`+row(toPay)+` .badge').textContent === 'paid'`, 60*time.Second)
	assert.True(t, changed(toPay), "the paid row is marked")
	assert.Equal(t, "7.50 USDT", p.text(row(toPay)+" td[data-label=Received]"), "the amount received, with its token")
	assert.Contains(t, p.text("#payments-total"), "4 payments")
	assert.True(t, evalJS[bool](p, `window.__sameDocument === true`), "the list changes without a reload")
	assert.Empty(t, evalJS[[]string](p, `window.__csp`), "no Content-Security-Policy violation")
	assert.Equal(t, at.In(tokyo).Format("2 Jan 2006, 15:04"), p.text(tm), "replaced rows keep local dates")
	p.fitsPhone()

	// The paid payment's page: its delivery's state and "Send again" are
	// on screen; a delivery of the link payment is not needed for that.
	require.Eventually(t, func() bool { return hooks.count("payment.completed") == 1 }, 30*time.Second, 200*time.Millisecond, out.String())
	p.open("/dashboard/p/lees-shop/payments/" + toPay)
	p.fitsPhone()
	assert.True(t, p.onScreen("#deliveries td[data-label=State] .badge"), "the delivery's state")
	assert.True(t, p.onScreen("#deliveries .redeliver button"), `"Send again"`)
	assert.Contains(t, p.text("#deliveries td[data-label=State]"), "delivered")
	p.screenshot("dashboard-payment-phone")

	// The link payment's page names the link and the buyer.
	p.open("/dashboard/p/lees-shop/payments/" + linkPayment)
	assert.Contains(t, p.text("#payment-link"), "Lee's <mug>")
	assert.Equal(t, "Ana Lima", p.text("#buyer-name"))
	assert.Equal(t, "mailto:ana@buyer.test", evalJS[string](p, `document.querySelector('#buyer-email a').getAttribute('href')`))
	assert.Equal(t, "Gift wrap, please", p.text("#buyer-note"))
	p.fitsPhone()

	// On a laptop the filters open by themselves.
	p.do(chromedp.EmulateViewport(1100, 800))
	p.open("/dashboard/p/lees-shop/payments?status=paid")
	assert.True(t, evalJS[bool](p, `document.getElementById('filters').open && document.getElementById('filter-form').checkVisibility()`))
	assert.Contains(t, p.text("#filters summary"), "paid")
	p.waitFor("the triangle pointing down", marker+`.transform !== 'none'`, 5*time.Second)
	p.screenshot("dashboard-lists-laptop")
	p.do(chromedp.EmulateViewport(viewportWidth, viewportHeight))
}
