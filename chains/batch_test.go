package chains_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
)

// ReadBatch on every network: the last block's hash, the transfers and the
// cursor block's hash, as BlockHash and Transfers give them.
func TestReadBatchOnEveryNetwork(t *testing.T) {
	d := startDevnet(t, devnet.Config{})
	for _, n := range allNetworks {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, d, n, 0)
			to := newAddress(t, n)
			cursor, err := d.Mine(ctx, n, 1) // above 0: genesis is no cursor
			require.NoError(t, err)
			sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "2"})
			require.NoError(t, err)
			head, err := d.Mine(ctx, n, 2)
			require.NoError(t, err)

			// A client that reads per account reads the recipient's.
			var accounts []chains.AccountCursor
			if ar, ok := c.(chains.AccountReader); ok {
				accounts, err = ar.Accounts([]string{to})
				require.NoError(t, err)
			}
			b, err := chains.ReadBatch(ctx, c, chains.BatchQuery{From: cursor + 1, To: head, Head: head, Cursor: cursor, Accounts: accounts})
			require.NoError(t, err)
			wantHash, err := c.BlockHash(ctx, head)
			require.NoError(t, err)
			wantCursor, err := c.BlockHash(ctx, cursor)
			require.NoError(t, err)
			assert.Equal(t, wantHash, b.Hash)
			assert.Equal(t, wantCursor, b.CursorHash)
			require.Len(t, b.Transfers, 1)
			assert.Equal(t, sent.TxHash, b.Transfers[0].TxHash)
			assert.Equal(t, sent.BlockNumber, b.Transfers[0].BlockNumber)

			b, err = chains.ReadBatch(ctx, c, chains.BatchQuery{From: head, To: head, Head: head, Accounts: accounts})
			require.NoError(t, err)
			assert.Equal(t, wantHash, b.Hash)
			assert.Empty(t, b.CursorHash, "no cursor asked")
			assert.Empty(t, b.Transfers)

			_, err = chains.ReadBatch(ctx, c, chains.BatchQuery{From: head + 1, To: head + 1, Head: head + 1})
			assert.ErrorIs(t, err, chains.ErrBlockNotFound, "a block above the node's head")
			_, err = chains.ReadBatch(ctx, c, chains.BatchQuery{From: head, To: head - 1})
			assert.Error(t, err)
		})
	}
}

// An EVM provider whose log index lags behind its head answers eth_getLogs
// without the newest blocks' logs. ReadBatch sees from the blocks'
// logsBloom that they may hold token transfers, asks for each alone by its
// hash, and refuses the batch when the node cannot vouch for it; once the
// index has caught up, the same batch reads in full.
func TestReadBatchRefusesLogsALaggingIndexLeftOut(t *testing.T) {
	n := paywatch.POLYGON
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, LogLag: 2})
	t.Cleanup(proxy.Close)
	c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	to := newAddress(t, n)
	cursor := st.Head
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "2"})
	require.NoError(t, err)
	head, err := d.Mine(ctx, n, 1) // the transfer's block is the second newest
	require.NoError(t, err)

	ts, err := c.Transfers(ctx, cursor+1, head)
	require.NoError(t, err)
	require.Empty(t, ts, "the provider's eth_getLogs lacks the transfer")
	q := chains.BatchQuery{From: cursor + 1, To: head, Head: head, Cursor: cursor}
	before, byHash := chains.Calls(c), proxy.Calls("eth_getLogs")
	_, err = chains.ReadBatch(ctx, c, q)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	assert.Contains(t, err.Error(), "unknown block")
	assert.Equal(t, uint64(3), chains.Calls(c)-before,
		"headers; logs and the cursor's header; the suspect block by hash: one HTTP request each")
	assert.Equal(t, 2, proxy.Calls("eth_getLogs")-byHash, "the range, then the one block whose bloom matches")

	// Far from the head, a block is taken as indexed: no check.
	_, err = chains.ReadBatch(ctx, c, chains.BatchQuery{From: cursor + 1, To: head, Head: head + 200, Cursor: cursor})
	require.NoError(t, err)

	// The index catches up: the same batch reads in full.
	proxy.SetLogLag(0)
	b, err := chains.ReadBatch(ctx, c, q)
	require.NoError(t, err)
	require.Len(t, b.Transfers, 1)
	assert.Equal(t, sent.TxHash, b.Transfers[0].TxHash)
}

// A node that serves the headers but answers eth_getLogs by hash with the
// logs its range answer left out (one backend lags, another does not): the
// batch is refused too.
func TestReadBatchRefusesLogsTheRangeAnswerLeftOut(t *testing.T) {
	n := paywatch.ARBITRUM
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL})
	t.Cleanup(proxy.Close)
	c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: newAddress(t, n), Amount: "2"})
	require.NoError(t, err)
	head, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)
	// Hide the transfer's block from range answers only: the proxy's lag
	// reaches it for the range, and is gone when the block is asked by hash.
	proxy.SetLogLag(head - sent.BlockNumber + 1)
	proxy.HideRangesOnly(true)
	_, err = chains.ReadBatch(ctx, c, chains.BatchQuery{From: sent.BlockNumber, To: head, Head: head})
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	assert.Contains(t, err.Error(), "left out its 1 token logs")
}

// On busy chains every block's logsBloom matches everything: a block
// without token transfers whose bloom matches is asked for by its hash, and
// counts as read when that answer is empty too. The suspects of a batch
// share one JSON-RPC batch.
func TestReadBatchAcceptsBloomFalsePositives(t *testing.T) {
	n := paywatch.BEP20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, SaturateBlooms: true})
	t.Cleanup(proxy.Close)
	c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cursor := st.Head
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "2"})
	require.NoError(t, err)
	head, err := d.Mine(ctx, n, 5)
	require.NoError(t, err)

	before, logs := chains.Calls(c), proxy.Calls("eth_getLogs")
	b, err := chains.ReadBatch(ctx, c, chains.BatchQuery{From: cursor + 1, To: head, Head: head, Cursor: cursor})
	require.NoError(t, err)
	require.Len(t, b.Transfers, 1)
	assert.Equal(t, sent.TxHash, b.Transfers[0].TxHash)
	assert.Equal(t, uint64(3), chains.Calls(c)-before, "headers; logs and cursor; the five empty blocks by hash in one batch")
	assert.Equal(t, 1+5, proxy.Calls("eth_getLogs")-logs)
}

// A provider that refuses the batch's range for eth_getLogs: ReadBatch
// halves it as Transfers does and reads the cursor's hash after the chunks.
func TestReadBatchHalvesARefusedRange(t *testing.T) {
	n := paywatch.ERC20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}, LogRangeLimit: 4})
	ctx := ctxT(t)
	c := dial(t, d, n, 0)
	st, _ := d.Network(n)
	cursor := st.Head
	to := newAddress(t, n)
	var sent []devnet.TransferResult
	for range 3 {
		r, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "1"})
		require.NoError(t, err)
		sent = append(sent, r)
		_, err = d.Mine(ctx, n, 3)
		require.NoError(t, err)
	}
	head, _ := d.Network(n)
	b, err := chains.ReadBatch(ctx, c, chains.BatchQuery{From: cursor + 1, To: head.Head, Head: head.Head, Cursor: cursor})
	require.NoError(t, err)
	require.Len(t, b.Transfers, 3)
	for i, r := range sent {
		assert.Equal(t, r.TxHash, b.Transfers[i].TxHash)
	}
	want, err := c.BlockHash(ctx, cursor)
	require.NoError(t, err)
	assert.Equal(t, want, b.CursorHash)
}

// A provider that refuses JSON-RPC batches (HTTP 400) still serves every
// batch, one call per request from the first refusal on, with the same
// completeness check: nothing stalls, and nothing is passed unread.
func TestReadBatchWithoutJSONRPCBatches(t *testing.T) {
	n := paywatch.ERC20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, RefuseBatches: true, LogLag: 2})
	t.Cleanup(proxy.Close)
	c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cursor := st.Head
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "3"})
	require.NoError(t, err)
	head, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	q := chains.BatchQuery{From: cursor + 1, To: head, Head: head, Cursor: cursor}

	_, err = chains.ReadBatch(ctx, c, q)
	require.ErrorIs(t, err, chains.ErrIncompleteRead, "the lagging index is caught without batches too")
	assert.Contains(t, err.Error(), "unknown block")

	proxy.SetLogLag(0)
	requests := proxy.Requests()
	b, err := chains.ReadBatch(ctx, c, q)
	require.NoError(t, err)
	require.Len(t, b.Transfers, 1)
	assert.Equal(t, sent.TxHash, b.Transfers[0].TxHash)
	wantHash, err := c.BlockHash(ctx, head)
	require.NoError(t, err)
	assert.Equal(t, wantHash, b.Hash)
	// Headers of 2 blocks, eth_getLogs, the cursor's header: one request
	// each, and no batch tried again.
	assert.Equal(t, 4, proxy.Requests()-requests-1, "one request per call (the -1 is BlockHash above)")
}
