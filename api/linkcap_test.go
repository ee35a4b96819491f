package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/store"
)

const capacityFormError = `<p class="error" role="alert" id="form-error">Payment capacity exceeded. Please try again later.</p>`

func TestPaymentLinkCapacityPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "hoodie", "title": "Hoodie", "amount": 25, "network": "TRC20"}).Code)

	var ids []string
	for i := range store.MaxOpenLinkPayments {
		ids = append(ids, paymentIDOf(t, e.submitLink("hoodie", url.Values{"email": {"b" + strconv.Itoa(i) + "@example.com"}})))
	}
	// The next buyer is told to come back, on the form, and no payment or
	// address is made.
	r := e.submitLink("hoodie", url.Values{"email": {"late@example.com"}, "name": {"Late"}})
	requireHTML(t, r, http.StatusTooManyRequests)
	assert.Contains(t, r.Raw, capacityFormError)
	assert.Contains(t, r.Raw, `value="late@example.com"`, "what the buyer typed is kept")
	var n int
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&n))
	assert.Equal(t, store.MaxOpenLinkPayments, n)
	requireHTML(t, e.payGet("/l/hoodie"), http.StatusOK)

	// A payment that ends frees a slot.
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE payments SET status = 'expired' WHERE id = $1`, ids[0])
	require.NoError(t, err)
	paymentIDOf(t, e.submitLink("hoodie", url.Values{"email": {"late@example.com"}}))
}

// Link submissions count apart from the merchant's own API calls, so
// that anyone opening a link cannot use up the merchant's API for the day
// (issue 28, item 14); one client IP makes at most
// LinkPaymentsPerIPPerHour through links in an hour.
func TestPaymentLinkSubmissionsCountApartFromTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"api_calls_per_day": 3}}).Code)
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "tip", "title": "Tip jar", "network": "TRC20"}).Code)

	for range 5 {
		paymentIDOf(t, e.submitLink("tip", url.Values{"amount": {"5"}}))
	}
	for range 3 {
		require.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/payments", nil).Code, "the owner's calls are the owner's")
	}
	requireError(t, e.call(key, "GET", "/v1/payments", nil), http.StatusTooManyRequests,
		"Daily API call limit exceeded. Upgrade your plan for unlimited access.")
	paymentIDOf(t, e.submitLink("tip", url.Values{"amount": {"5"}}))

	// One client, across two links (each holds at most 20 open payments).
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "tip2", "title": "Tip jar 2", "network": "TRC20"}).Code)
	ip := "198.51.100.77"
	for i := range api.LinkPaymentsPerIPPerHour {
		r := e.payCall(request{method: "POST", path: "/l/" + []string{"tip", "tip2"}[i%2], body: url.Values{"amount": {"5"}}, ip: ip})
		require.Equal(t, http.StatusSeeOther, r.Code, "payment %d: %s", i, r.Raw)
	}
	r := e.payCall(request{method: "POST", path: "/l/tip2", body: url.Values{"amount": {"5"}}, ip: ip})
	requireHTML(t, r, http.StatusTooManyRequests)
	assert.Contains(t, r.Raw, paywatch.MsgTooManyRequests)
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
}

func TestWalletUnusedRunAndDerivedAddresses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, nil)
	r := e.op("PUT", "/v1/projects/shop/wallet", hdWallet())
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, map[string]any{"evm": jsonNumber("0"), "tron": jsonNumber("0")}, r.get("wallet.unused_run"))

	var addrs []string
	for i := range 3 {
		pr := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u" + strconv.Itoa(i), "network": "TRC20"})
		require.Equal(t, http.StatusCreated, pr.Code, pr.Raw)
		addrs = append(addrs, pr.str("payment.address"))
	}
	require.Equal(t, testTronIndex1, addrs[0])
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE derived_addresses SET received = 10000000 WHERE address = $1`, addrs[0])
	require.NoError(t, err)
	r = e.op("PUT", "/v1/projects/shop/wallet", map[string]any{})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, map[string]any{"evm": jsonNumber("0"), "tron": jsonNumber("2")}, r.get("wallet.unused_run"))

	// Another project cannot register one of these deposit addresses.
	e.merchant("other", "pro", map[string]any{"address_mode": "pool", "pool_matching": "txid"}, nil)
	requireError(t, e.op("PUT", "/v1/projects/other/wallet", staticWallet("TRC20", addrs[1])), http.StatusConflict,
		"addresses.TRC20: "+addrs[1]+" is already a deposit address derived by another project's xPub")
}
