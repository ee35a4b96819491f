package chains_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
)

// dialURLs dials network n of d over urls with the given quorum.
func dialURLs(t testing.TB, d *devnet.Devnet, n paywatch.Network, quorum int, urls ...string) chains.Client {
	t.Helper()
	st, ok := d.Network(n)
	require.True(t, ok)
	c, err := chains.Dial(context.Background(), chains.Config{Network: n, URLs: urls, Contracts: st.Tokens, Quorum: quorum})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// proxy starts a fault proxy in front of network n's node.
func proxy(t testing.TB, d *devnet.Devnet, n paywatch.Network, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	st, _ := d.Network(n)
	cfg.Upstream = st.RPCURL
	p := faultproxy.Start(cfg)
	t.Cleanup(p.Close)
	return p
}

// Two honest endpoints of every network: a quorum of 2 reads what one
// endpoint alone reads, through every read of a client, and its head is
// theirs.
func TestQuorumOfHonestEndpoints(t *testing.T) {
	d := startDevnet(t, devnet.Config{})
	for _, n := range blockNetworks {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			st, _ := d.Network(n)
			urls := []string{st.RPCURL, st.RPCURL}
			if n != paywatch.TRC20 {
				urls = []string{proxy(t, d, n, faultproxy.Config{}).URL, proxy(t, d, n, faultproxy.Config{}).URL}
			}
			single := dialURLs(t, d, n, 0, st.RPCURL)
			q := dialURLs(t, d, n, 2, urls...)
			to := newAddress(t, n)
			cursor, err := d.Mine(ctx, n, 1)
			require.NoError(t, err)
			sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "2.5"})
			require.NoError(t, err)

			tip, err := q.(chains.TipReader).ReadTip(ctx, sent.BlockNumber)
			require.NoError(t, err)
			want, err := single.(chains.TipReader).ReadTip(ctx, sent.BlockNumber)
			require.NoError(t, err)
			require.True(t, tip.Found)
			assert.Equal(t, want, tip)
			require.Len(t, tip.Transfers, 1)
			assert.Equal(t, sent.TxHash, tip.Transfers[0].TxHash)

			head, err := d.Mine(ctx, n, 2)
			require.NoError(t, err)
			got, err := q.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, head, got)
			bq := chains.BatchQuery{From: cursor + 1, To: head, Head: head, Cursor: cursor}
			b, err := chains.ReadBatch(ctx, q, bq)
			require.NoError(t, err)
			wantB, err := chains.ReadBatch(ctx, single, bq)
			require.NoError(t, err)
			assert.Equal(t, wantB, b)
			ts, err := q.Transfers(ctx, cursor+1, head)
			require.NoError(t, err)
			assert.Equal(t, wantB.Transfers, ts)
			hash, err := q.BlockHash(ctx, head)
			require.NoError(t, err)
			assert.Equal(t, wantB.Hash, hash)
			txs, found, err := q.TransactionTransfers(ctx, sent.TxHash)
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, wantB.Transfers, txs)
			_, found, err = q.TransactionTransfers(ctx, missingHash(n))
			require.NoError(t, err)
			assert.False(t, found)
			ats, err := q.AddressTransfers(ctx, to, cursor)
			require.NoError(t, err)
			assert.Equal(t, wantB.Transfers, ats)
		})
	}
}

// forged is the amount a lying endpoint puts in every Transfer log.
const forged = 1_000_000_000_000

// lie is a faultproxy.Rewrite that changes the amount of every log of
// eth_getLogs and of transaction receipts to forged.
func lie(method string, _ []json.RawMessage, result json.RawMessage) json.RawMessage {
	data := fmt.Sprintf("0x%064x", forged)
	switch method {
	case "eth_getLogs":
		var logs []map[string]any
		if json.Unmarshal(result, &logs) != nil || len(logs) == 0 {
			return nil
		}
		for _, l := range logs {
			l["data"] = data
		}
		b, _ := json.Marshal(logs)
		return b
	case "eth_getTransactionReceipt":
		var r map[string]any
		if json.Unmarshal(result, &r) != nil || r == nil {
			return nil
		}
		logs, _ := r["logs"].([]any)
		for _, l := range logs {
			if m, ok := l.(map[string]any); ok {
				m["data"] = data
			}
		}
		b, _ := json.Marshal(r)
		return b
	}
	return nil
}

// An endpoint that lies about a transfer's amount: read alone, its lie is
// taken; in a quorum of 2 with an honest endpoint, every read refuses
// (ErrIncompleteRead, naming the amounts), so the scanner records
// nothing; with a third, honest endpoint the two honest ones carry the
// quorum, and the liar is asked last from then on.
func TestQuorumRefusesALyingEndpoint(t *testing.T) {
	n := paywatch.ARBITRUM
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	liar := proxy(t, d, n, faultproxy.Config{Rewrite: lie})
	honest := proxy(t, d, n, faultproxy.Config{})
	honest2 := proxy(t, d, n, faultproxy.Config{})
	to := newAddress(t, n)
	cursor, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: to, Amount: "7"})
	require.NoError(t, err)
	truth := units(t, n, paywatch.USDC, "7")

	alone := dialURLs(t, d, n, 1, liar.URL)
	ts, err := alone.Transfers(ctx, sent.BlockNumber, sent.BlockNumber)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, int64(forged), ts[0].Amount.Int64(), "alone, the liar is believed")
	tip, err := alone.(chains.TipReader).ReadTip(ctx, sent.BlockNumber)
	require.NoError(t, err)
	require.Len(t, tip.Transfers, 1)
	assert.Equal(t, int64(forged), tip.Transfers[0].Amount.Int64())

	q := dialURLs(t, d, n, 2, honest.URL, liar.URL)
	_, err = q.Transfers(ctx, sent.BlockNumber, sent.BlockNumber)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	assert.Contains(t, err.Error(), fmt.Sprintf("amount %s ≠ %d", truth, forged))
	_, err = q.(chains.TipReader).ReadTip(ctx, sent.BlockNumber)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	_, err = chains.ReadBatch(ctx, q, chains.BatchQuery{From: cursor + 1, To: sent.BlockNumber, Head: sent.BlockNumber, Cursor: cursor})
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	_, _, err = q.TransactionTransfers(ctx, sent.TxHash)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	_, err = q.AddressTransfers(ctx, to, cursor)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	hash, err := q.BlockHash(ctx, sent.BlockNumber)
	require.NoError(t, err, "the liar tells the truth about hashes")
	assert.NotEmpty(t, hash)
	assert.Positive(t, liar.Rewritten())

	q3 := dialURLs(t, d, n, 2, liar.URL, honest.URL, honest2.URL)
	ts, err = q3.Transfers(ctx, sent.BlockNumber, sent.BlockNumber)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, truth.String(), ts[0].Amount.String(), "the two honest endpoints make the quorum")
	asked := liar.Requests()
	tip, err = q3.(chains.TipReader).ReadTip(ctx, sent.BlockNumber)
	require.NoError(t, err)
	assert.Equal(t, truth.String(), tip.Transfers[0].Amount.String())
	assert.Equal(t, asked, liar.Requests(), "the dissenter is asked last")

	// A lie about a block hash.
	liar.SetRewrite(func(method string, _ []json.RawMessage, result json.RawMessage) json.RawMessage {
		if method != "eth_getBlockByNumber" {
			return nil
		}
		var b map[string]any
		if json.Unmarshal(result, &b) != nil || b == nil {
			return nil
		}
		b["hash"] = "0x" + fmt.Sprintf("%064x", 42)
		out, _ := json.Marshal(b)
		return out
	})
	_, err = q.BlockHash(ctx, sent.BlockNumber)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	assert.Contains(t, err.Error(), "hash")
}

// One endpoint two blocks behind the other: the quorum's head is the
// slower one's, so confirmations count as the slower endpoint sees them,
// and a block only the faster one has waits (not found at the tip, not
// found in a batch, a transaction not found yet) until the slower one has
// it too.
func TestQuorumWaitsForTheSlowerEndpoint(t *testing.T) {
	n := paywatch.POLYGON
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	fast := proxy(t, d, n, faultproxy.Config{})
	slow := proxy(t, d, n, faultproxy.Config{HeadLag: 2})
	q := dialURLs(t, d, n, 2, fast.URL, slow.URL)
	single := dialURLs(t, d, n, 1, fast.URL)
	_, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "1"})
	require.NoError(t, err)
	b := sent.BlockNumber

	head, err := single.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, b, head)
	head, err = q.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, b-2, head, "the slower endpoint's head")
	tip, err := q.(chains.TipReader).ReadTip(ctx, b)
	require.NoError(t, err)
	assert.False(t, tip.Found, "the block waits for the slower endpoint")
	assert.Equal(t, b-2, tip.Head)
	_, err = chains.ReadBatch(ctx, q, chains.BatchQuery{From: b, To: b, Head: b, Cursor: b - 1})
	require.ErrorIs(t, err, chains.ErrBlockNotFound)
	_, err = q.BlockHash(ctx, b)
	require.ErrorIs(t, err, chains.ErrBlockNotFound)
	_, found, err := q.TransactionTransfers(ctx, sent.TxHash)
	require.NoError(t, err)
	assert.False(t, found, "not yet at the slower endpoint")

	slow.SetHeadLag(0)
	tip, err = q.(chains.TipReader).ReadTip(ctx, b)
	require.NoError(t, err)
	require.True(t, tip.Found)
	assert.Equal(t, b, tip.Head)
	require.Len(t, tip.Transfers, 1)
	assert.Equal(t, sent.TxHash, tip.Transfers[0].TxHash)
	_, found, err = q.TransactionTransfers(ctx, sent.TxHash)
	require.NoError(t, err)
	assert.True(t, found)
}

// A block one endpoint lacks while another is down is not a block to wait
// for: the quorum cannot be had, and the read fails as unavailable (the
// scanner backs off and /health names it) rather than reporting the block
// missing, which the scanner would take for being caught up.
func TestQuorumShortOfAnEndpointFailsRatherThanWaits(t *testing.T) {
	n := paywatch.POLYGON
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	fast := proxy(t, d, n, faultproxy.Config{})
	slow := proxy(t, d, n, faultproxy.Config{HeadLag: 2})
	down := proxy(t, d, n, faultproxy.Config{})
	down.Close()
	q := dialURLs(t, d, n, 2, fast.URL, slow.URL, down.URL)
	b, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)
	_, err = q.BlockHash(ctx, b)
	require.ErrorIs(t, err, chains.ErrUnavailable)
	assert.NotErrorIs(t, err, chains.ErrBlockNotFound)

	// Without the endpoint that is down, the slower one is only behind.
	_, err = dialURLs(t, d, n, 2, fast.URL, slow.URL).BlockHash(ctx, b)
	require.ErrorIs(t, err, chains.ErrBlockNotFound)
}

// What a quorum costs: HTTP requests per block at the tip (ReadTip), per
// scanner batch and per head, with a quorum of 1 and of 2, counted by the
// proxies in front of the endpoints.
func TestQuorumCost(t *testing.T) {
	n := paywatch.POLYGON
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	p1 := proxy(t, d, n, faultproxy.Config{})
	p2 := proxy(t, d, n, faultproxy.Config{})
	requests := func() int { return p1.Requests() + p2.Requests() }
	const blocks = 10
	type cost struct{ tip, batch, head float64 }
	costs := map[int]cost{}
	for _, quorum := range []int{1, 2} {
		c := dialURLs(t, d, n, quorum, p1.URL, p2.URL)
		st, _ := d.Network(n)
		next := st.Head + 1
		before, calls := requests(), chains.Calls(c)
		for range blocks {
			sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "1"})
			require.NoError(t, err)
			require.Equal(t, next, sent.BlockNumber)
			tip, err := c.(chains.TipReader).ReadTip(ctx, next)
			require.NoError(t, err)
			require.True(t, tip.Found)
			require.Len(t, tip.Transfers, 1)
			next++
		}
		var k cost
		k.tip = float64(requests()-before) / blocks
		assert.Equal(t, uint64(requests()-before), chains.Calls(c)-calls, "Calls counts every endpoint's requests")
		before = requests()
		b, err := chains.ReadBatch(ctx, c, chains.BatchQuery{From: next - blocks, To: next - 1, Head: next - 1, Cursor: next - blocks - 1})
		require.NoError(t, err)
		require.Len(t, b.Transfers, blocks)
		k.batch = float64(requests() - before)
		before = requests()
		_, err = c.Head(ctx)
		require.NoError(t, err)
		k.head = float64(requests() - before)
		costs[quorum] = k
		t.Logf("quorum %d: %.1f requests per block at the tip, %.0f per %d-block scanner batch, %.0f per head",
			quorum, k.tip, k.batch, blocks, k.head)
	}
	assert.InDelta(t, 1, costs[1].tip, 0.01, "one JSON-RPC batch per block")
	assert.InDelta(t, 2*costs[1].tip, costs[2].tip, 0.01)
	assert.InDelta(t, 2*costs[1].batch, costs[2].batch, 0.01)
	assert.InDelta(t, 2*costs[1].head, costs[2].head, 0.01)
}

// A quorum needs as many endpoints; the checks of `paywatch check` and of
// the start-up guard still look at each endpoint alone.
func TestQuorumConfig(t *testing.T) {
	n := paywatch.BEP20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	st, _ := d.Network(n)
	for _, q := range []int{-1, 3} {
		_, err := chains.Dial(context.Background(), chains.Config{Network: n, URLs: []string{st.RPCURL, st.RPCURL}, Contracts: st.Tokens, Quorum: q})
		require.Error(t, err, q)
		assert.Contains(t, err.Error(), "quorum")
	}
	cfg := chains.Config{Network: n, URLs: []string{st.RPCURL, st.RPCURL}, Contracts: st.Tokens, Quorum: 2}
	down, err := chains.VerifyIdentity(ctxT(t), cfg, 5*time.Second)
	require.NoError(t, err)
	assert.Empty(t, down)
	checks := chains.Check(ctxT(t), cfg)
	require.Len(t, checks, 2)
	for _, c := range checks {
		assert.Empty(t, c.Err)
	}
}
