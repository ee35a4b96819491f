package chains_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
)

// flappingHead is a faultproxy.Rewrite that answers every other
// eth_blockNumber with 0, as a provider whose load balancer sometimes
// picks a backend resyncing from scratch.
func flappingHead() faultproxy.Rewrite {
	var calls atomic.Int64
	return func(method string, _ []json.RawMessage, _ json.RawMessage) json.RawMessage {
		if method != "eth_blockNumber" || calls.Add(1)%2 == 1 {
			return nil
		}
		return json.RawMessage(`"0x0"`)
	}
}

// An endpoint whose head sometimes drops to 0 cannot restart the lag
// clock of a stuck one: each of its low answers used to lower the head
// shown by the endpoints, which forgot when the higher head was shown, so
// with a quorum of all three the stuck endpoint was never judged, and the
// quorum's head stayed the stuck one's, a frozen chain that looked quiet.
// A head counts for as long as the lag limit after the endpoint gave it,
// so the stuck endpoint fails after the limit, and with it every read.
func TestQuorumLagClockSurvivesAFlappingHead(t *testing.T) {
	n := paywatch.POLYGON
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	const lag = time.Second
	stuck := proxy(t, d, n, faultproxy.Config{HeadLag: 2})
	flapping := proxy(t, d, n, faultproxy.Config{Rewrite: flappingHead()})
	honest := proxy(t, d, n, faultproxy.Config{})
	q := dialLag(t, d, n, 3, lag, stuck.URL, flapping.URL, honest.URL)
	b, err := d.Mine(ctx, n, 4)
	require.NoError(t, err)

	// Waited for as long as the limit: whatever the heads are then.
	for start := time.Now(); time.Since(start) < lag+300*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		_, _ = q.Head(ctx)
	}
	for i := range 4 {
		head, err := q.Head(ctx)
		require.ErrorIs(t, err, chains.ErrUnavailable, "read %d: head %d, the stuck endpoint's is %d", i, head, b-2)
		assert.Contains(t, err.Error(), fmt.Sprintf("its head %d", b-2))
	}
	for i := range 4 {
		tip, err := q.(chains.TipReader).ReadTip(ctx, b-1)
		require.ErrorIs(t, err, chains.ErrUnavailable, "read %d: %+v", i, tip)
		assert.NotErrorIs(t, err, chains.ErrBlockNotFound, "not a block to wait for")
	}
	assert.Positive(t, flapping.Rewritten())
}

// A transaction found by some endpoints and not by one that has been
// behind for longer than the lag limit is an error, as that endpoint's
// "not yet" at the tip is, even when the transaction's block is too new
// to be overdue itself, or when the transaction carries no transfer of
// the configured tokens and so names no block.
func TestQuorumTransactionLackedByALaggingEndpointFails(t *testing.T) {
	n := paywatch.BEP20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	const lag = time.Second
	st, _ := d.Network(n)
	fast := proxy(t, d, n, faultproxy.Config{})
	stuck := proxy(t, d, n, faultproxy.Config{HeadLag: 2})
	q := dialLag(t, d, n, 2, lag, fast.URL, stuck.URL)
	// Without USDT's contract, a USDT transfer is a transaction found
	// with no transfers.
	usdcOnly, err := chains.Dial(context.Background(), chains.Config{Network: n, URLs: []string{fast.URL, stuck.URL},
		Contracts: map[paywatch.Token]string{paywatch.USDC: st.Tokens[paywatch.USDC]}, Quorum: 2, QuorumLag: lag})
	require.NoError(t, err)
	t.Cleanup(usdcOnly.Close)
	_, err = d.Mine(ctx, n, 3)
	require.NoError(t, err)
	for _, c := range []chains.Client{q, usdcOnly} {
		_, err := c.Head(ctx)
		require.NoError(t, err)
	}
	time.Sleep(lag + 300*time.Millisecond)

	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "1"})
	require.NoError(t, err)
	for _, c := range []chains.Client{q, usdcOnly} {
		ts, found, err := c.TransactionTransfers(ctx, sent.TxHash)
		require.ErrorIs(t, err, chains.ErrUnavailable, "found %t: %v", found, ts)
		assert.Contains(t, err.Error(), "behind the other endpoints for too long")
	}

	// Caught up, it counts again.
	stuck.SetHeadLag(0)
	ts, found, err := q.TransactionTransfers(ctx, sent.TxHash)
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, ts, 1)
	_, found, err = usdcOnly.TransactionTransfers(ctx, sent.TxHash)
	require.NoError(t, err)
	assert.True(t, found)
}
