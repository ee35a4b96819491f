package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// GET /v1/transfers and GET /v1/transfers/{network}/{tx_hash} count toward
// the owner's daily API calls like every /v1 call; bad filters and unknown
// transfers get their messages and change nothing (issue 27).
func TestTransfersEndpointsCountAndRefuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"api_calls_per_day": 8}}).Code)

	r := e.call(key, "GET", "/v1/transfers", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, []any{}, r.get("transfers"))
	for _, q := range []string{"unmatched=maybe", "handled=2", "network=SUI", "token=BUSD", "address=nope"} {
		requireError(t, e.call(key, "GET", "/v1/transfers?"+q, nil), http.StatusBadRequest, "Invalid transfer filter")
	}
	requireError(t, e.call(key, "GET", "/v1/transfers?created_before=yesterday", nil), http.StatusBadRequest, "Invalid created_before")
	requireError(t, e.call(key, "GET", "/v1/transfers/TRC20/"+tronHash("a"), nil), http.StatusNotFound, "Transfer not found")
	requireError(t, e.call(key, "GET", "/v1/transfers", nil), http.StatusTooManyRequests,
		"Daily API call limit exceeded. Upgrade your plan for unlimited access.")
}

// GET /v1/transfers/{network}/{tx_hash} answers the transfer's timeline,
// oldest first: seen, told (with its transfer.unmatched event's id), and
// every mark, by the API and by the owner in the dashboard, while
// "handled" is the latest mark. The list leaves the timeline out (issue
// 27, item 3).
func TestTransferTimelineOverTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	shop := newUnmatchedShop(t, e, "tln@example.com", "tln")
	var eventID string
	require.NoError(t, e.store.Pool().QueryRow(t.Context(),
		`SELECT event_id::text FROM webhook_events WHERE tx_hash = $1 AND event = 'transfer.unmatched'`, shop.another).Scan(&eventID))
	path := "/v1/transfers/TRC20/" + shop.another
	events := func(r response) []string {
		t.Helper()
		var out []string
		steps, _ := r.get("transfer.timeline").([]any)
		for _, st := range steps {
			m := st.(map[string]any)
			at, ok := m["at"].(string)
			require.True(t, ok && at != "", "every step has its time: %v", m)
			out = append(out, fmt.Sprint(m["event"], " ", m["event_id"], " ", m["by"], " ", m["note"]))
		}
		return out
	}

	r := e.call(shop.key, "GET", path, nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, []string{"seen <nil> <nil> <nil>", "told " + eventID + " <nil> <nil>"}, events(r))
	steps := r.get("transfer.timeline").([]any)
	assert.Equal(t, r.str("transfer.seen_at"), steps[0].(map[string]any)["at"], "seen when paywatch recorded it")

	r = e.call(shop.key, "POST", path+"/handled", map[string]any{"note": "Credited to order 7"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	b := shop.owner
	b.get("/dashboard/p/tln/unmatched")
	p := b.send(http.MethodPost, "/dashboard/p/tln/unmatched/handled", url.Values{"csrf": {b.csrf}, "network": {"TRC20"},
		"tx_hash": {shop.another}, "log_index": {"0"}, "note": {"Refunded instead"}})
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)

	r = e.call(shop.key, "GET", path, nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, []string{
		"seen <nil> <nil> <nil>",
		"told " + eventID + " <nil> <nil>",
		"handled <nil> api Credited to order 7",
		"handled <nil> tln@example.com Refunded instead",
	}, events(r))
	assert.Equal(t, "tln@example.com", r.str("transfer.handled.by"))
	assert.Equal(t, "Refunded instead", r.str("transfer.handled.note"))
	assert.Equal(t, "4", fmt.Sprint(r.get("transfer.timeline_total")))

	// Issue 38: the same mark again adds no step, and the timeline is
	// read a page at a time.
	for range 3 {
		r = e.call(shop.key, "POST", path+"/handled", map[string]any{"note": "Refunded instead, via api"})
		require.Equal(t, http.StatusOK, r.Code, r.Raw)
	}
	r = e.call(shop.key, "GET", path+"?timeline_limit=2&timeline_offset=3", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, []string{
		"handled <nil> tln@example.com Refunded instead",
		"handled <nil> api Refunded instead, via api",
	}, events(r), "one mark for three same requests")
	assert.Equal(t, "5", fmt.Sprint(r.get("transfer.timeline_total")))
	for _, q := range []string{"timeline_limit=0", "timeline_limit=501", "timeline_limit=x", "timeline_offset=-1"} {
		requireError(t, e.call(shop.key, "GET", path+"?"+q, nil), http.StatusBadRequest, paywatch.MsgInvalidRequestBody)
	}

	r = e.call(shop.key, "GET", "/v1/transfers", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	items := r.get("transfers").([]any)
	require.NotEmpty(t, items)
	for _, it := range items {
		assert.NotContains(t, it.(map[string]any), "timeline", "the list stays one read per page")
	}
}

// POST .../handled without log_index marks the transaction's first
// unmatched transfer: here the transaction that paid the payment also
// sent 5 USDT more to its address, and the mark used to land on the
// matched first transfer and answer 409 (issue 27).
func TestMarkHandledWithoutLogIndexFindsTheUnmatchedTransfer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	shop := newUnmatchedShop(t, e, "lix@example.com", "lix")
	five, err := paywatch.ParseAmount("5", paywatch.Decimals(paywatch.TRC20, paywatch.USDT))
	require.NoError(t, err)
	more := paywatch.Transfer{TxHash: shop.matched, LogIndex: 1, BlockNumber: 10, BlockHash: "b" + shop.matched[:8], Token: paywatch.USDT,
		From: tronAddrs[0], To: shop.address, Amount: five.Units()}
	_, err = e.store.RecordScan(t.Context(), store.ScanBatch{Network: paywatch.TRC20, Height: 41, BlockHash: "h41", Head: 41,
		Transfers: []paywatch.Transfer{more}}, nil)
	require.NoError(t, err)

	r := e.call(shop.key, "POST", "/v1/transfers/TRC20/"+shop.matched+"/handled", map[string]any{"note": "Refunded the 5"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "1", fmt.Sprint(r.get("transfer.log_index")))
	assert.Equal(t, "5.00", r.str("transfer.amount"))
	assert.Equal(t, "Refunded the 5", r.str("transfer.handled.note"))
	requireError(t, e.call(shop.key, "POST", "/v1/transfers/TRC20/"+shop.matched+"/handled", map[string]any{"log_index": 0}),
		http.StatusConflict, paywatch.MsgTransferNotUnmatched)
}
