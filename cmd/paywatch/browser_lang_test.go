package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/locale"
)

// The hosted pages in every language, in Chromium, at 360 px and at
// 1280 px (issue 29): no message id shows instead of a text, nothing
// scrolls sideways or is cut, the page's language and direction are set
// (Arabic right to left, with the address left to right inside it), the
// strict CSP holds, the switcher keeps a choice in a cookie, and
// Accept-Language chooses when nothing else does. With
// PAYWATCH_UPDATE_SCREENSHOTS=1 three languages' pages are written to
// docs/screenshots/ for the README.
func TestBrowserHostedPagesInEveryLanguage(t *testing.T) {
	browser := newBrowser(t)
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 0
	// Each language's pages come from an address of their own (through a
	// trusted local proxy's X-Forwarded-For): the 72 pages would pass the
	// 30-a-minute limit of one visitor.
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	m, _ := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	payBase := "http://" + m.PayAddr()
	c := apiClient{t: t, base: base}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@lang.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Kiosk", "slug": "kiosk", "owner_email": "ops@lang.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PUT", "/v1/projects/kiosk/wallet", master, map[string]any{
		"xpubs": map[string]any{"evm": accountXPub(t, 60), "tron": accountXPub(t, 195)},
	})
	require.Equal(t, http.StatusOK, code, body)
	code, body = c.do("POST", "/v1/projects/kiosk/payment-links", master, map[string]any{
		"slug": "tea", "title": "Green tea", "amount": nil, "token": "USDT",
	})
	require.Equal(t, http.StatusCreated, code, body)
	create := func(req map[string]any) string {
		t.Helper()
		code, body := c.do("POST", "/v1/payments", merchant, req)
		require.Equal(t, http.StatusCreated, code, body)
		return body["payment"].(map[string]any)["id"].(string)
	}
	withAddress := create(map[string]any{"amount": json.Number("1234.5"), "external_ref": "a", "network": "TRC20", "token": "USDT"})
	choosing := create(map[string]any{"amount": json.Number("25.50"), "external_ref": "b"})

	// Every message id of the catalogue, to find one shown as is.
	raw, err := os.ReadFile("../../locale/catalogue/active.en.json")
	require.NoError(t, err)
	var ids map[string]any
	require.NoError(t, json.Unmarshal(raw, &ids))
	idList := make([]string, 0, len(ids))
	for id := range ids {
		idList = append(idList, id)
	}
	idsJSON, _ := json.Marshal(idList)

	p := newBrowserPage(t, browser, payBase, artifactDir(t))
	check := func(lang locale.Lang, path string, width int) {
		t.Helper()
		p.do(chromedp.EmulateViewport(int64(width), viewportHeight))
		p.open(path + "?lang=" + string(lang))
		evalJS[bool](p, watchCSP)
		where := fmt.Sprintf("%s %s at %d px", lang, path, width)
		assert.Equal(t, string(lang), evalJS[string](p, `document.documentElement.lang`), where)
		assert.Equal(t, lang.Dir(), evalJS[string](p, `document.documentElement.dir`), where)
		shown := evalJS[[]string](p, fmt.Sprintf(`(function(ids){var t=document.body.innerText+' '+document.title;return ids.filter(function(i){return t.indexOf(i)>=0})})(%s)`, idsJSON))
		assert.Empty(t, shown, "%s: message ids shown instead of texts", where)
		assert.LessOrEqual(t, evalJS[int](p, `document.documentElement.scrollWidth`), width, "%s scrolls sideways", where)
		// Nothing cut: no element's text overflows its box.
		cut := evalJS[[]string](p, `Array.prototype.filter.call(document.querySelectorAll('main *, footer *'), function(e){
			if (e.closest('[hidden]') || !e.getClientRects().length) return false;
			var s = getComputedStyle(e);
			return (s.overflowX === 'hidden' || s.textOverflow === 'ellipsis') && e.scrollWidth > e.clientWidth + 1;
		}).map(function(e){ return e.tagName + '#' + e.id + '.' + e.className })`)
		assert.Empty(t, cut, "%s: text cut", where)
		if path == "/"+withAddress {
			require.True(t, evalJS[bool](p, `!!document.getElementById('address')`), "%s: %s", where, p.text("body"))
			assert.Equal(t, "ltr", evalJS[string](p, `getComputedStyle(document.getElementById('address')).direction`), "%s: the address reads left to right", where)
		}
		assert.Empty(t, evalJS[[]string](p, `window.__csp`), "%s: CSP violations", where)
	}
	for i, lang := range locale.Languages() {
		forwardedFor(p, fmt.Sprintf("198.51.100.%d", i+1))
		for _, width := range []int{viewportWidth, 1280} {
			check(lang, "/"+withAddress, width)
			check(lang, "/"+choosing, width)
			check(lang, "/l/tea", width)
		}
	}
	p.do(chromedp.EmulateViewport(viewportWidth, viewportHeight))
	forwardedFor(p, "198.51.100.100")

	// Amounts keep every digit, in the language's separators.
	p.open("/" + withAddress + "?lang=de")
	assert.Equal(t, "1234,50", p.text(`.big [data-f="amount"]`))
	// The choice is kept: the next page, without ?lang, is still German.
	p.open("/" + choosing)
	assert.Equal(t, "de", evalJS[string](p, `document.documentElement.lang`))
	// The switcher is a link per language.
	p.do(chromedp.Click(chromedp.CSS(`a[hreflang="es"]`)))
	p.waitFor("Spanish", `document.documentElement.lang === 'es'`, 10*time.Second)

	// Accept-Language chooses for a buyer who chose nothing.
	req, err := http.NewRequest(http.MethodGet, payBase+"/"+choosing, nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Language", "tr-TR,tr;q=0.9,en;q=0.5")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(page), `<html lang="tr" dir="ltr">`)

	if os.Getenv("PAYWATCH_UPDATE_SCREENSHOTS") == "1" {
		for _, lang := range []locale.Lang{"es", "zh-Hans", "ar"} {
			p.open("/" + withAddress + "?lang=" + string(lang))
			png := p.screenshot("payment-page-" + string(lang))
			require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "screenshots", "payment-page-"+string(lang)+".png"), png, 0o644))
		}
	}
}

// forwardedFor makes the page's requests name ip as the visitor, as a
// trusted proxy in front of paywatch would.
func forwardedFor(p *browserPage, ip string) {
	p.t.Helper()
	p.do(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-For": ip}})
		return chromedp.Void{}, err
	})
}
