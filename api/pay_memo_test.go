package api_test

import (
	"html"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
)

// Memo payments on the hosted page (operations.md §9): a per_payment
// SOLANA payment goes to the wallet's first registered address and is
// told apart by its memo, a Solana Pay reference. Its qr_code and wallet
// link are the Solana Pay transfer request that carries the memo, and its
// page shows the memo with a copy button and says that a transfer without
// it is not credited.

// solanaPayRequest is a Solana Pay transfer request as a wallet reads it
// (solana-foundation/solana-pay SPEC.md):
//
//	solana:<recipient>?amount=<amount>&spl-token=<mint>&reference=<reference>&label=<label>&message=<message>
type solanaPayRequest struct {
	recipient string
	params    url.Values
}

// parseSolanaPay decodes a transfer request with net/url, apart from the
// code that builds it: the recipient is the URL's opaque part, the fields
// its query, each given once, label and message percent-encoded with a
// space as %20 (SPEC.md's encodeURIComponent; a wallet would not read "+"
// as a space).
func parseSolanaPay(t *testing.T, uri string) solanaPayRequest {
	t.Helper()
	u, err := url.Parse(uri)
	require.NoError(t, err, uri)
	require.Equal(t, "solana", u.Scheme, uri)
	require.Empty(t, u.Host, "%s: no authority", uri)
	require.Empty(t, u.Fragment, uri)
	require.NotEmpty(t, u.Opaque, "%s: the recipient", uri)
	params, err := url.ParseQuery(u.RawQuery)
	require.NoError(t, err, uri)
	for k, v := range params {
		require.Len(t, v, 1, "%s: %s given once", uri, k)
	}
	assert.NotContains(t, u.RawQuery, "+", "%s: spaces as %%20", uri)
	return solanaPayRequest{recipient: u.Opaque, params: params}
}

// requireBase58Key checks s is a base58 32-byte key, the form of a Solana
// Pay reference.
func requireBase58Key(t *testing.T, s string) {
	t.Helper()
	b, err := base58.Decode(s)
	require.NoError(t, err, "%q is base58", s)
	require.Len(t, b, 32, "%q is a 32-byte key", s)
	require.Equal(t, s, base58.Encode(b), "%q is canonical base58", s)
}

// sameAmount reports whether two decimals are the same number ("25.5" and
// "25.50").
func sameAmount(t *testing.T, a, b string) bool {
	t.Helper()
	x, ok := new(big.Rat).SetString(a)
	require.True(t, ok, "%q is a decimal", a)
	y, ok := new(big.Rat).SetString(b)
	require.True(t, ok, "%q is a decimal", b)
	return x.Cmp(y) == 0
}

var (
	memoCode       = regexp.MustCompile(`<code id="memo" data-f="memo">([^<]*)</code>`)
	memoCopyButton = regexp.MustCompile(`<button type="button" id="copy-memo" class="copy" hidden aria-labelledby="copy-memo memo-label" data-copied="Copied" data-select="Select and copy">Copy</button>`)
)

func TestMemoPaymentPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("memo", "pro", map[string]any{"address_mode": "per_payment"}, fullWallet())

	created := e.call(key, "POST", "/v1/payments", map[string]any{
		"amount": jsonNumber("25.50"), "external_ref": "buyer-1", "network": "SOLANA", "token": "USDC",
	})
	require.Equal(t, http.StatusCreated, created.Code, created.Raw)
	id := created.str("payment.id")
	memo := created.str("payment.memo")
	requireBase58Key(t, memo)
	assert.Equal(t, testSolanaWallet, created.str("payment.address"), "the wallet's first registered address")
	assert.Equal(t, "25.50", created.str("payment.amount"))

	// qr_code encodes the transfer request, written here by hand: the
	// address alone would lose the memo.
	mint := paywatch.DefaultContract(paywatch.SOLANA, paywatch.USDC)
	require.NotEmpty(t, mint)
	want := "solana:" + testSolanaWallet + "?amount=25.5&spl-token=" + mint + "&reference=" + memo + "&label=Shop%20memo"
	r := parseSolanaPay(t, want)
	assert.Equal(t, testSolanaWallet, r.recipient)
	assert.True(t, sameAmount(t, "25.50", r.params.Get("amount")))
	assert.Equal(t, mint, r.params.Get("spl-token"))
	assert.Equal(t, memo, r.params.Get("reference"))
	assert.Equal(t, "Shop memo", r.params.Get("label"))
	qr, err := paywatch.QRCodeDataURI(want)
	require.NoError(t, err)
	assert.Equal(t, qr, created.str("payment.qr_code"), "the create answer's QR code is the transfer request")
	address, err := paywatch.QRCodeDataURI(testSolanaWallet)
	require.NoError(t, err)
	assert.NotEqual(t, address, created.str("payment.qr_code"), "not the address alone")

	// The hosted page's status answer carries the memo, the same QR code
	// and the wallet link.
	s := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	assert.Equal(t, memo, s.str("memo"))
	assert.Equal(t, qr, s.str("qr_code"))
	uri := s.str("wallet_uri")
	w := parseSolanaPay(t, uri)
	assert.Equal(t, testSolanaWallet, w.recipient, "the wallet link pays the wallet")
	assert.True(t, sameAmount(t, "25.50", w.params.Get("amount")), "for the amount: %s", uri)
	assert.Equal(t, mint, w.params.Get("spl-token"))
	assert.Equal(t, memo, w.params.Get("reference"), "the wallet link carries the memo")
	assert.Equal(t, "Shop memo", w.params.Get("label"))
	assert.Equal(t, want, uri)
	assert.Equal(t, qr, s.str("wallet_qr_code"))

	// The page: the memo under the address with its own copy button and
	// the warning, the memo's QR hint instead of the address-only one,
	// and "Open in wallet" on the transfer request.
	page := e.payGet("/" + id)
	requireHTML(t, page, http.StatusOK)
	raw := page.Raw
	m := memoCode.FindStringSubmatch(raw)
	require.NotNil(t, m, "the page shows the memo")
	assert.Equal(t, memo, m[1])
	assert.Contains(t, raw, `<div id="memo-box" class="memo" data-memo="only" data-qr-alt="QR code of a payment request: token, deposit address, amount and reference">`, "shown")
	assert.Contains(t, raw, `<p class="label" id="memo-label">Reference (memo)</p>`)
	assert.Regexp(t, memoCopyButton, raw, "the memo's copy button, shown by the page's script as the address's is")
	assert.Contains(t, raw, `<p class="notice memo-warning" role="note">Send with this reference: a transfer without it will not be credited.</p>`)
	assert.Less(t, strings.Index(raw, `id="address"`), strings.Index(raw, `id="memo"`), "the memo under the address")
	assert.Contains(t, raw, `<section id="pay" data-qr="wallet">`, "the transfer request for what is still to send")
	assert.Contains(t, raw, `alt="QR code of a payment request: token, deposit address, amount and reference"`)
	assert.NotContains(t, raw, "The QR code holds the address only", "the QR code is not the address alone")
	assert.NotContains(t, raw, `alt="QR code of the deposit address"`)
	assert.Contains(t, raw, `scan it with a <span data-f="network_name">Solana</span> wallet, which fills in the token, the address, the amount and the reference.`)
	assert.Contains(t, raw, `<span data-f="network_name">Solana</span> wallets that read payment requests add the reference for you.`)
	assert.NotContains(t, raw, "MetaMask", "the EVM wallet help is not a memo payment's")
	assert.NotContains(t, raw, `id="qr-toggle"`, "no address-only QR code to offer")
	assert.Contains(t, raw, `<div id="wallet" class="wallet">`)
	link := walletLinkHref.FindStringSubmatch(raw)
	require.NotNil(t, link, "the page has the wallet link")
	assert.Equal(t, uri, html.UnescapeString(link[1]), "Open in wallet is the transfer request")
	assert.Equal(t, memo, parseSolanaPay(t, html.UnescapeString(link[1])).params.Get("reference"))
	img := regexp.MustCompile(`<img id="qr" class="qr for-address" alt="[^"]*" width="256" height="256" src="([^"]*)">`).FindStringSubmatch(raw)
	require.NotNil(t, img, "the page has the QR code")
	assert.Equal(t, qr, html.UnescapeString(img[1]), "the page's QR code is the transfer request")

	// In the page's other languages too.
	de := e.payGet("/" + id + "?lang=de").Raw
	for _, key := range []string{"pay.memo", "pay.memo_warning", "pay.qr_memo_alt"} {
		tr := locale.Lang("de").T(key)
		assert.NotEqual(t, locale.English.T(key), tr, key)
		assert.Contains(t, de, html.EscapeString(tr), key)
	}
	assert.Contains(t, de, memo)

	// Any other payment has no memo: no row, no copy button, no warning,
	// and the address-only hint.
	tron := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "buyer-1", "network": "TRC20"})
	evm := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "buyer-1", "network": "ERC20", "token": "USDC"})
	for _, other := range []string{tron, evm} {
		s := e.payGet("/api/pay/" + other)
		require.Equal(t, http.StatusOK, s.Code, s.Raw)
		v, ok := s.Body["memo"]
		assert.True(t, ok, "memo is always in the answer")
		assert.Nil(t, v, "null for a payment without a memo")
		raw := e.payGet("/" + other).Raw
		for _, absent := range []string{`id="memo-box"`, `id="memo"`, `id="copy-memo"`, "Reference (memo)", "Send with this reference", "reference=", "solana:"} {
			assert.NotContains(t, raw, absent, "%s: no memo", other)
		}
		assert.Contains(t, raw, "The QR code holds the address only")
		assert.Contains(t, raw, `alt="QR code of the deposit address"`)
	}
}

// A payment created without a network gets its memo when the buyer picks
// SOLANA: the page the script updates has the memo row ready (hidden),
// the status answer it polls after the choice carries the memo, and the
// page shows it after.
func TestMemoPaymentAfterNetworkChoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20, paywatch.SOLANA}})
	key := e.merchant("memochoice", "pro", map[string]any{"address_mode": "per_payment"}, fullWallet())
	id := e.createPayment(key, map[string]any{"amount": jsonNumber("7.25"), "external_ref": "buyer-2"})

	s := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	assert.Nil(t, s.Body["memo"], "no memo before a network is chosen")
	before := e.payGet("/" + id).Raw
	assert.Contains(t, before, `name="pair" value="SOLANA:USDC"`)
	assert.Contains(t, before, `<div id="memo-box" class="memo" data-memo="only" data-qr-alt="QR code of a payment request: token, deposit address, amount and reference" hidden>`,
		"the memo row is ready for the page's script, hidden")
	assert.Contains(t, before, `<code id="memo" data-f="memo"></code>`)
	assert.Contains(t, before, `<p class="hint" id="memo-hint" data-memo="only" hidden>`)
	assert.Contains(t, before, `<p class="hint" id="memo-wallet-help" data-memo="only" hidden>`)
	assert.Contains(t, before, `<p class="hint for-address" data-memo="never">`, "the address-only hint, for a network without memos")

	sel := e.selectNetwork(id, nextIP(), map[string]any{"network": "SOLANA", "token": "USDC"})
	require.Equal(t, http.StatusOK, sel.Code, sel.Raw)
	assert.Equal(t, testSolanaWallet, sel.str("address"))

	s = e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	memo := s.str("memo")
	requireBase58Key(t, memo)
	if v, ok := sel.Body["memo"]; ok {
		assert.Equal(t, memo, v, "the select-network answer's memo, where it gives one")
	}
	assert.Equal(t, sel.str("qr_code"), s.str("qr_code"))
	r := parseSolanaPay(t, s.str("wallet_uri"))
	assert.Equal(t, memo, r.params.Get("reference"))
	assert.True(t, sameAmount(t, "7.25", r.params.Get("amount")))
	assert.Equal(t, paywatch.DefaultContract(paywatch.SOLANA, paywatch.USDC), r.params.Get("spl-token"))
	qr, err := paywatch.QRCodeDataURI(s.str("wallet_uri"))
	require.NoError(t, err)
	assert.Equal(t, qr, sel.str("qr_code"), "the select-network answer's QR code is the transfer request")

	after := e.payGet("/" + id).Raw
	m := memoCode.FindStringSubmatch(after)
	require.NotNil(t, m)
	assert.Equal(t, memo, m[1])
	assert.Contains(t, after, `<div id="memo-box" class="memo" data-memo="only" data-qr-alt="QR code of a payment request: token, deposit address, amount and reference">`)
	assert.NotContains(t, after, "The QR code holds the address only")

	// Picking a network without memos leaves the memo null and the page
	// without a memo row.
	other := e.createPayment(key, map[string]any{"amount": 3, "external_ref": "buyer-3"})
	sel = e.selectNetwork(other, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"})
	require.Equal(t, http.StatusOK, sel.Code, sel.Raw)
	assert.Nil(t, sel.Body["memo"])
	s = e.payGet("/api/pay/" + other)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	v, ok := s.Body["memo"]
	assert.True(t, ok, "memo is always in the status answer")
	assert.Nil(t, v)
	assert.NotContains(t, e.payGet("/"+other).Raw, `id="memo"`)
}
