package solana_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
	"github.com/paywatch/paywatch/chains/solana"
)

// recordedNode answers JSON-RPC from the recorded mainnet answers in
// testdata/mainnet: getGenesisHash, getSlot, getSignaturesForAddress (the
// recorded history, paged as a node pages it) and getTransaction (each
// recorded transaction by its signature; null for any other).
type recordedNode struct {
	t       *testing.T
	history *history
	txs     map[string]json.RawMessage // signature → result
	mu      sync.Mutex
	calls   map[string]int
}

func newRecordedNode(t *testing.T) *recordedNode {
	n := &recordedNode{t: t, history: recordedHistory(t), txs: map[string]json.RawMessage{}, calls: map[string]int{}}
	files, err := filepath.Glob(filepath.Join("testdata", "mainnet", "getTransaction_*_json.json"))
	require.NoError(t, err)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var answer struct {
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(raw, &answer))
		var tx struct {
			Transaction struct {
				Signatures []string `json:"signatures"`
			} `json:"transaction"`
		}
		require.NoError(t, json.Unmarshal(answer.Result, &tx))
		n.txs[tx.Transaction.Signatures[0]] = answer.Result
	}
	require.NotEmpty(t, n.txs)
	return n
}

func (n *recordedNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage   `json:"id"`
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	require.NoError(n.t, json.Unmarshal(body, &req))
	n.mu.Lock()
	n.calls[req.Method]++
	n.mu.Unlock()
	var result any
	switch req.Method {
	case "getGenesisHash":
		result = solana.MainnetGenesis
	case "getSlot":
		result = 405318600
	case "getHealth":
		result = "ok"
	case "minimumLedgerSlot":
		result = 305044000 // below the recorded history's oldest slot
	case "getTokenSupply":
		var mint string
		require.NoError(n.t, json.Unmarshal(req.Params[0], &mint))
		if mint != usdc {
			break // null: not a mint
		}
		result = map[string]any{"context": map[string]any{"slot": 405318600},
			"value": map[string]any{"amount": "1", "decimals": 6, "uiAmountString": "0.000001"}}
	case "getSignaturesForAddress":
		var opts struct {
			Before, Until string
			Limit         int
		}
		if len(req.Params) > 1 {
			require.NoError(n.t, json.Unmarshal(req.Params[1], &opts))
		}
		page, _ := n.history.page(r.Context(), opts.Before, opts.Until, opts.Limit)
		result = page
	case "getTransaction":
		var sig string
		require.NoError(n.t, json.Unmarshal(req.Params[0], &sig))
		// The node's default encoding, json, and v0 transactions.
		assert.NotContains(n.t, string(req.Params[1]), "encoding")
		assert.Contains(n.t, string(req.Params[1]), `"maxSupportedTransactionVersion":0`)
		if raw, ok := n.txs[sig]; ok {
			result = raw
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	require.NoError(n.t, json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}))
}

// The client reads recorded mainnet answers through failover: a dead
// first endpoint, whose key never shows in an error, then the node.
func TestClientReadsRecordedMainnet(t *testing.T) {
	node := newRecordedNode(t)
	srv := httptest.NewServer(node)
	defer srv.Close()
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer dead.Close()
	var outcomes []string
	c, err := solana.Dial([]string{dead.URL + "/secret-key-123", srv.URL}, nil, func(o chainapi.RPCOutcome) { outcomes = append(outcomes, string(o)) })
	require.NoError(t, err)
	ctx := context.Background()

	genesis, cluster, err := c.Cluster(ctx)
	require.NoError(t, err)
	assert.Equal(t, solana.MainnetGenesis, genesis)
	assert.Equal(t, "mainnet-beta", cluster)
	assert.Equal(t, []string{"error", "ok"}, outcomes, "the dead endpoint, then the node")

	head, err := c.Slot(ctx, rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.Equal(t, uint64(405318600), head)

	h := node.history
	cur := solana.Cursor{Signature: h.all[20].Signature.String(), Slot: h.all[20].Slot}
	sigs, err := c.Signatures(ctx, "7T8ckKtdc5DH7ACS5AnCny7rVXYJPEsaAbdBri1FhPxY", solana.SignatureQuery{Cursor: cur, Through: cur.Slot}, rpc.CommitmentFinalized)
	require.NoError(t, err)
	require.NotEmpty(t, sigs)
	assert.Equal(t, h.all[0].Signature, sigs[len(sigs)-1].Signature)

	credits, found, err := c.Credits(ctx, "28f8jFzCX3D1dJ5sZSABgVmrziAQu3hPeERjRoKMJwvQGrahxDfSRARpgX4rBeGcYvGSMu77QPoEqYdyYTzx9TY7", rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.True(t, found)
	require.Len(t, credits, 1)
	assert.Equal(t, "29697870", credits[0].Amount.String())

	_, found, err = c.Credits(ctx, h.all[0].Signature.String(), rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.False(t, found, "a transaction the node does not have")

	require.NoError(t, c.Health(ctx))
	d, err := c.MintDecimals(ctx, usdc)
	require.NoError(t, err)
	assert.Equal(t, 6, d)
	_, err = c.MintDecimals(ctx, "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK")
	assert.ErrorContains(t, err, "not a mint")
	start, err := c.HistoryStart(ctx)
	require.NoError(t, err)
	assert.Less(t, start, h.all[len(h.all)-1].Slot, "the recorded history is within the node's")

	// Both endpoints down: the error names them without the key.
	srv.Close()
	_, err = c.Slot(ctx, rpc.CommitmentFinalized)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret-key-123")
	assert.Contains(t, err.Error(), "127.0.0.1")

	// A 429 whose body is a JSON-RPC error object, as the public RPC sends
	// it, is a rate limit too, and fails over; a node that is behind
	// (-32005) fails over; another JSON-RPC error is the node's answer.
	jsonLimited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":429,"message":"Too many requests for a specific RPC call"}}`)
	}))
	defer jsonLimited.Close()
	behind := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"Node is behind by 150 slots"}}`)
	}))
	defer behind.Close()
	c, err = solana.Dial([]string{jsonLimited.URL}, nil, nil)
	require.NoError(t, err)
	_, err = c.Slot(ctx, rpc.CommitmentFinalized)
	assert.ErrorIs(t, err, chainapi.ErrRateLimited)
	node2 := httptest.NewServer(newRecordedNode(t))
	defer node2.Close()
	c, err = solana.Dial([]string{jsonLimited.URL, behind.URL, node2.URL}, nil, nil)
	require.NoError(t, err)
	head, err = c.Slot(ctx, rpc.CommitmentFinalized)
	require.NoError(t, err, "past the limited and the lagging endpoint")
	assert.Equal(t, uint64(405318600), head)
	// The node's error, as an operator reads it (paywatch check, logs).
	c, err = solana.Dial([]string{behind.URL}, nil, nil)
	require.NoError(t, err)
	_, err = c.Slot(ctx, rpc.CommitmentFinalized)
	assert.ErrorContains(t, err, "JSON-RPC error -32005: Node is behind by 150 slots")
	assert.NotContains(t, err.Error(), "jsonrpc.RPCError", "not a dump of the struct")

	// A provider's 429 is a rate limit, as the scanners' budgets expect.
	// Its Retry-After rests the endpoint: the next call is not sent.
	var limitedCalls int
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limitedCalls++
		w.Header().Set("Retry-After", "30")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	defer limited.Close()
	c, err = solana.Dial([]string{limited.URL}, nil, nil)
	require.NoError(t, err)
	_, err = c.Slot(ctx, rpc.CommitmentFinalized)
	assert.ErrorIs(t, err, chainapi.ErrRateLimited)
	wait, ok := chainapi.RetryAfterOf(err)
	assert.True(t, ok)
	assert.InDelta(t, 30, wait.Seconds(), 1)
	_, err = c.Slot(ctx, rpc.CommitmentFinalized)
	assert.ErrorIs(t, err, chainapi.ErrRateLimited)
	assert.Equal(t, 1, limitedCalls, "rested for its Retry-After")

	_, err = solana.Dial([]string{"127.0.0.1:8899"}, nil, nil)
	assert.ErrorContains(t, err, "want http(s)://")
	assert.True(t, strings.Contains(err.Error(), "127.0.0.1:8899"))
}
