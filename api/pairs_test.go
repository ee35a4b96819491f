package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// Operations.md §9: BASE, DAI and PYUSD are served on the same terms as the
// first five networks and two tokens, through the same fields; a pair the
// table lacks is refused with interface.md's message.

// newPairsTokens are the tokens of each network, as operations.md §9's
// table gives them, in API order.
var newPairsTokens = []struct {
	network string
	tokens  []any
}{
	{"TRC20", []any{"USDT"}},
	{"BEP20", []any{"USDT", "USDC", "DAI"}},
	{"ERC20", []any{"USDT", "USDC", "DAI", "PYUSD"}},
	{"POLYGON", []any{"USDT", "USDC", "DAI"}},
	{"ARBITRUM", []any{"USDT", "USDC", "DAI", "PYUSD"}},
	{"BASE", []any{"USDC", "DAI"}},
	{"SOLANA", []any{"USDT", "USDC", "PYUSD"}},
	{"TON", []any{"USDT"}},
}

func TestCreateRefusesPairsTheTableLacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	create := func(network, token string) response {
		body := map[string]any{"amount": 10, "external_ref": "u", "network": network}
		if token != "" {
			body["token"] = token
		}
		return e.call(key, "POST", "/v1/payments", body)
	}
	requireError(t, create("BASE", ""), http.StatusBadRequest, "USDT is not supported on BASE")
	requireError(t, create("BASE", "PYUSD"), http.StatusBadRequest, "PYUSD is not supported on BASE")
	requireError(t, create("TRC20", "DAI"), http.StatusBadRequest, "DAI is not supported on TRC20")

	// Every other pair the table lacks, by the same rule.
	served := map[paywatch.Pair]bool{}
	for _, p := range paywatch.Pairs() {
		served[p] = true
	}
	refused := 0
	for _, row := range newPairsTokens {
		for _, token := range []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI, paywatch.PYUSD} {
			p := paywatch.Pair{Network: paywatch.Network(row.network), Token: token}
			if served[p] {
				continue
			}
			refused++
			requireError(t, create(row.network, string(token)), http.StatusBadRequest, string(token)+" is not supported on "+row.network)
		}
	}
	assert.Equal(t, 8*4-21, refused, "21 pairs are served")
}

func TestCreateOnTheNewPairs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	// A minimum of one wei, so that the smallest DAI amount is creatable.
	key := e.merchant("shop", "pro", map[string]any{"minAmount": "0.000000000000000001"}, hdWallet())
	for i, c := range []struct {
		network, token string
		amount         jsonNumber
		shown          string // the amount as the API and the page write it
	}{
		{"BASE", "DAI", "1000000000000.000000000000000001", "1000000000000.000000000000000001"}, // 10^12 DAI and one wei: 31 digits
		{"BASE", "DAI", "1e12", "1000000000000.00"},
		{"BASE", "DAI", "0.000000000000000001", "0.000000000000000001"}, // the smallest DAI amount
		{"BASE", "DAI", "25.500000000000000000", "25.50"},               // trailing zeros do not count
		{"BASE", "USDC", "10", "10.00"},
		{"ERC20", "DAI", "0.1", "0.10"},
		{"BEP20", "DAI", "7.123456789012345678", "7.123456789012345678"},
		{"ARBITRUM", "PYUSD", "25.5", "25.50"},
		{"ERC20", "PYUSD", "0.000001", "0.000001"},
	} {
		r := e.call(key, "POST", "/v1/payments", map[string]any{
			"amount": c.amount, "external_ref": "u" + string(rune('a'+i)), "network": c.network, "token": c.token,
		})
		require.Equal(t, http.StatusCreated, r.Code, "%s %s %s: %s", c.amount, c.token, c.network, r.Raw)
		assert.Equal(t, c.network, r.str("payment.network"))
		assert.Equal(t, c.token, r.str("payment.token"))
		assert.Equal(t, c.shown, r.str("payment.amount"), "%s %s", c.amount, c.token)
		assert.Regexp(t, hexAddress, r.str("payment.address"), "an EVM address")
		id := r.str("payment.id")
		g := e.call(key, "GET", "/v1/payments/"+id, nil)
		assert.Equal(t, c.shown, g.str("payment.expected_amount"))
		assert.Equal(t, c.shown, e.payGet("/api/pay/"+id).str("amount"), "the hosted page's status")
	}

	// One decimal more than the token has is refused, as for every token.
	for _, c := range []struct {
		network, token string
		amount         jsonNumber
	}{
		{"BASE", "DAI", "0.0000000000000000001"},
		{"BASE", "DAI", "1000000000000.0000000000000000001"},
		{"ARBITRUM", "PYUSD", "25.0000001"},
		{"BASE", "USDC", "1.0000001"},
	} {
		requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": c.amount, "external_ref": "x", "network": c.network, "token": c.token}),
			http.StatusBadRequest, "Invalid request body")
	}
}

// GET /v1/config and a network-less payment's available_networks list
// every network of the table, in its order, with the tokens each serves.
func TestConfigListsTheNewPairs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, fullWallet())

	chains := e.call(key, "GET", "/v1/config", nil).get("chains").([]any)
	p := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 20, "external_ref": "u"})
	require.Equal(t, http.StatusCreated, p.Code, p.Raw)
	nets := p.get("payment.available_networks").([]any)
	require.Len(t, chains, len(newPairsTokens))
	require.Len(t, nets, len(newPairsTokens))
	for i, row := range newPairsTokens {
		c, n := chains[i].(map[string]any), nets[i].(map[string]any)
		assert.Equal(t, row.network, c["chain"])
		assert.Equal(t, row.tokens, c["tokens"], row.network)
		assert.Equal(t, row.network, n["network"])
		assert.Equal(t, row.tokens, n["tokens"], row.network)
	}
	base := map[string]any{"name": "Base", "tokens": []any{"USDC", "DAI"}, "confirmations": jsonNumber("10"), "explorer": "https://basescan.org"}
	base["chain"] = "BASE"
	assert.Equal(t, base, chains[5])
	delete(base, "chain")
	base["network"] = "BASE"
	assert.Equal(t, base, nets[5])

	// The table is the one source: the list follows it.
	for i, info := range paywatch.Networks() {
		assert.Equal(t, string(info.Network), chains[i].(map[string]any)["chain"])
	}
}

// The hosted page offers every pair of the table and nothing else, and a
// DAI payment shows its amount as a USDT one on BEP20 (also 18 decimals)
// does: every significant digit, no trailing zeros past the second.
func TestPaymentPageOffersTheNewPairs(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // the network choice goes through the workflow
	key := e.merchant("shop", "pro", nil, fullWallet())
	id := e.createPayment(key, map[string]any{"amount": 25.5, "external_ref": "u"})

	page := e.payGet("/" + id).Raw
	for _, p := range paywatch.Pairs() {
		assert.Contains(t, page, `name="pair" value="`+string(p.Network)+":"+string(p.Token)+`"`)
	}
	for _, p := range []string{"BASE:USDT", "BASE:PYUSD", "TRC20:DAI", "TRC20:PYUSD", "BEP20:PYUSD", "POLYGON:PYUSD"} {
		assert.NotContains(t, page, p)
	}
	assert.Contains(t, page, "<legend>Base</legend>")
	assert.Contains(t, page, `aria-label="DAI on Base"`)
	assert.Contains(t, page, "<title>Payment to Shop shop: 25.50 USDT / USDC / DAI / PYUSD</title>")

	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "BASE", "token": "USDT"}),
		http.StatusBadRequest, "USDT is not supported on BASE")
	r := e.selectNetwork(id, nextIP(), map[string]any{"network": "BASE", "token": "DAI"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "BASE", r.str("network"))
	assert.Equal(t, "DAI", r.str("token"))
	assert.Equal(t, "25.50", r.str("amount"))

	page = e.payGet("/" + id).Raw
	assert.Contains(t, page, `<span data-f="amount">25.50</span> <span data-f="token">DAI</span>`)
	assert.Contains(t, page, `Deposit address on <span data-f="network_name">Base</span>`)
	w := parseEIP681(t, e.walletLinkOf(id))
	assert.Equal(t, int64(8453), w.chainID)
	assert.Equal(t, paywatch.DefaultContract(paywatch.BASE, paywatch.DAI), w.target)
	assert.Equal(t, []string{"25500000000000000000"}, w.params["uint256"])
	de := e.payCall(request{method: "GET", path: "/" + id + "?lang=de"}).Raw
	assert.Contains(t, de, `<span data-f="amount">25,50</span> <span data-f="token">DAI</span>`)

	// The same amount of USDT on BEP20, 18 decimals too, reads the same.
	bsc := e.createPayment(key, map[string]any{"amount": 25.5, "external_ref": "v", "network": "BEP20"})
	assert.Contains(t, e.payGet("/"+bsc).Raw, `<span data-f="amount">25.50</span> <span data-f="token">USDT</span>`)
	// And a DAI amount keeps all its 18 decimals.
	dai := e.createPayment(key, map[string]any{"amount": jsonNumber("0.123456789012345678"), "external_ref": "w", "network": "POLYGON", "token": "DAI"})
	assert.Contains(t, e.payGet("/"+dai).Raw, `<span data-f="amount">0.123456789012345678</span> <span data-f="token">DAI</span>`)
}
