package ton_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
	"github.com/paywatch/paywatch/chains/ton"
)

// The client asks TON Center's API v3 as its documentation says (the
// owners, the master, direction in, oldest first, logical-time bounds;
// the key in X-API-Key) and reads its answers; a rate limit, in the
// status or in TON Center's body, is ErrRateLimited with its Retry-After;
// an endpoint that fails is passed over; a key never shows in an error.
func TestClientReadsTONCenter(t *testing.T) {
	transfers := fixture(t, "mainnet/jetton_transfers_usdt_2024-05.json")
	info := fixture(t, "testnet/masterchainInfo_2024-07.json")
	var asked []string
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "key-123" {
			http.Error(w, `{"ok":false,"error":"API key does not exist"}`, http.StatusUnauthorized)
			return
		}
		asked = append(asked, r.URL.RequestURI())
		switch r.URL.Path {
		case "/api/v3/jetton/transfers":
			q := r.URL.Query()
			assert.Equal(t, []string{"0:169C9367C01C8B4E1471962DB32E99E3E4473AAFB47E1A6A643A4177A6758F16"}, q["owner_address"])
			assert.Equal(t, usdt, q.Get("jetton_master"))
			assert.Equal(t, "in", q.Get("direction"))
			assert.Equal(t, "asc", q.Get("sort"))
			assert.Equal(t, "46760679000000", q.Get("start_lt"))
			assert.Equal(t, "1000", q.Get("limit"))
			_, _ = w.Write(transfers)
		case "/api/v3/masterchainInfo":
			_, _ = w.Write(info)
		default:
			http.NotFound(w, r)
		}
	}))
	defer node.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer down.Close()

	keyed := http.Header{"X-Api-Key": {"key-123"}}
	c, err := ton.Dial([]string{down.URL + "/api/v3?api_key=secret-456", node.URL + "/api/v3"}, []http.Header{nil, keyed}, nil)
	require.NoError(t, err)
	ctx := context.Background()
	credits, rows, err := c.TransfersTo(ctx, ton.TransferQuery{
		Owners: []string{"0:169C9367C01C8B4E1471962DB32E99E3E4473AAFB47E1A6A643A4177A6758F16"}, Master: usdt, FromLT: 46760679000000,
	})
	require.NoError(t, err, "past the endpoint that is down")
	assert.Equal(t, 2, rows)
	require.Len(t, credits, 2)
	assert.Equal(t, "17000000", credits[0].Amount.String())
	seqno, err := c.MasterchainSeqno(ctx)
	require.NoError(t, err)
	assert.Positive(t, seqno)
	assert.Len(t, asked, 2)

	// Only the endpoint that is down: its key is not in the error.
	c, err = ton.Dial([]string{down.URL + "/api/v3?api_key=secret-456"}, nil, nil)
	require.NoError(t, err)
	_, err = c.MasterchainSeqno(ctx)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret-456")

	// TON Center's rate limit: HTTP 429, or its body's code with 200.
	for _, status := range []int{http.StatusTooManyRequests, http.StatusOK} {
		limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"ok":false,"result":"Ratelimit exceed","code":429}`))
		}))
		c, err = ton.Dial([]string{limited.URL + "/api/v3"}, nil, nil)
		require.NoError(t, err)
		_, err = c.MasterchainSeqno(ctx)
		assert.ErrorIs(t, err, chainapi.ErrRateLimited, "status %d", status)
		wait, ok := chainapi.RetryAfterOf(err)
		assert.True(t, ok)
		assert.InDelta(t, 7, wait.Seconds(), 1)
		limited.Close()
	}
	_, err = ton.Dial([]string{"toncenter.com/api/v3"}, nil, nil)
	assert.ErrorContains(t, err, "want http(s)://")
}

// More transfers than a page: every one is read, across pages, once.
func TestClientPagesThroughTransfers(t *testing.T) {
	transfers := fixture(t, "mainnet/jetton_transfers_usdt_2024-05.json")
	var offsets []string
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		offsets = append(offsets, q.Get("offset"))
		assert.Equal(t, "2", q.Get("limit"))
		if q.Get("offset") == "4" {
			_, _ = w.Write([]byte(`{"jetton_transfers":[],"address_book":{}}`))
			return
		}
		_, _ = w.Write(transfers) // two rows a page; the same two each time
	}))
	defer node.Close()
	c, err := ton.Dial([]string{node.URL + "/api/v3"}, nil, nil)
	require.NoError(t, err)
	got, err := c.TransfersSince(context.Background(), []string{"0:169C9367C01C8B4E1471962DB32E99E3E4473AAFB47E1A6A643A4177A6758F16"}, usdt, 1, 0, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "2", "4"}, offsets, "full pages, then a short one")
	assert.Len(t, got, 2, "a transaction listed on two pages is one transfer")
}
