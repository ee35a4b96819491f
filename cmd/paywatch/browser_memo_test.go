package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hosted page of memo payments (issues 40 and 41) in a real headless
// Chromium, against the whole service of `paywatch dev`: a per_payment
// project whose wallet registers a TON and a SOLANA address. A TON USDT
// payment's page shows its comment with a copy button and the warning
// that a transfer without it will not be credited, in the page's
// language; its "Open in wallet" link is the TON transfer link carrying
// the devnet's jetton master, the amount in base units and the comment.
// A buyer choosing the network on the page gets the comment's words for
// TON and the reference's for SOLANA. A devnet transfer with the comment
// turns the open page paid without a reload.
func TestBrowserMemoPages(t *testing.T) {
	browser := newBrowser(t)
	cfg := devConfig(t, t.TempDir())
	// A devnet transfer makes its own block; TON's is final at once.
	cfg.DevnetBlockInterval = 0
	m, out := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	payBase := "http://" + m.PayAddr()
	c := apiClient{t: t, base: base}
	master := map[string]string{"x-master-key": m.Config.MasterKey}

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@memo.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Memo Shop", "slug": "memoshop", "owner_email": "ops@memo.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PATCH", "/v1/projects/memoshop", master, map[string]any{"address_mode": "per_payment"})
	require.Equal(t, http.StatusOK, code, body)
	tonWallet, solWallet := newTONWallet(t), sol.NewWallet().PublicKey().String()
	code, body = c.do("PUT", "/v1/projects/memoshop/wallet", master, map[string]any{
		"addresses": map[string]any{"TON": []string{tonWallet}, "SOLANA": []string{solWallet}},
	})
	require.Equal(t, http.StatusOK, code, body)

	// The devnet's USDT jetton master, which its scanner watches.
	code, body = c.do("GET", "/devnet", nil, nil)
	require.Equal(t, http.StatusOK, code, body)
	var jetton string
	for _, n := range body["networks"].([]any) {
		if n := n.(map[string]any); n["network"] == "TON" {
			jetton, _ = n["tokens"].(map[string]any)["USDT"].(string)
		}
	}
	require.NotEmpty(t, jetton, "the devnet runs TON with USDT: %v", body)

	en, ru := catalogue(t, "en"), catalogue(t, "ru")
	for _, k := range []string{"pay.comment", "pay.comment_warning", "pay.copy", "pay.open_wallet"} {
		require.NotEqual(t, en[k], ru[k], "%s is translated", k)
	}

	create := func(req map[string]any) map[string]any {
		t.Helper()
		code, body := c.do("POST", "/v1/payments", merchant, req)
		require.Equal(t, http.StatusCreated, code, body)
		return body["payment"].(map[string]any)
	}
	payment := func(id string) map[string]any {
		t.Helper()
		code, body := c.do("GET", "/v1/payments/"+id, merchant, nil)
		require.Equal(t, http.StatusOK, code, body)
		return body["payment"].(map[string]any)
	}
	dir := artifactDir(t)
	t.Logf("screenshots in %s", dir)

	ton := create(map[string]any{"amount": json.Number("25.5"), "external_ref": "ton-buyer", "network": "TON", "token": "USDT", "expires_in": 1800})
	tonID, tonMemo := ton["id"].(string), ton["memo"].(string)
	require.Regexp(t, `^[2-9A-HJKMNP-Z]{8}$`, tonMemo, "a comment a person can type")
	require.Equal(t, tonWallet, ton["address"], "the wallet's registered TON address")

	t.Run("TON comment, copy button and transfer link", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		p.open("/" + tonID + "?lang=en")
		evalJS[bool](p, watchCSP)
		p.waitState("pending", 5*time.Second)
		assert.Equal(t, tonWallet, p.text("#address"))
		p.showsMemo(tonMemo, en["pay.comment"], en["pay.comment_warning"])
		assert.Equal(t, "Comment", textContent(p, "#memo-label"))
		assert.Equal(t, "Send with this comment: a transfer without it will not be credited.", p.text(".memo-warning"))
		assert.Equal(t, en["pay.copy"], p.text("#copy-memo"))
		hint := strings.ReplaceAll(en["pay.qr_comment_hint"], "{{.Network}}", "TON")
		assert.Equal(t, hint, textContent(p, "#memo-hint"), "the QR hint speaks of the comment, on TON")
		assert.True(t, p.visible("#memo-hint"))
		assert.False(t, p.visible(`[data-memo="never"]`), "no address-only hint on a memo payment")
		assert.NotContains(t, p.text("#pay"), en["pay.memo"], "a comment, not a reference")

		// The QR code shown is the transfer link's (the address alone would
		// lose the comment), next to the "Open in wallet" link.
		assert.Equal(t, "wallet", evalJS[string](p, `document.getElementById('pay').getAttribute('data-qr')`))
		p.waitFor("the QR code", `document.getElementById('wallet-qr').naturalWidth > 0`, 5*time.Second)
		assert.True(t, p.visible("#wallet-qr"))
		assert.True(t, p.visible("#wallet-link"))
		assert.Equal(t, en["pay.open_wallet"], p.text("#wallet-link"))
		assert.Equal(t, strings.ReplaceAll(en["pay.comment_wallet_help"], "{{.Network}}", "TON"), textContent(p, "#memo-wallet-help"))
		link := tonLink(t, evalJS[string](p, `document.getElementById('wallet-link').getAttribute('href')`))
		assert.Equal(t, "/"+tonWallet, link.Path, "the link pays the wallet's address")
		assert.Equal(t, jetton, link.Query().Get("jetton"), "the devnet's USDT master")
		assert.Equal(t, "25500000", link.Query().Get("amount"), "25.50 USDT in base units")
		assert.Equal(t, tonMemo, link.Query().Get("text"), "the link carries the comment")
		p.fitsPhone()
		p.screenshot("memo-01-ton-comment")

		// The copy button, shown by the script, copies the comment (the
		// text given to the clipboard, or the selection where it refuses)
		// and says so.
		require.True(t, p.visible("#copy-memo"), "the comment's copy button appears with JavaScript")
		assert.True(t, evalJS[bool](p, `!document.getElementById('copy-memo').disabled`))
		evalJS[bool](p, `(function () {
			window.__copied = [];
			if (navigator.clipboard && navigator.clipboard.writeText) {
				var write = navigator.clipboard.writeText.bind(navigator.clipboard);
				navigator.clipboard.writeText = function (s) { window.__copied.push(s); return write(s); };
			}
			var exec = document.execCommand.bind(document);
			document.execCommand = function (cmd) {
				if (cmd === 'copy') window.__copied.push(String(window.getSelection()));
				return exec.apply(null, arguments);
			};
			return true;
		})()`)
		p.do(chromedp.Click(chromedp.ID("copy-memo")))
		p.waitFor("the copy confirmation", `(function (b) { return b.textContent === b.getAttribute('data-copied') || b.textContent === b.getAttribute('data-select') })(document.getElementById('copy-memo'))`, 5*time.Second)
		copied := evalJS[[]string](p, `window.__copied`)
		t.Logf("copy button says %q, copied %q", p.text("#copy-memo"), copied)
		require.NotEmpty(t, copied, "the button copies")
		assert.Equal(t, tonMemo, copied[len(copied)-1], "the button copies the comment, not the address")
		assert.Contains(t, []string{en["pay.copied"], en["pay.select_copy"]}, p.text("#copy-memo"))
		assert.Equal(t, tonWallet, p.text("#address"), "the address copy button is left alone")
		assert.Empty(t, evalJS[[]string](p, `window.__csp`), "no Content-Security-Policy violation")
	})

	t.Run("TON comment in Russian", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		p.open("/" + tonID + "?lang=ru")
		p.waitState("pending", 5*time.Second)
		assert.Equal(t, "ru", evalJS[string](p, `document.documentElement.lang`))
		p.showsMemo(tonMemo, ru["pay.comment"], ru["pay.comment_warning"])
		assert.Equal(t, ru["pay.copy"], p.text("#copy-memo"))
		assert.Equal(t, ru["pay.open_wallet"], p.text("#wallet-link"))
		assert.Equal(t, strings.ReplaceAll(ru["pay.comment_wallet_help"], "{{.Network}}", "TON"), textContent(p, "#memo-wallet-help"))
		assert.NotContains(t, p.text("body"), en["pay.comment_warning"])
		link := tonLink(t, evalJS[string](p, `document.getElementById('wallet-link').getAttribute('href')`))
		assert.Equal(t, tonMemo, link.Query().Get("text"))
		p.fitsPhone()
		p.screenshot("memo-02-ton-comment-ru")
	})

	// choose opens a payment created without a network and picks pair on
	// the page, with the script; it returns the payment and its memo.
	choose := func(t *testing.T, p *browserPage, ref, pair string) (string, string) {
		t.Helper()
		id := create(map[string]any{"amount": json.Number("7.25"), "external_ref": ref, "expires_in": 1800})["id"].(string)
		p.open("/" + id + "?lang=en")
		evalJS[bool](p, watchCSP)
		p.waitState("choose", 5*time.Second)
		assert.True(t, p.visible(`button[data-pair="TON:USDT"]`))
		assert.True(t, p.visible(`button[data-pair="SOLANA:USDC"]`))
		assert.False(t, p.visible("#memo-box"), "no memo before a network is chosen")
		evalJS[bool](p, `window.__sameDocument = true`)
		p.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-pair=%q]`, pair))))
		p.waitFor("the memo", `document.getElementById('memo').textContent !== '' && !document.getElementById('pay').hidden && !document.getElementById('memo-box').hidden`, 15*time.Second)
		assert.True(t, evalJS[bool](p, `window.__sameDocument === true`), "the choice takes no reload")
		got := payment(id)
		memo, _ := got["memo"].(string)
		require.NotEmpty(t, memo, "a memo payment: %v", got)
		assert.Equal(t, got["address"], p.text("#address"))
		assert.Empty(t, p.text("#error"))
		return id, memo
	}

	t.Run("network chosen on the page: TON", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		_, memo := choose(t, p, "chooser-ton", "TON:USDT")
		assert.Regexp(t, `^[2-9A-HJKMNP-Z]{8}$`, memo)
		p.showsMemo(memo, en["pay.comment"], en["pay.comment_warning"])
		p.waitFor("the network's name", `document.getElementById('network-line').innerText.includes('TON')`, 5*time.Second)
		hint := strings.ReplaceAll(en["pay.qr_comment_hint"], "{{.Network}}", "TON")
		assert.Equal(t, hint, textContent(p, "#memo-hint"), "the comment's QR hint, naming the network")
		assert.Equal(t, strings.ReplaceAll(en["pay.comment_wallet_help"], "{{.Network}}", "TON"), textContent(p, "#memo-wallet-help"))
		assert.NotContains(t, p.text("#pay"), en["pay.memo"], "the reference's words are gone")
		assert.NotContains(t, p.text("#pay"), "reference")
		assert.Equal(t, en["pay.qr_comment_alt"], evalJS[string](p, `document.getElementById('wallet-qr').alt`), "the QR code's words are the comment's")
		assert.False(t, p.visible(`[data-memo="never"]`))
		p.waitFor("the wallet link", `!document.getElementById('wallet').hidden`, 15*time.Second)
		link := tonLink(t, evalJS[string](p, `document.getElementById('wallet-link').getAttribute('href')`))
		assert.Equal(t, "/"+tonWallet, link.Path)
		assert.Equal(t, jetton, link.Query().Get("jetton"))
		assert.Equal(t, "7250000", link.Query().Get("amount"))
		assert.Equal(t, memo, link.Query().Get("text"))
		assert.True(t, p.visible("#copy-memo"))
		p.fitsPhone()
		p.screenshot("memo-03-chosen-ton")
		assert.Empty(t, evalJS[[]string](p, `window.__csp`))
	})

	t.Run("network chosen while the status cannot be read", func(t *testing.T) {
		// The select-network answer carries no memo (interface.md): until
		// the status brings it, nothing to pay is shown, or a buyer could
		// send without the comment.
		p := newBrowserPage(t, browser, payBase, dir)
		id := create(map[string]any{"amount": json.Number("7.25"), "external_ref": "chooser-offline", "expires_in": 1800})["id"].(string)
		p.open("/" + id + "?lang=en")
		p.waitState("choose", 5*time.Second)
		evalJS[bool](p, `(function () {
			var f = window.fetch;
			window.__selected = false;
			window.fetch = function (u, o) {
				if (o && o.method === 'POST') return f(u, o).then(function (r) { window.__selected = true; return r; });
				return Promise.reject(new Error('offline'));
			};
			return true;
		})()`)
		p.do(chromedp.Click(chromedp.CSS(`button[data-pair="TON:USDT"]`)))
		p.waitFor("the choice", `window.__selected === true && !document.querySelector('button[data-pair="TON:USDT"]').disabled`, 15*time.Second)
		assert.False(t, p.visible("#pay"), "no address without its comment")
		assert.NotContains(t, p.text("body"), tonWallet)
	})

	t.Run("network chosen on the page: SOLANA", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		_, memo := choose(t, p, "chooser-sol", "SOLANA:USDC")
		assert.Equal(t, solWallet, p.text("#address"))
		p.showsMemo(memo, en["pay.memo"], en["pay.memo_warning"])
		assert.Equal(t, "Reference (memo)", textContent(p, "#memo-label"))
		assert.NotContains(t, p.text("#pay"), en["pay.comment"], "a reference, not a comment")
		assert.Equal(t, strings.ReplaceAll(en["pay.qr_memo_hint"], "{{.Network}}", "Solana"), textContent(p, "#memo-hint"))
		p.waitFor("the wallet link", `!document.getElementById('wallet').hidden`, 15*time.Second)
		href := evalJS[string](p, `document.getElementById('wallet-link').getAttribute('href')`)
		u, err := url.Parse(href)
		require.NoError(t, err, href)
		assert.Equal(t, "solana", u.Scheme, href)
		assert.Equal(t, solWallet, u.Opaque, href)
		assert.Equal(t, memo, u.Query().Get("reference"), href)
		p.screenshot("memo-04-chosen-solana")
		assert.Empty(t, evalJS[[]string](p, `window.__csp`))
	})

	t.Run("paid with the comment, without a reload", func(t *testing.T) {
		p := newBrowserPage(t, browser, payBase, dir)
		p.open("/" + tonID + "?lang=en")
		evalJS[bool](p, watchCSP)
		p.waitState("pending", 5*time.Second)
		evalJS[bool](p, `window.__sameDocument = true`)
		code, sent := c.do("POST", "/devnet/transfers", nil, map[string]any{
			"network": "TON", "token": "USDT", "to": tonWallet, "amount": ton["amount"], "memo": tonMemo,
		})
		require.Equal(t, http.StatusCreated, code, sent)
		require.Eventually(t, func() bool { return payment(tonID)["status"] == "paid" }, 30*time.Second, 250*time.Millisecond,
			"the payment never became paid\n%s", out.String())
		p.waitState("paid", 20*time.Second)
		assert.True(t, evalJS[bool](p, `window.__sameDocument === true`), "the page must not reload")
		assert.Equal(t, en["pay.received"], p.text(`.state[data-state="paid"] h2`))
		assert.Contains(t, p.text(`.state[data-state="paid"]`), "25.50 USDT")
		assert.False(t, p.visible("#pay"), "no address, comment or link once paid")
		assert.False(t, p.visible("#memo"))
		assert.False(t, p.visible("#wallet-link"))
		assert.Empty(t, evalJS[string](p, `document.getElementById('wallet-link').getAttribute('href') || ''`), "the wallet link is withdrawn")
		p.screenshot("memo-05-paid")
		assert.Empty(t, evalJS[[]string](p, `window.__csp`))
	})
}

// showsMemo asserts the memo row is shown with memo, its label and its
// warning.
func (p *browserPage) showsMemo(memo, label, warning string) {
	p.t.Helper()
	p.waitFor("the memo "+memo, fmt.Sprintf(`document.getElementById('memo').textContent === %q`, memo), 10*time.Second)
	assert.True(p.t, p.visible("#memo"), "the memo is shown")
	assert.Equal(p.t, memo, p.text("#memo"))
	assert.True(p.t, p.visible("#memo-label"))
	// The label is written in capitals by the style sheet: its text.
	assert.Equal(p.t, label, textContent(p, "#memo-label"))
	assert.True(p.t, p.visible(".memo-warning"), "the warning is shown")
	assert.Equal(p.t, warning, p.text(".memo-warning"))
	assert.True(p.t, p.visible("#copy-memo"))
}

// textContent is the text of the first element matching css, as written
// (innerText follows text-transform).
func textContent(p *browserPage, css string) string {
	p.t.Helper()
	return evalJS[string](p, fmt.Sprintf(`(document.querySelector(%q)||{}).textContent || ''`, css))
}

// tonLink decodes a TON transfer link with net/url:
// ton://transfer/<address>?jetton=<master>&amount=<base units>&text=<memo>,
// each field once.
func tonLink(t *testing.T, href string) *url.URL {
	t.Helper()
	u, err := url.Parse(href)
	require.NoError(t, err, href)
	require.Equal(t, "ton", u.Scheme, href)
	require.Equal(t, "transfer", u.Host, href)
	q, err := url.ParseQuery(u.RawQuery)
	require.NoError(t, err, href)
	for k, v := range q {
		assert.Contains(t, []string{"jetton", "amount", "text"}, k, href)
		assert.Len(t, v, 1, "%s: %s once", href, k)
	}
	assert.Regexp(t, regexp.MustCompile(`^[1-9][0-9]*$`), q.Get("amount"), "%s: base units", href)
	return u
}

// catalogue reads a language's messages from locale/catalogue.
func catalogue(t *testing.T, lang string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../locale/catalogue/active." + lang + ".json")
	require.NoError(t, err)
	var all map[string]any
	require.NoError(t, json.Unmarshal(raw, &all))
	out := map[string]string{}
	for k, v := range all {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
