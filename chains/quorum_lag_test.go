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

// dialLag dials a quorum of network n over urls whose endpoints may lag
// for lag.
func dialLag(t testing.TB, d *devnet.Devnet, n paywatch.Network, quorum int, lag time.Duration, urls ...string) chains.Client {
	t.Helper()
	st, _ := d.Network(n)
	c, err := chains.Dial(context.Background(), chains.Config{Network: n, URLs: urls, Contracts: st.Tokens, Quorum: quorum, QuorumLag: lag})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// An endpoint that stays behind (here, one that stopped two blocks short)
// is waited for only as long as the lag limit: then every read that needed
// it fails as unavailable, naming it, rather than waiting for ever (which
// the scanner would take for a quiet chain, the confirmations frozen), and
// its head no longer holds the quorum's down. With a third endpoint, the
// other two make the quorum; once it catches up, it counts again.
func TestQuorumEndpointBehindTooLongFails(t *testing.T) {
	n := paywatch.POLYGON
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	const lag = time.Second
	fast := proxy(t, d, n, faultproxy.Config{})
	fast2 := proxy(t, d, n, faultproxy.Config{})
	stuck := proxy(t, d, n, faultproxy.Config{HeadLag: 2})
	q := dialLag(t, d, n, 2, lag, fast.URL, stuck.URL)
	q3 := dialLag(t, d, n, 2, lag, stuck.URL, fast.URL, fast2.URL)
	_, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "1"})
	require.NoError(t, err)
	b := sent.BlockNumber

	head, err := q.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, b-2, head, "behind for a moment: waited for")
	tip, err := q.(chains.TipReader).ReadTip(ctx, b)
	require.NoError(t, err)
	assert.False(t, tip.Found)
	head, err = q3.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, b-2, head, "the slower of the two asked first")

	time.Sleep(lag + 300*time.Millisecond)
	_, err = q.Head(ctx)
	require.ErrorIs(t, err, chains.ErrUnavailable)
	assert.Contains(t, err.Error(), "behind the other endpoints for too long")
	assert.Contains(t, err.Error(), fmt.Sprintf("its head %d", b-2))
	_, err = q.(chains.TipReader).ReadTip(ctx, b)
	require.ErrorIs(t, err, chains.ErrUnavailable)
	assert.NotErrorIs(t, err, chains.ErrBlockNotFound, "not a block to wait for")
	_, err = q.BlockHash(ctx, b)
	require.ErrorIs(t, err, chains.ErrUnavailable)
	assert.NotErrorIs(t, err, chains.ErrBlockNotFound)
	_, err = chains.ReadBatch(ctx, q, chains.BatchQuery{From: b, To: b, Head: b, Cursor: b - 1})
	require.ErrorIs(t, err, chains.ErrUnavailable)
	assert.NotErrorIs(t, err, chains.ErrBlockNotFound)
	_, _, err = q.TransactionTransfers(ctx, sent.TxHash)
	require.ErrorIs(t, err, chains.ErrUnavailable)

	// Three endpoints: the two current ones are the quorum.
	head, err = q3.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, b, head)
	tip, err = q3.(chains.TipReader).ReadTip(ctx, b)
	require.NoError(t, err)
	require.True(t, tip.Found)
	require.Len(t, tip.Transfers, 1)
	assert.Equal(t, sent.TxHash, tip.Transfers[0].TxHash)

	// Caught up, it counts again.
	stuck.SetHeadLag(0)
	head, err = q.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, b, head)
	tip, err = q.(chains.TipReader).ReadTip(ctx, b)
	require.NoError(t, err)
	assert.True(t, tip.Found)
}

// headRewrite is a faultproxy.Rewrite that answers eth_blockNumber with
// head.
func headRewrite(head uint64) faultproxy.Rewrite {
	return func(method string, _ []json.RawMessage, _ json.RawMessage) json.RawMessage {
		if method != "eth_blockNumber" {
			return nil
		}
		return json.RawMessage(fmt.Sprintf(`"0x%x"`, head))
	}
}

// An endpoint whose head is wrong cannot stop a quorum that has enough
// honest endpoints: one claiming a head far ahead shows nothing on its own
// (a head counts as shown once Quorum endpoints give it), so the honest
// ones are not judged stuck; one answering head 0 (a node syncing from
// scratch) is judged like any other and left out. With two endpoints, no
// one can tell who is right, and the quorum fails rather than guess.
func TestQuorumSurvivesAWrongHead(t *testing.T) {
	n := paywatch.ARBITRUM
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	const lag = time.Second
	ahead := proxy(t, d, n, faultproxy.Config{Rewrite: headRewrite(0xffffff)})
	zero := proxy(t, d, n, faultproxy.Config{Rewrite: headRewrite(0)})
	a, b := proxy(t, d, n, faultproxy.Config{}), proxy(t, d, n, faultproxy.Config{})
	withAhead := dialLag(t, d, n, 2, lag, ahead.URL, a.URL, b.URL)
	withZero := dialLag(t, d, n, 2, lag, zero.URL, a.URL, b.URL)
	two := dialLag(t, d, n, 2, lag, ahead.URL, a.URL)
	head, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)
	for _, q := range []chains.Client{withAhead, withZero, two} {
		_, err := q.Head(ctx)
		require.NoError(t, err)
	}
	time.Sleep(lag + 300*time.Millisecond)
	for _, q := range []chains.Client{withAhead, withZero} {
		got, err := q.Head(ctx)
		require.NoError(t, err)
		assert.Equal(t, head, got, "the honest endpoints' head")
		hash, err := q.BlockHash(ctx, head)
		require.NoError(t, err)
		assert.NotEmpty(t, hash)
	}
	_, err = two.Head(ctx)
	require.ErrorIs(t, err, chains.ErrUnavailable)
}

// An endpoint whose head moves on but that answers a block with null (a
// load-balanced backend behind its own head, a pruned node) is waited for
// as long as the lag limit, then counts as failing for that block.
func TestQuorumEndpointMissingABlockFails(t *testing.T) {
	n := paywatch.BEP20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	const lag = time.Second
	b, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)
	tag := fmt.Sprintf(`"0x%x"`, b)
	holey := proxy(t, d, n, faultproxy.Config{Rewrite: func(method string, params []json.RawMessage, _ json.RawMessage) json.RawMessage {
		if method == "eth_getBlockByNumber" && len(params) > 0 && string(params[0]) == tag {
			return json.RawMessage("null")
		}
		return nil
	}})
	q := dialLag(t, d, n, 2, lag, proxy(t, d, n, faultproxy.Config{}).URL, holey.URL)
	_, err = d.Mine(ctx, n, 2)
	require.NoError(t, err)
	_, err = q.Head(ctx)
	require.NoError(t, err)
	_, err = q.BlockHash(ctx, b)
	require.ErrorIs(t, err, chains.ErrBlockNotFound, "waited for at first")
	time.Sleep(lag + 300*time.Millisecond)
	_, err = q.BlockHash(ctx, b)
	require.ErrorIs(t, err, chains.ErrUnavailable)
	assert.NotErrorIs(t, err, chains.ErrBlockNotFound)
	assert.Contains(t, err.Error(), "still missing")
}

// Two endpoints that have not reached a block do not outvote one that
// has: a range of transfers up to it (the check before a payment expires
// reads one) waits for them, where their eth_getLogs would have agreed on
// a list without the block's transfers.
func TestQuorumAddressRangeWaitsForItsLastBlock(t *testing.T) {
	n := paywatch.BEP20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	fast := proxy(t, d, n, faultproxy.Config{})
	slow := proxy(t, d, n, faultproxy.Config{HeadLag: 1})
	slow2 := proxy(t, d, n, faultproxy.Config{HeadLag: 1})
	q := dialURLs(t, d, n, 2, slow.URL, slow2.URL, fast.URL)
	to := newAddress(t, n)
	from, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "3"})
	require.NoError(t, err)

	ts, err := q.(chains.AddressRangeReader).AddressTransfersIn(ctx, to, from, sent.BlockNumber)
	require.ErrorIs(t, err, chains.ErrBlockNotFound, "a list without block %d's transfers: %v", sent.BlockNumber, ts)
	_, err = q.Transfers(ctx, from, sent.BlockNumber)
	require.ErrorIs(t, err, chains.ErrBlockNotFound)

	slow.SetHeadLag(0)
	ts, err = q.(chains.AddressRangeReader).AddressTransfersIn(ctx, to, from, sent.BlockNumber)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, sent.TxHash, ts[0].TxHash)
}

// tronLie is a faultproxy.Rewrite of TRON's FullNode HTTP API that
// changes the amount of every log of transaction infos to forged.
func tronLie(method string, _ []json.RawMessage, result json.RawMessage) json.RawMessage {
	data := fmt.Sprintf("%064x", forged)
	forge := func(info map[string]any) bool {
		logs, _ := info["log"].([]any)
		for _, l := range logs {
			if m, ok := l.(map[string]any); ok {
				m["data"] = data
			}
		}
		return len(logs) > 0
	}
	switch method {
	case "gettransactioninfobyblocknum":
		var infos []map[string]any
		if json.Unmarshal(result, &infos) != nil {
			return nil
		}
		changed := false
		for _, info := range infos {
			changed = forge(info) || changed
		}
		if !changed {
			return nil
		}
		b, _ := json.Marshal(infos)
		return b
	case "gettransactioninfobyid":
		var info map[string]any
		if json.Unmarshal(result, &info) != nil || !forge(info) {
			return nil
		}
		b, _ := json.Marshal(info)
		return b
	}
	return nil
}

// A lying TRON endpoint (FullNode HTTP API): alone it is believed; in a
// quorum of 2 with an honest one, the tip read, the range read and the
// transaction read all refuse; with a second honest endpoint, the truth.
func TestQuorumRefusesALyingTronEndpoint(t *testing.T) {
	n := paywatch.TRC20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	st, _ := d.Network(n)
	require.NotEmpty(t, st.HTTPURL)
	start := func(cfg faultproxy.Config) *faultproxy.Proxy {
		cfg.Upstream = st.HTTPURL
		p := faultproxy.Start(cfg)
		t.Cleanup(p.Close)
		return p
	}
	liar, honest, honest2 := start(faultproxy.Config{Rewrite: tronLie}), start(faultproxy.Config{}), start(faultproxy.Config{})
	to := newAddress(t, n)
	_, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "4"})
	require.NoError(t, err)
	b := sent.BlockNumber
	truth := units(t, n, anyToken(n), "4")

	alone := dialURLs(t, d, n, 1, liar.URL)
	tip, err := alone.(chains.TipReader).ReadTip(ctx, b)
	require.NoError(t, err)
	require.True(t, tip.Found)
	require.Len(t, tip.Transfers, 1)
	assert.Equal(t, int64(forged), tip.Transfers[0].Amount.Int64(), "alone, the liar is believed")

	q := dialURLs(t, d, n, 2, honest.URL, liar.URL)
	_, err = q.(chains.TipReader).ReadTip(ctx, b)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	assert.Contains(t, err.Error(), fmt.Sprintf("amount %s ≠ %d", truth, forged))
	_, err = q.Transfers(ctx, b, b)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	_, err = chains.ReadBatch(ctx, q, chains.BatchQuery{From: b, To: b, Head: b, Cursor: b - 1})
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	_, _, err = q.TransactionTransfers(ctx, sent.TxHash)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	assert.Positive(t, liar.Rewritten())

	q3 := dialURLs(t, d, n, 2, liar.URL, honest.URL, honest2.URL)
	ts, err := q3.Transfers(ctx, b, b)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, truth.String(), ts[0].Amount.String(), "the two honest endpoints make the quorum")
}
