package api_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// POST {pay_url}/api/pay/{id}/select-network: the success answer, then one
// test per row of interface.md's table.

func TestSelectNetworkAssignsTheAddressOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u", "expires_in": 600})
	before := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, before.Code)

	r := e.selectNetwork(id, nextIP(), map[string]any{"network": "ERC20", "token": "USDC"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["success"])
	assert.Equal(t, testEVMIndex1, r.str("address"))
	assert.Equal(t, "ERC20", r.str("network"))
	assert.Equal(t, "USDC", r.str("token"))
	assert.Equal(t, "20.00", r.str("amount"))
	qr, err := paywatch.QRCodeDataURI(testEVMIndex1)
	require.NoError(t, err)
	assert.Equal(t, qr, r.str("qr_code"))

	after := e.payGet("/api/pay/" + id)
	assert.Equal(t, before.str("expires_at"), after.str("expires_at"), "selecting never extends the window")
	assert.Equal(t, testEVMIndex1, after.str("address"))
	assert.Equal(t, "pending", after.str("status"))
	assert.NotContains(t, after.Body, "available_networks")
	g := e.call(key, "GET", "/v1/payments/"+id, nil)
	assert.Equal(t, "ERC20", g.str("payment.network"))
	assert.Equal(t, before.str("expires_at"), g.str("payment.expires_at"))
	assert.NotContains(t, g.Body["payment"], "awaiting_network")

	// Two customers' tabs race: exactly one selection wins.
	other := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	codes := make([]int, 2)
	parallel(2, func(i int) {
		codes[i] = e.selectNetwork(other, nextIP(), map[string]any{"network": []string{"TRC20", "POLYGON"}[i], "token": "USDT"}).Code
	})
	assert.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, codes)
}

func TestSelectNetworkFormFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})

	// Without JavaScript the choice is a plain form post that redirects
	// back to the page.
	r := e.payCall(request{method: "POST", path: "/" + id + "/select-network", body: url.Values{"pair": {"TRC20:USDT"}}, ip: nextIP()})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Raw)
	assert.Equal(t, "/"+id, r.Header.Get("Location"))
	page := e.payGet("/" + id).Raw
	assert.Contains(t, page, `data-state="pending"`)
	assert.Contains(t, page, testTronIndex1)
	assert.Contains(t, page, `src="data:image/png;base64,`)

	// A refusal shows the page with the message and the status.
	r = e.payCall(request{method: "POST", path: "/" + id + "/select-network", body: url.Values{"network": {"TRC20"}, "token": {"USDT"}}, ip: nextIP()})
	requireHTML(t, r, http.StatusConflict)
	assert.Contains(t, r.Raw, `<p id="error" class="error" role="alert">Network already selected for this payment</p>`)
	r = e.payCall(request{method: "POST", path: "/" + id + "/select-network", body: url.Values{}, ip: nextIP()})
	requireHTML(t, r, http.StatusBadRequest)
	assert.Contains(t, r.Raw, "network and token are required")
}

func TestSelectNetworkRequiresNetworkAndToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	for _, body := range []any{
		map[string]any{},
		map[string]any{"network": "TRC20"},
		map[string]any{"token": "USDT"},
		map[string]any{"network": "TRC20", "token": nil},
		map[string]any{"network": "", "token": "USDT"},
		map[string]any{"network": " ", "token": "USDT"},
	} {
		requireError(t, e.selectNetwork(id, nextIP(), body), http.StatusBadRequest, "network and token are required")
		e.clock.Add(30 * time.Second) // stay under 3 per minute for the payment
	}
	requireError(t, e.selectNetwork(id, nextIP(), "{"), http.StatusBadRequest, "Invalid request body")
	assert.Nil(t, e.payGet("/api/pay/" + id).Body["network"], "nothing was selected")
}

func TestSelectNetworkUnsupportedPair(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "TRC20", "token": "USDC"}),
		http.StatusBadRequest, "USDC is not supported on TRC20")
	assert.Nil(t, e.payGet("/api/pay/" + id).Body["network"])
}

func TestSelectNetworkNotAvailableForMerchant(t *testing.T) {
	t.Parallel()
	// The service offers no POLYGON, and the wallet has no evm xPub.
	e := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20, paywatch.ERC20}})
	key := e.merchant("shop", "pro", nil, map[string]any{"xpubs": map[string]any{"tron": testXPubTron}})
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})

	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "ERC20", "token": "USDT"}),
		http.StatusBadRequest, "USDT on ERC20 is not available for this merchant")
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "POLYGON", "token": "USDC"}),
		http.StatusBadRequest, "USDC on POLYGON is not available for this merchant")
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "SOLANA", "token": "USDT"}),
		http.StatusBadRequest, "USDT on SOLANA is not available for this merchant")
	assert.Nil(t, e.payGet("/api/pay/" + id).Body["network"])
	e.clock.Add(time.Minute) // past the limit of 3 per minute for the payment
	// Names are exact and uppercase, as in POST /v1/payments.
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "trc20", "token": "USDT"}),
		http.StatusBadRequest, "Invalid request body")
	assert.Nil(t, e.payGet("/api/pay/" + id).Body["network"])
	e.clock.Add(time.Minute)
	// What is available still works.
	r := e.selectNetwork(id, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, testTronIndex1, r.str("address"))
}

func TestSelectNetworkNoAddressesAvailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "dedicated"}, staticWallet("TRC20", tronAddrs[0]))
	// Alice's payment takes the only static address for good.
	e.createPayment(key, map[string]any{"amount": 20, "external_ref": "alice", "network": "TRC20"})
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "bob"})
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusBadRequest, "No addresses available for this network")
	s := e.payGet("/api/pay/" + id)
	assert.Nil(t, s.Body["network"])
	assert.Equal(t, "pending", s.str("status"), "the payment can still get a network")
}

func TestSelectNetworkMerchantNotAccepting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	other := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})

	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/shop", map[string]any{"active": false}).Code)
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusBadRequest, "This merchant is currently not accepting payments")
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/shop", map[string]any{"active": true}).Code)

	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"status": "suspended"}).Code)
	requireError(t, e.selectNetwork(other, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusBadRequest, "This merchant is currently not accepting payments")
	assert.Nil(t, e.payGet("/api/pay/" + other).Body["network"])
}

func TestSelectNetworkPaymentNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := map[string]any{"network": "TRC20", "token": "USDT"}
	requireError(t, e.selectNetwork("00000000-0000-0000-0000-000000000000", nextIP(), body), http.StatusNotFound, "Payment not found")
	requireError(t, e.selectNetwork("not-a-payment", nextIP(), body), http.StatusNotFound, "Payment not found")
	requireError(t, e.selectNetwork("00000000-0000-0000-0000-00000000000%27", nextIP(), body), http.StatusNotFound, "Payment not found")
}

func TestSelectNetworkNotPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	c := e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, c.Code, c.Raw)
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusConflict, "Payment is not in pending state")
	assert.Equal(t, "cancelled", e.payGet("/api/pay/"+id).str("status"))
}

func TestSelectNetworkAlreadySelected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	require.Equal(t, http.StatusOK, e.selectNetwork(id, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}).Code)
	for _, body := range []map[string]any{{"network": "ERC20", "token": "USDT"}, {"network": "TRC20", "token": "USDT"}} {
		requireError(t, e.selectNetwork(id, nextIP(), body), http.StatusConflict, "Network already selected for this payment")
	}
	// A payment created with a network was selected from the start.
	fixed := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u", "network": "POLYGON"})
	requireError(t, e.selectNetwork(fixed, nextIP(), map[string]any{"network": "ERC20", "token": "USDT"}),
		http.StatusConflict, "Network already selected for this payment")
	assert.Equal(t, "TRC20", e.payGet("/api/pay/"+id).str("network"))
}

func TestSelectNetworkPaymentExpired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	// Payments created in the past (the store's clock), so their windows
	// have really ended: one a minute ago, still shown pending with its
	// workflow running, and one long enough ago that its workflow expired
	// it and ended.
	e.clock.Add(-6 * time.Minute)
	recent := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u", "expires_in": 300})
	e.clock.Add(-10 * time.Minute)
	old := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u", "expires_in": 300})
	e.clock.Add(16 * time.Minute)

	assert.Equal(t, "pending", e.payGet("/api/pay/"+recent).str("status"))
	requireError(t, e.selectNetwork(recent, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusGone, "Payment has expired")

	e.waitPayStatus(old, paywatch.StatusExpired, 10*time.Second)
	require.Eventually(t, func() bool { return workflowClosedNow(t, old) }, 10*time.Second, 100*time.Millisecond)
	requireError(t, e.selectNetwork(old, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusGone, "Payment has expired")
	assert.Nil(t, e.payGet("/api/pay/" + old).Body["network"])
}

func TestSelectNetworkTooManyRequestsPerIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	ids := make([]string, 7)
	for i := range ids {
		ids[i] = e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u" + strconv.Itoa(i)})
	}
	e.startOfMinute()
	const ip = "203.0.113.77"
	// Five attempts a minute per IP, whatever they ask for.
	for i := range 5 {
		requireError(t, e.selectNetwork(ids[i], ip, map[string]any{}), http.StatusBadRequest, "network and token are required")
	}
	r := e.selectNetwork(ids[5], ip, map[string]any{"network": "TRC20", "token": "USDT"})
	requireError(t, r, http.StatusTooManyRequests, "Too many requests")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)
	assert.Nil(t, e.payGet("/api/pay/" + ids[5]).Body["network"], "a refused request changes nothing")

	// Another replica shares the counter.
	replica := newEnvSharing(t, e)
	requireError(t, replica.selectNetwork(ids[6], ip, map[string]any{}), http.StatusTooManyRequests, "Too many requests")
	// Another client is not affected; the next minute starts afresh.
	require.Equal(t, http.StatusOK, e.selectNetwork(ids[5], "203.0.113.78", map[string]any{"network": "TRC20", "token": "USDT"}).Code)
	e.clock.Add(time.Minute)
	require.Equal(t, http.StatusOK, e.selectNetwork(ids[6], ip, map[string]any{"network": "TRC20", "token": "USDT"}).Code)
}

func TestSelectNetworkTooManyRequestsPerPayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20}})
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	other := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})
	e.startOfMinute()
	replica := newEnvSharing(t, e)

	// Three attempts a minute per payment, from any IPs and replicas.
	requireError(t, e.selectNetwork(id, "198.51.100.1", map[string]any{"network": "ERC20", "token": "USDT"}),
		http.StatusBadRequest, "USDT on ERC20 is not available for this merchant")
	requireError(t, replica.selectNetwork(id, "198.51.100.2", map[string]any{}), http.StatusBadRequest, "network and token are required")
	requireError(t, e.selectNetwork(id, "198.51.100.3", map[string]any{"network": "TRC20", "token": "USDC"}),
		http.StatusBadRequest, "USDC is not supported on TRC20")
	r := e.selectNetwork(id, "198.51.100.4", map[string]any{"network": "TRC20", "token": "USDT"})
	requireError(t, r, http.StatusTooManyRequests, "Too many requests")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	requireError(t, replica.selectNetwork(id, "198.51.100.5", map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusTooManyRequests, "Too many requests")
	assert.Nil(t, e.payGet("/api/pay/" + id).Body["network"])

	require.Equal(t, http.StatusOK, e.selectNetwork(other, "198.51.100.6", map[string]any{"network": "TRC20", "token": "USDT"}).Code, "per payment")
	e.clock.Add(time.Minute)
	require.Equal(t, http.StatusOK, e.selectNetwork(id, "198.51.100.7", map[string]any{"network": "TRC20", "token": "USDT"}).Code)
}

func TestSelectNetworkCapacityExceeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "pool", "pool_matching": "micro_amount", "micro_amount_decimals": 1},
		staticWallet("TRC20", tronAddrs[0]))
	id := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "buyer"})
	// One decimal gives 9 offsets on the one address: 10.1 .. 10.9, all taken.
	for i := range 9 {
		e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u" + strconv.Itoa(i), "network": "TRC20"})
	}
	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"}),
		http.StatusTooManyRequests, "Payment capacity exceeded. Please try again later.")
	s := e.payGet("/api/pay/" + id)
	assert.Nil(t, s.Body["network"])
	assert.Equal(t, "10.00", s.str("amount"), "no offset was kept")
}
