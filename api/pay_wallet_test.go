package api_test

import (
	"html"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// eip681Request is an EIP-681 transaction request as a wallet reads it:
//
//	ethereum:[pay-]<target>[@<chain id>][/<function>][?<parameters>]
type eip681Request struct {
	target   string
	chainID  int64
	function string
	params   url.Values
}

var (
	hexAddress = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	digits     = regexp.MustCompile(`^[0-9]+$`)
)

// parseEIP681 decodes a request by the grammar of EIP-681, written here
// apart from the code that builds it.
func parseEIP681(t *testing.T, uri string) eip681Request {
	t.Helper()
	scheme, rest, ok := strings.Cut(uri, ":")
	require.True(t, ok, uri)
	require.Equal(t, "ethereum", scheme, uri)
	rest = strings.TrimPrefix(rest, "pay-")
	path, query, _ := strings.Cut(rest, "?")
	targetAndChain, function, _ := strings.Cut(path, "/")
	target, chain, hasChain := strings.Cut(targetAndChain, "@")
	require.Regexp(t, hexAddress, target, "target address of %s", uri)
	var r eip681Request
	r.target, r.function = target, function
	if hasChain {
		require.Regexp(t, digits, chain, "chain id of %s", uri)
		id, err := strconv.ParseInt(chain, 10, 64)
		require.NoError(t, err)
		r.chainID = id
	}
	params, err := url.ParseQuery(query)
	require.NoError(t, err, uri)
	r.params = params
	return r
}

// baseUnits writes a decimal amount in base units by moving the decimal
// point: "25.50" with 6 decimals is "25500000".
func baseUnits(t *testing.T, amount string, decimals int) string {
	t.Helper()
	whole, frac, _ := strings.Cut(amount, ".")
	frac = strings.TrimRight(frac, "0")
	require.LessOrEqual(t, len(frac), decimals)
	out := strings.TrimLeft(whole+frac+strings.Repeat("0", decimals-len(frac)), "0")
	if out == "" {
		return "0"
	}
	return out
}

var walletLinkHref = regexp.MustCompile(`<a id="wallet-link" class="button" href="([^"]*)">Open in wallet</a>`)

// walletLinkOf returns the page's "Open in wallet" link and the status
// JSON's wallet_uri, which must agree, and checks the wallet QR code
// encodes the same request.
func (e *env) walletLinkOf(id string) string {
	e.t.Helper()
	page := e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()})
	requireHTML(e.t, page, http.StatusOK)
	m := walletLinkHref.FindStringSubmatch(page.Raw)
	require.NotNil(e.t, m, "the page has the wallet link")
	href := html.UnescapeString(m[1])
	s := e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
	require.Equal(e.t, http.StatusOK, s.Code, s.Raw)
	require.Equal(e.t, href, s.str("wallet_uri"))
	qr, err := paywatch.QRCodeDataURI(href)
	require.NoError(e.t, err)
	assert.Equal(e.t, qr, s.str("wallet_qr_code"), "the wallet QR code encodes the request")
	img := regexp.MustCompile(`<img id="wallet-qr" class="qr for-wallet" alt="QR code of a payment request: token, network, deposit address and amount" width="256" height="256" src="([^"]*)">`).FindStringSubmatch(page.Raw)
	require.NotNil(e.t, img, "the page has the wallet QR code")
	assert.Equal(e.t, qr, html.UnescapeString(img[1]), "the page's wallet QR code encodes the request")
	return href
}

func TestWalletLinkIsTheExactTransfer(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // the network choice goes through the workflow
	key := e.merchant("shop", "pro", nil, hdWallet())
	for _, c := range []struct {
		network, token, amount string
		chainID                int64
		contract               string
		units                  string
	}{
		// USDT on Ethereum has 6 decimals, on BSC 18.
		{"ERC20", "USDT", "25.50", 1, "0xdAC17F958D2ee523a2206206994597C13D831ec7", "25500000"},
		{"BEP20", "USDT", "25.50", 56, "0x55d398326f99059fF775485246999027B3197955", "25500000000000000000"},
		{"POLYGON", "USDC", "0.10", 137, "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", "100000"},
		{"ARBITRUM", "USDT", "1234567.891011", 42161, "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9", "1234567891011"},
	} {
		id := e.createPayment(key, map[string]any{"amount": jsonNumber(c.amount), "external_ref": "u-" + c.network, "network": c.network, "token": c.token})
		address := e.payGet("/api/pay/" + id).str("address")
		require.Regexp(t, hexAddress, address)

		r := parseEIP681(t, e.walletLinkOf(id))
		assert.Equal(t, c.contract, r.target, "%s %s: the token contract", c.token, c.network)
		assert.Equal(t, c.chainID, r.chainID, "%s: the chain id", c.network)
		assert.Equal(t, "transfer", r.function)
		assert.Equal(t, []string{"address", "uint256"}, slices.Sorted(maps.Keys(r.params)), "the recipient and the amount, nothing else")
		assert.Equal(t, []string{address}, r.params["address"], "%s: the deposit address", c.network)
		assert.Equal(t, []string{c.units}, r.params["uint256"], "%s %s %s: the amount in base units, a plain integer", c.amount, c.token, c.network)
		assert.Equal(t, baseUnits(t, c.amount, paywatch.Decimals(paywatch.Network(c.network), paywatch.Token(c.token))), c.units, "the table itself")
	}

	// Tron has no EIP-681 request: the page keeps the address only.
	tron := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	page := e.payGet("/" + tron).Raw
	assert.Contains(t, page, `<div id="wallet" class="wallet" hidden>`)
	assert.Contains(t, page, `<a id="wallet-link" class="button" href="">`)
	assert.Contains(t, page, `<section id="pay" data-qr="address">`)
	s := e.payGet("/api/pay/" + tron)
	assert.NotContains(t, s.Body, "wallet_uri")
	assert.NotContains(t, s.Body, "wallet_qr_code")

	// Nor has a payment before its network is chosen; after, it has.
	open := e.createPayment(key, map[string]any{"amount": 7.25, "external_ref": "u"})
	assert.NotContains(t, e.payGet("/api/pay/"+open).Body, "wallet_uri")
	assert.Contains(t, e.payGet("/"+open).Raw, `<div id="wallet" class="wallet" hidden>`)
	require.Equal(t, http.StatusOK, e.selectNetwork(open, nextIP(), map[string]any{"network": "ERC20", "token": "USDC"}).Code)
	r := parseEIP681(t, e.walletLinkOf(open))
	assert.Equal(t, paywatch.DefaultContract(paywatch.ERC20, paywatch.USDC), r.target)
	assert.Equal(t, []string{"7250000"}, r.params["uint256"])
}

// Every EVM pair of the table has a wallet link naming its own contract,
// its chain and the amount in its own base units (25.5 DAI is
// 25500000000000000000, 25.5 PYUSD 25500000), read by the parser above.
func TestWalletLinkOfEveryEVMPair(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	// The new pairs, written out rather than computed.
	want := map[paywatch.Pair]string{
		{Network: paywatch.BASE, Token: paywatch.DAI}:       "25500000000000000000",
		{Network: paywatch.BASE, Token: paywatch.USDC}:      "25500000",
		{Network: paywatch.ERC20, Token: paywatch.DAI}:      "25500000000000000000",
		{Network: paywatch.ERC20, Token: paywatch.PYUSD}:    "25500000",
		{Network: paywatch.ARBITRUM, Token: paywatch.PYUSD}: "25500000",
		{Network: paywatch.BEP20, Token: paywatch.DAI}:      "25500000000000000000",
		{Network: paywatch.POLYGON, Token: paywatch.DAI}:    "25500000000000000000",
	}
	seen := 0
	for _, pair := range paywatch.Pairs() {
		info, ok := paywatch.LookupNetwork(pair.Network)
		require.True(t, ok)
		if info.Family != paywatch.FamilyEVM {
			continue
		}
		seen++
		id := e.createPayment(key, map[string]any{"amount": jsonNumber("25.5"), "external_ref": "u-" + pair.String(), "network": string(pair.Network), "token": string(pair.Token)})
		r := parseEIP681(t, e.walletLinkOf(id))
		assert.Equal(t, paywatch.DefaultContract(pair.Network, pair.Token), r.target, "%s: the token contract", pair)
		assert.Equal(t, info.ChainID, r.chainID, "%s: the chain id", pair)
		assert.Equal(t, "transfer", r.function, pair.String())
		assert.Equal(t, []string{"address", "uint256"}, slices.Sorted(maps.Keys(r.params)), pair.String())
		units := baseUnits(t, "25.5", paywatch.Decimals(pair.Network, pair.Token))
		assert.Equal(t, []string{units}, r.params["uint256"], "%s: 25.5 in base units", pair)
		if w, ok := want[pair]; ok {
			assert.Equal(t, w, units, pair.String())
		}
	}
	assert.Equal(t, 16, seen, "every pair but USDT on TRC20")
	base, _ := paywatch.LookupNetwork(paywatch.BASE)
	assert.Equal(t, int64(8453), base.ChainID)
}

func TestWalletLinkCarriesTheMicroOffset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "pool", "pool_matching": "micro_amount"}, staticWallet("BEP20", evmAddrs[1]))
	id := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "BEP20"})
	amount := e.payGet("/api/pay/" + id).str("amount")
	require.NotEqual(t, "10.00", amount, "a micro offset")
	r := parseEIP681(t, e.walletLinkOf(id))
	assert.Equal(t, []string{baseUnits(t, amount, 18)}, r.params["uint256"], "the exact amount to send, offset included")
	assert.Equal(t, []string{evmAddrs[1]}, r.params["address"])
}

func TestWalletLinkNamesTheWatchedContracts(t *testing.T) {
	t.Parallel()
	// An override's contract, given in lower case; Arbitrum has none (a
	// network whose chain id is not known for sure).
	e := newEnv(t, envOptions{noWorkflows: true, walletTokens: map[paywatch.Network]map[paywatch.Token]string{
		paywatch.ERC20: {paywatch.USDT: "0x5fbdb2315678afecb367f032d93f642f64180aa3"},
	}})
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 3, "external_ref": "u", "network": "ERC20"})
	r := parseEIP681(t, e.walletLinkOf(id))
	assert.Equal(t, "0x5FbDB2315678afecb367f032d93F642f64180aa3", r.target, "the watched contract, in EIP-55 form")
	assert.Equal(t, int64(1), r.chainID)

	arb := e.createPayment(key, map[string]any{"amount": 3, "external_ref": "u", "network": "ARBITRUM"})
	assert.Contains(t, e.payGet("/"+arb).Raw, `<div id="wallet" class="wallet" hidden>`)
	assert.NotContains(t, e.payGet("/api/pay/"+arb).Body, "wallet_uri")
}

func TestWalletQRToggleWithoutJavaScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 25.5, "external_ref": "u", "network": "ERC20"})

	// The address QR code is the default; the toggle links to the wallet one.
	page := e.payGet("/" + id).Raw
	assert.Contains(t, page, `<section id="pay" data-qr="address">`)
	assert.Contains(t, page, `<div id="wallet" class="wallet">`)
	assert.Contains(t, page, `<a id="qr-toggle" class="toggle" href="/`+id+`?qr=wallet"`)
	assert.Contains(t, page, "Show wallet QR (fills in amount)")
	assert.Contains(t, page, "Recent MetaMask mobile versions read payment requests")

	// ?qr=wallet shows the wallet QR code, and the toggle links back.
	page = e.payGet("/" + id + "?qr=wallet").Raw
	assert.Contains(t, page, `<section id="pay" data-qr="wallet">`)
	assert.Contains(t, page, `<a id="qr-toggle" class="toggle" href="/`+id+`" `)
	// A Tron payment has no wallet QR code to show.
	tron := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	assert.Contains(t, e.payGet("/"+tron+"?qr=wallet").Raw, `<section id="pay" data-qr="address">`)
}
