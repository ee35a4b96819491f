package api_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
)

// Memo payments on TON (operations.md §9, issue 41): a per_payment or
// per_user TON payment goes to the wallet's registered TON address and is
// told apart by its memo, the jetton transfer's text comment, which the
// buyer may have to type. Its qr_code and wallet link are the TON
// transfer link that carries the comment, and its page calls the memo a
// comment and says, in the buyer's language, that a transfer without it
// will not be credited.

// tonTransfer is a TON transfer link as a wallet reads it:
//
//	ton://transfer/<recipient>?jetton=<master>&amount=<base units>&text=<comment>
type tonTransfer struct {
	recipient string
	params    url.Values
}

// parseTONTransfer decodes a TON transfer link with net/url, apart from
// the code that builds it: "transfer" is the URL's host, the recipient its
// one path segment, the fields its query, each given once and none other.
func parseTONTransfer(t *testing.T, uri string) tonTransfer {
	t.Helper()
	u, err := url.Parse(uri)
	require.NoError(t, err, uri)
	require.Equal(t, "ton", u.Scheme, uri)
	require.Equal(t, "transfer", u.Host, uri)
	require.Empty(t, u.User, uri)
	require.Empty(t, u.Fragment, uri)
	recipient, ok := strings.CutPrefix(u.Path, "/")
	require.True(t, ok, "%s: the recipient is the path", uri)
	require.NotEmpty(t, recipient, uri)
	require.NotContains(t, recipient, "/", uri)
	params, err := url.ParseQuery(u.RawQuery)
	require.NoError(t, err, uri)
	for k, v := range params {
		require.Contains(t, []string{"jetton", "amount", "text"}, k, "%s: a field TON wallets read", uri)
		require.Len(t, v, 1, "%s: %s given once", uri, k)
	}
	return tonTransfer{recipient: recipient, params: params}
}

// tonCommentPattern is a TON memo: 8 characters a person can read and
// type without mistaking one for another (no 0, O, 1, I or L).
var tonCommentPattern = regexp.MustCompile(`^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$`)

// TON's words for the memo, in English.
const (
	tonCommentLabel   = `<p class="label" id="memo-label">Comment</p>`
	tonCommentWarning = `<p class="notice memo-warning" role="note">Send with this comment: a transfer without it will not be credited.</p>`
	tonCommentAlt     = "QR code of a transfer link: token, deposit address, amount and comment"
)

func TestTONMemoPaymentPage(t *testing.T) {
	t.Parallel()
	wallet, err := paywatch.NormalizeTONWallet(testTONWallet)
	require.NoError(t, err)
	require.Equal(t, testTONWallet, wallet, "the test wallet is in the canonical form")

	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("tonmemo", "pro", map[string]any{"address_mode": "per_payment"}, fullWallet())
	created := e.call(key, "POST", "/v1/payments", map[string]any{
		"amount": jsonNumber("25.50"), "external_ref": "buyer-1", "network": "TON", "token": "USDT",
	})
	require.Equal(t, http.StatusCreated, created.Code, created.Raw)
	id := created.str("payment.id")
	memo := created.str("payment.memo")
	assert.Regexp(t, tonCommentPattern, memo, "a comment a person can type")
	assert.Equal(t, testTONWallet, created.str("payment.address"), "the wallet's registered TON address")

	// qr_code encodes the transfer link, written here by hand: the address
	// alone would lose the comment.
	master := paywatch.DefaultContract(paywatch.TON, paywatch.USDT)
	require.Equal(t, "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs", master, "USDT's jetton master")
	want := "ton://transfer/" + testTONWallet + "?jetton=" + master + "&amount=25500000&text=" + memo
	qr, err := paywatch.QRCodeDataURI(want)
	require.NoError(t, err)
	assert.Equal(t, qr, created.str("payment.qr_code"), "the create answer's QR code is the transfer link")

	// The status answer: the memo, the same QR code and the wallet link.
	s := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	assert.Equal(t, memo, s.str("memo"))
	assert.Equal(t, qr, s.str("qr_code"))
	uri := s.str("wallet_uri")
	r := parseTONTransfer(t, uri)
	assert.Equal(t, testTONWallet, r.recipient, "the link pays the wallet, never its jetton wallet")
	assert.Equal(t, master, r.params.Get("jetton"))
	assert.Equal(t, "25500000", r.params.Get("amount"), "25.50 USDT in base units (6 decimals)")
	assert.Equal(t, memo, r.params.Get("text"), "the link carries the comment")
	wqr, err := paywatch.QRCodeDataURI(uri)
	require.NoError(t, err)
	assert.Equal(t, qr, wqr)
	assert.Equal(t, qr, s.str("wallet_qr_code"))

	// The page calls the memo a comment, with its copy button, the
	// warning, the hint that the QR code and the link carry it, and the
	// help that rules out exchanges and wallets that cannot add one.
	page := e.payGet("/" + id)
	requireHTML(t, page, http.StatusOK)
	raw := page.Raw
	m := memoCode.FindStringSubmatch(raw)
	require.NotNil(t, m, "the page shows the comment")
	assert.Equal(t, memo, m[1])
	assert.Contains(t, raw, `data-memo-kind="comment"`)
	assert.Contains(t, raw, `<div id="memo-box" class="memo" data-memo="only" data-qr-alt="`+tonCommentAlt+`">`)
	assert.Contains(t, raw, tonCommentLabel)
	assert.Regexp(t, memoCopyButton, raw, "the comment's copy button")
	assert.Contains(t, raw, tonCommentWarning)
	assert.Less(t, strings.Index(raw, `id="address"`), strings.Index(raw, `id="memo"`), "the comment under the address")
	assert.Contains(t, raw, `<section id="pay" data-qr="wallet">`)
	assert.Contains(t, raw, `alt="`+tonCommentAlt+`"`)
	assert.Contains(t, raw, html.EscapeString(`This QR code and the "Open in wallet" link carry the comment: a `)+
		`<span data-f="network_name">TON</span> wallet that opens them fills in the token, the address, the amount and the comment.`)
	assert.Contains(t, raw, `Send from a <span data-f="network_name">TON</span> wallet that lets you add a comment to the transfer`)
	assert.Contains(t, raw, "Do not pay from an exchange or from a wallet that cannot add a comment")
	for _, absent := range []string{"Reference (memo)", "Send with this reference", "solana:", "reference=", "MetaMask", `id="qr-toggle"`, "The QR code holds the address only", `class="memo-texts"`} {
		assert.NotContains(t, raw, absent)
	}
	link := walletLinkHref.FindStringSubmatch(raw)
	require.NotNil(t, link, "the page has the wallet link")
	assert.Equal(t, uri, html.UnescapeString(link[1]), "Open in wallet is the transfer link")
	img := regexp.MustCompile(`<img id="qr" class="qr for-address" alt="[^"]*" width="256" height="256" src="([^"]*)">`).FindStringSubmatch(raw)
	require.NotNil(t, img)
	assert.Equal(t, qr, html.UnescapeString(img[1]), "the page's QR code is the transfer link")

	// In the buyer's language: the words of a comment, not a reference.
	ru := e.payGet("/" + id + "?lang=ru").Raw
	for _, key := range []string{"pay.comment", "pay.comment_warning", "pay.qr_comment_alt"} {
		tr := locale.Lang("ru").T(key)
		assert.NotEqual(t, locale.English.T(key), tr, key)
		assert.Contains(t, ru, html.EscapeString(tr), key)
	}
	assert.Contains(t, ru, `<p class="label" id="memo-label">Комментарий</p>`)
	assert.Contains(t, ru, "перевод без него не будет зачислен")
	assert.NotContains(t, ru, locale.Lang("ru").T("pay.memo"))
	assert.Contains(t, ru, memo)

	// A SOLANA memo payment of the same project keeps the reference's words.
	sol := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "buyer-1", "network": "SOLANA", "token": "USDC"})
	solPage := e.payGet("/" + sol).Raw
	assert.Contains(t, solPage, `<p class="label" id="memo-label">Reference (memo)</p>`)
	assert.Contains(t, solPage, `data-memo-kind="reference"`)
	assert.NotContains(t, solPage, "comment")

	// A partial payment's QR code and link ask for what is still missing.
	e.saveState(id, paywatch.StatusPartial, "10.25", seenTransfer(1, "10.25", 6, 1, true))
	s = e.payGet("/api/pay/" + id)
	require.Equal(t, "partial", s.str("status"), s.Raw)
	assert.Equal(t, "15.25", s.str("missing_amount"))
	restLink := "ton://transfer/" + testTONWallet + "?jetton=" + master + "&amount=15250000&text=" + memo
	assert.Equal(t, "15250000", parseTONTransfer(t, restLink).params.Get("amount"))
	rqr, err := paywatch.QRCodeDataURI(restLink)
	require.NoError(t, err)
	assert.Equal(t, rqr, s.str("qr_code"), "the QR code asks for the missing 15.25 USDT, with the comment")
	rest := parseTONTransfer(t, s.str("wallet_uri"))
	assert.Equal(t, memo, rest.params.Get("text"), "the link keeps the comment")
	assert.Equal(t, "15250000", rest.params.Get("amount"), "the link asks for the missing 15.25 USDT: %s", s.str("wallet_uri"))
	assert.Equal(t, rqr, s.str("wallet_qr_code"))
}

// A per_user customer keeps their comment across TON payments, as they
// keep an address; another customer gets another.
func TestTONMemoPerUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("tonuser", "pro", map[string]any{"address_mode": "per_user"}, fullWallet())
	pay := func(ref string) response {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": ref, "network": "TON", "token": "USDT"})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		assert.Equal(t, testTONWallet, r.str("payment.address"), ref)
		assert.Regexp(t, tonCommentPattern, r.str("payment.memo"), ref)
		return r
	}
	first := pay("customer-7")
	// Once that payment is paid, the customer's next one is a new
	// payment, with the same comment.
	e.saveState(first.str("payment.id"), paywatch.StatusPaid, "5", seenTransfer(1, "5", 6, 1, true))
	again, other := pay("customer-7"), pay("customer-8")
	assert.NotEqual(t, first.str("payment.id"), again.str("payment.id"), "a new payment")
	assert.Equal(t, first.str("payment.memo"), again.str("payment.memo"), "one comment per external_ref, network and token")
	assert.NotEqual(t, first.str("payment.memo"), other.str("payment.memo"), "another customer, another comment")
	r := parseTONTransfer(t, e.payGet("/api/pay/"+again.str("payment.id")).str("wallet_uri"))
	assert.Equal(t, first.str("payment.memo"), r.params.Get("text"))
	assert.Equal(t, "5000000", r.params.Get("amount"))
}

// A payment created without a network gets its comment when the buyer
// picks TON: the page ready for the script holds the words of each memo
// kind offered, and after the choice it speaks of a comment.
func TestTONMemoPaymentAfterNetworkChoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20, paywatch.SOLANA, paywatch.TON}})
	key := e.merchant("tonchoice", "pro", map[string]any{"address_mode": "per_payment"}, fullWallet())
	id := e.createPayment(key, map[string]any{"amount": jsonNumber("7.25"), "external_ref": "buyer-2"})

	before := e.payGet("/" + id).Raw
	assert.Contains(t, before, `name="pair" value="TON:USDT"`)
	assert.Contains(t, before, `name="pair" value="SOLANA:USDC"`)
	assert.Contains(t, before, `<code id="memo" data-f="memo"></code>`, "the memo row is ready, hidden")
	assert.Contains(t, before, `<div class="memo-texts" data-memo-kind="reference" data-memo-networks="SOLANA" data-qr-alt="QR code of a payment request: token, deposit address, amount and reference" hidden>`)
	assert.Contains(t, before, `<div class="memo-texts" data-memo-kind="comment" data-memo-networks="TON" data-qr-alt="`+tonCommentAlt+`" hidden>`)
	assert.Contains(t, before, `<span data-memo-text="#memo-label">Comment</span>`)
	assert.Contains(t, before, `<span data-memo-text=".memo-warning">Send with this comment: a transfer without it will not be credited.</span>`)
	assert.Contains(t, before, `<span data-memo-text="#memo-hint">`+html.EscapeString(`This QR code and the "Open in wallet" link carry the comment`))
	assert.Contains(t, before, `<span data-memo-text="#memo-wallet-help">Send from a <span data-f="network_name"></span> wallet that lets you add a comment`)

	sel := e.selectNetwork(id, nextIP(), map[string]any{"network": "TON", "token": "USDT"})
	require.Equal(t, http.StatusOK, sel.Code, sel.Raw)
	assert.Equal(t, testTONWallet, sel.str("address"))
	s := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	memo := s.str("memo")
	assert.Regexp(t, tonCommentPattern, memo)
	r := parseTONTransfer(t, s.str("wallet_uri"))
	assert.Equal(t, memo, r.params.Get("text"))
	assert.Equal(t, "7250000", r.params.Get("amount"))
	assert.Equal(t, paywatch.DefaultContract(paywatch.TON, paywatch.USDT), r.params.Get("jetton"))
	qr, err := paywatch.QRCodeDataURI(s.str("wallet_uri"))
	require.NoError(t, err)
	assert.Equal(t, qr, sel.str("qr_code"), "the select-network answer's QR code is the transfer link")

	after := e.payGet("/" + id).Raw
	m := memoCode.FindStringSubmatch(after)
	require.NotNil(t, m)
	assert.Equal(t, memo, m[1])
	assert.Contains(t, after, tonCommentLabel)
	assert.Contains(t, after, tonCommentWarning)
	assert.NotContains(t, after, `class="memo-texts"`, "the words are the chosen network's")
	assert.NotContains(t, after, "Reference (memo)")

	// Offered TON alone among memo networks, the page waits with the
	// comment's words.
	e2 := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20, paywatch.TON}})
	key2 := e2.merchant("tononly", "pro", map[string]any{"address_mode": "per_payment"}, fullWallet())
	only := e2.payGet("/" + e2.createPayment(key2, map[string]any{"amount": 3, "external_ref": "buyer-3"})).Raw
	assert.Contains(t, only, `data-memo-kind="comment"`)
	assert.Contains(t, only, `<div id="memo-box" class="memo" data-memo="only" data-qr-alt="`+tonCommentAlt+`" hidden>`)
	assert.Contains(t, only, tonCommentLabel)
	assert.NotContains(t, only, "Reference (memo)")
}
