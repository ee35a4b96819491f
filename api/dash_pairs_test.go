package api_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// The networks and tokens of the dashboard's forms come from the one
// table (paywatch.Networks, paywatch.Pairs): BASE, DAI and PYUSD show
// wherever the first five do, with no page listing them by hand.

var optionValue = regexp.MustCompile(`<option value="([^"]*)"( selected)?>([^<]*)</option>`)

// options returns the values of the select with id, the selected one
// marked "*value".
func options(body, id string) []string {
	var out []string
	for _, m := range optionValue.FindAllStringSubmatch(section(body, id, "select"), -1) {
		if m[2] != "" {
			m[1] = "*" + m[1]
		}
		out = append(out, m[1])
	}
	return out
}

// The new-link form offers every token of the table in its order, and a
// pair the table does not serve is refused with the API's message, shown
// by the form, which keeps what was chosen; nothing is created.
func TestDashboardLinkFormOffersTheTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("lpr@example.com", "lpr")
	p := b.get("/dashboard/p/lpr/links")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Equal(t, []string{"*", "USDT", "USDC", "DAI", "PYUSD"}, options(p.Body, "token"))
	assert.Equal(t, []string{"*", "TRC20", "BEP20", "ERC20", "POLYGON", "ARBITRUM", "BASE", "SOLANA", "TON"}, options(p.Body, "network"))
	assert.Contains(t, p.Body, `<option value="PYUSD">PYUSD (PayPal USD)</option>`)
	assert.Contains(t, p.Body, `<option value="BASE">Base</option>`)

	p = b.post("/dashboard/p/lpr/links", map[string]string{"slug": "pp", "title": "PayPal", "amount": "5", "token": "PYUSD", "network": "BASE"})
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, section(p.Body, "error", "p"), "PYUSD is not supported on BASE")
	form := section(p.Body, "link-form", "form")
	assert.Contains(t, form, `aria-describedby="link-form-error"`)
	assert.Contains(t, section(form, "link-form-error", "p"), "PYUSD is not supported on BASE", "the message is by the form too")
	assert.Contains(t, options(form, "token"), "*PYUSD", "the form keeps what was chosen")
	assert.Contains(t, options(form, "network"), "*BASE")
	assert.Contains(t, p.Body, "No payment links yet.")

	p = b.post("/dashboard/p/lpr/links", map[string]string{"slug": "dai", "title": "Dai", "amount": "5", "token": "DAI", "network": "BASE"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, section(p.Body, "links", "table"), "DAI / BASE")
	assert.NotContains(t, p.Body, `id="link-form-error"`)

	// A deployment that serves fewer networks offers only their tokens.
	e = newEnv(t, envOptions{noWorkflows: true, networks: []paywatch.Network{paywatch.TRC20, paywatch.BASE}})
	b = e.browser(t)
	b.owner("lpf@example.com", "lpf")
	p = b.get("/dashboard/p/lpf/links")
	assert.Equal(t, []string{"*", "USDT", "USDC", "DAI"}, options(p.Body, "token"))
	assert.Equal(t, []string{"*", "TRC20", "BASE"}, options(p.Body, "network"))
}

// The wallet page names the networks an xPub serves from the table, BASE
// among the evm ones: the preview's addresses are those a BASE payment
// gets. The static-address form takes BASE addresses.
func TestDashboardWalletServesBase(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	apiKey := b.owner("wbs@example.com", "wbs")
	p := b.get("/dashboard/p/wbs/wallet")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, section(p.Body, "family-evm", "legend"), "EVM (BEP20, ERC20, POLYGON, ARBITRUM, BASE)")
	assert.Contains(t, section(p.Body, "family-tron", "legend"), "Tron (TRC20)")
	assert.Contains(t, p.Body, `<label for="addresses_BASE">Base</label>`)

	p = b.post("/dashboard/p/wbs/wallet", map[string]string{"action": "preview", "xpub_evm": testXPubEVM})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, section(p.Body, "family-evm", "legend"), "BASE")
	preview := regexp.MustCompile(`<code>(0x[0-9a-fA-F]{40})</code>`).FindAllStringSubmatch(section(p.Body, "preview-evm", "ol"), -1)
	require.Len(t, preview, 3, p.Body)
	assert.Equal(t, evmAddrs[1:], []string{preview[0][1], preview[1][1]})

	// Saved, the xPub gives a BASE payment the preview's first address,
	// and an ERC20 payment the next one: one derivation for the family.
	key := e.merchant("wbh", "pro", nil, hdWallet())
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "a", "network": "BASE", "token": "DAI"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, preview[0][1], r.str("payment.address"))
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "b", "network": "ERC20", "token": "DAI"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, preview[1][1], r.str("payment.address"))

	// A static BASE address is registered, listed under Base, and taken
	// by a pool payment on BASE.
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/wbs", map[string]any{"address_mode": "pool", "pool_matching": "txid"}).Code)
	b.get("/dashboard/p/wbs/wallet")
	p = b.post("/dashboard/p/wbs/wallet", map[string]string{"action": "save", "addresses_BASE": strings.ToLower(evmAddrs[0]),
		"password": dashPassword, "new_protection_key": "base-guard-key"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, section(p.Body, "registered-BASE", "ul"), evmAddrs[0], "checksummed")
	r = e.call(apiKey, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "c", "network": "BASE", "token": "USDC"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, evmAddrs[0], r.str("payment.address"))
}

// The payment list filters by network and by token, with the table's
// choices and "any" by default: only DAI on BASE, say. The filters show
// in the summary, hold in the list's poll and its pages, and an unknown
// value or a pair the table does not serve gets its message on the form,
// never a 500. GET /v1/payments takes no such filter: unchanged.
func TestDashboardPaymentNetworkAndTokenFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("npf@example.com", "npf")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/npf/wallet", hdWallet()).Code)
	ids := map[string]string{}
	for _, pair := range []paywatch.Pair{
		{Network: paywatch.BASE, Token: paywatch.DAI}, {Network: paywatch.BASE, Token: paywatch.USDC},
		{Network: paywatch.ERC20, Token: paywatch.DAI}, {Network: paywatch.TRC20, Token: paywatch.USDT},
	} {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": pair.String(), "network": pair.Network, "token": pair.Token})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		ids[pair.String()] = r.str("payment.id")
	}
	rows := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`data-id="([0-9a-f-]{36})"`).FindAllStringSubmatch(section(body, "payments", "table"), -1) {
			for pair, id := range ids {
				if id == m[1] {
					out = append(out, pair)
				}
			}
		}
		return out
	}

	p := b.get("/dashboard/p/npf/payments")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Equal(t, []string{"*", "TRC20", "BEP20", "ERC20", "POLYGON", "ARBITRUM", "BASE", "SOLANA", "TON"}, options(p.Body, "network"))
	assert.Equal(t, []string{"*", "USDT", "USDC", "DAI", "PYUSD"}, options(p.Body, "token"))
	assert.Contains(t, p.Body, `<option value="BASE">Base</option>`)
	assert.Contains(t, p.Body, `<span id="filters-active">none</span>`)
	assert.Len(t, rows(p.Body), 4)

	p = b.get("/dashboard/p/npf/payments?network=BASE&token=DAI&status=&created_after=")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Equal(t, []string{"DAI on BASE"}, rows(p.Body))
	assert.Contains(t, p.Body, `<span id="filters-active">DAI on BASE</span>`)
	assert.Contains(t, options(p.Body, "network"), "*BASE", "the form shows the filters in force")
	assert.Contains(t, options(p.Body, "token"), "*DAI")
	assert.Contains(t, p.Body, `id="payments-total" class="count">1 payment<`)
	poll := regexp.MustCompile(`data-rows-url="([^"]+)"`).FindStringSubmatch(p.Body)
	require.NotNil(t, poll)
	u := html.UnescapeString(poll[1])
	assert.Equal(t, "/dashboard/p/npf/payments/status?network=BASE&token=DAI", u)
	assert.Equal(t, []string{"DAI on BASE"}, rows(b.send(http.MethodGet, u, nil).Body), "the poll keeps the filters")

	p = b.get("/dashboard/p/npf/payments?network=BASE&status=pending")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.ElementsMatch(t, []string{"DAI on BASE", "USDC on BASE"}, rows(p.Body))
	assert.Contains(t, p.Body, `<span id="filters-active">pending · any token on BASE</span>`)
	p = b.get("/dashboard/p/npf/payments?token=DAI&limit=1")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, `<span id="filters-active">DAI on any network</span>`)
	assert.Contains(t, p.Body, `id="payments-total" class="count">2 payments<`)
	next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(p.Body)
	require.NotNil(t, next, "a link to the next page")
	assert.Contains(t, html.UnescapeString(next[1]), "token=DAI", "the pages keep the filters")
	p = b.get("/dashboard/p/npf/payments?network=POLYGON")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "No payments match these filters.")

	for query, msg := range map[string]string{
		"network=NOPE":                `unknown network "NOPE"`,
		"network=base":                `unknown network "base": network names are uppercase, e.g. BASE`,
		"network=TON&token=USDC":      "USDC is not supported on TON",
		"token=EURC":                  `unknown token "EURC"`,
		"network=BASE&token=PYUSD":    "PYUSD is not supported on BASE",
		"network=TRC20&token=DAI":     "DAI is not supported on TRC20",
		"network=%3Cb%3E&token=DAI":   `unknown network "<b>"`,
		"status=lost&network=BASE":    paywatch.MsgInvalidStatus,
		"network=BASE&created_after=": "",
	} {
		p := b.get("/dashboard/p/npf/payments?" + query)
		if msg == "" {
			assert.Equal(t, http.StatusOK, p.Code, query)
			continue
		}
		assert.Equal(t, http.StatusBadRequest, p.Code, query)
		assert.Equal(t, `id="error" role="alert">`+html.EscapeString(msg), section(p.Body, "error", "p"), query)
		assert.Contains(t, p.Body, `<details class="fold" id="filters" open>`, "%s: the form is open with the message", query)
		assert.NotContains(t, p.Body, "data-rows-url", query)
		assert.NotContains(t, p.Body, "<b>", query)
		live := b.send(http.MethodGet, "/dashboard/p/npf/payments/status?"+query, nil)
		assert.Equal(t, http.StatusBadRequest, live.Code, "%s: the poll is refused, not a 500", query)
	}

	// The API's list ignores the dashboard's filters, as it always has.
	r := e.call(key, "GET", "/v1/payments?network=BASE&token=DAI", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "4", fmt.Sprint(r.get("pagination.total")))
	r = e.call(key, "GET", "/v1/payments?network=NOPE", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "4", fmt.Sprint(r.get("pagination.total")))
}

// A BASE payment's transaction links to basescan.org, as the table says;
// a network a devnet chain serves gets no link, as before.
func TestDashboardBaseTransactionLinksToBasescan(t *testing.T) {
	t.Parallel()
	hash := "0x" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		devnet []paywatch.Network
		linked bool
	}{{nil, true}, {[]paywatch.Network{paywatch.BASE}, false}} {
		e := newEnv(t, envOptions{noWorkflows: true, devnetNetworks: tc.devnet})
		b := e.browser(t)
		key := b.owner("bsc@example.com", "bsc")
		require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/bsc/wallet", hdWallet()).Code)
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "a", "network": "BASE", "token": "DAI"})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		pay, err := e.store.GetPayment(t.Context(), projectID(t, e, "bsc"), r.str("payment.id"))
		require.NoError(t, err)
		_, err = e.store.SavePaymentState(t.Context(), paywatch.PaymentState{
			PaymentID: pay.ID, Status: paywatch.StatusPaid, Network: pay.Network, Token: pay.Token, Address: pay.Address,
			Amount: pay.Amount, PaidAmount: pay.Amount, TxHash: hash, ExpiresAt: pay.ExpiresAt, Version: 1,
			Transactions: []paywatch.Transaction{{TxHash: hash, BlockNumber: 7, BlockHash: "0x" + strings.Repeat("cd", 32),
				From: evmAddrs[0], Amount: pay.Amount, Confirmations: 10, Confirmed: true}},
		})
		require.NoError(t, err)
		p := b.get("/dashboard/p/bsc/payments/" + pay.ID)
		require.Equal(t, http.StatusOK, p.Code, p.Body)
		assert.Contains(t, p.Body, hash[:8])
		assert.Equal(t, tc.linked, strings.Contains(p.Body, `href="https://basescan.org/tx/`+hash+`"`), "devnet %v", tc.devnet)
		assert.Equal(t, tc.linked, strings.Contains(p.Body, "basescan.org"), "devnet %v", tc.devnet)
	}
}
