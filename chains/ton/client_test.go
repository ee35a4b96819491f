package ton_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
	"github.com/paywatch/paywatch/chains/ton"
)

// USDT's jetton master on TON (docs.ton.org/ecosystem/appkit/jettons).
const usdt = "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs"

func fixture(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", path))
	require.NoError(t, err)
	return raw
}

// The client asks TON Center's API v3 as its code reads requests
// (testdata/FACTS.md §5: one masterchain block by workchain, shard and
// seqno; transactions by account, newest first, hashes in hex; the key
// in X-API-Key) and reads its answers; a rate limit, in the status or in
// TON Center's body, is ErrRateLimited with its Retry-After; an endpoint
// that fails is passed over; a key never shows in an error.
func TestClientReadsTONCenter(t *testing.T) {
	info := fixture(t, "testnet/masterchainInfo_2024-07.json")
	var asked []string
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "key-123" {
			http.Error(w, `{"ok":false,"error":"API key does not exist"}`, http.StatusUnauthorized)
			return
		}
		asked = append(asked, r.URL.RequestURI())
		q := r.URL.Query()
		switch r.URL.Path {
		case "/api/v3/masterchainInfo":
			_, _ = w.Write(info)
		case "/api/v3/blocks":
			assert.Equal(t, "-1", q.Get("workchain"))
			assert.Equal(t, "8000000000000000", q.Get("shard"))
			assert.Equal(t, "21074707", q.Get("seqno"))
			_, _ = w.Write([]byte(`{"blocks":[]}`))
		case "/api/v3/transactions":
			assert.Equal(t, strings.Repeat("ab", 32), q.Get("hash"), "hex: a + in base64 would read as a space")
			_, _ = w.Write([]byte(`{"transactions":[],"address_book":{}}`))
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
	last, first, err := c.Masterchain(ctx)
	require.NoError(t, err, "past the endpoint that is down")
	assert.EqualValues(t, -3, last.GlobalID, "the recorded testnet answer")
	assert.Positive(t, last.Seqno)
	assert.Less(t, first.Seqno, last.Seqno)
	_, found, err := c.Block(ctx, 21074707)
	require.NoError(t, err)
	assert.False(t, found, "not indexed: an empty list")
	_, found, err = c.Transaction(ctx, strings.Repeat("ab", 32))
	require.NoError(t, err)
	assert.False(t, found)
	assert.Len(t, asked, 3)

	// Only the endpoint that is down: its key is not in the error.
	c, err = ton.Dial([]string{down.URL + "/api/v3?api_key=secret-456"}, nil, nil)
	require.NoError(t, err)
	_, _, err = c.Masterchain(ctx)
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
		_, _, err = c.Masterchain(ctx)
		assert.ErrorIs(t, err, chainapi.ErrRateLimited, "status %d", status)
		wait, ok := chainapi.RetryAfterOf(err)
		assert.True(t, ok)
		assert.InDelta(t, 7, wait.Seconds(), 1)
		limited.Close()
	}
	// Any other refusal sent with 200 is an error, never an empty answer.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":false,"error":"LITE_SERVER_UNKNOWN: cannot load block","code":500}`))
	}))
	defer refusing.Close()
	c, err = ton.Dial([]string{refusing.URL + "/api/v3"}, nil, nil)
	require.NoError(t, err)
	_, found, err = c.Transaction(ctx, strings.Repeat("ab", 32))
	assert.ErrorContains(t, err, "cannot load block")
	assert.False(t, found)

	_, err = ton.Dial([]string{"toncenter.com/api/v3"}, nil, nil)
	assert.ErrorContains(t, err, "want http(s)://")
}
