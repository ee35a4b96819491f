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

// ReadTip on every network: a block not made yet costs one request and is
// not found; the next block comes with its hash, its parent's hash and its
// transfers, as BlockHash and Transfers give them, in one request on EVM
// networks and in two on TRC20 (the newest block, then its transaction
// infos; one for a block without transactions).
func TestReadTipOnEveryNetwork(t *testing.T) {
	d := startDevnet(t, devnet.Config{})
	for _, n := range blockNetworks {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, d, n, 0)
			tr, ok := c.(chains.TipReader)
			require.True(t, ok, "every client reads the tip")
			head, err := d.Mine(ctx, n, 1)
			require.NoError(t, err)

			before := chains.Calls(c)
			tip, err := tr.ReadTip(ctx, head+1)
			require.NoError(t, err)
			assert.False(t, tip.Found, "the next block is not made yet")
			assert.Equal(t, head, tip.Head)
			assert.Equal(t, uint64(1), chains.Calls(c)-before, "one request for a block not there")

			to := newAddress(t, n)
			sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "2"})
			require.NoError(t, err)
			require.Equal(t, head+1, sent.BlockNumber)
			before = chains.Calls(c)
			tip, err = tr.ReadTip(ctx, head+1)
			require.NoError(t, err)
			requests := chains.Calls(c) - before
			require.True(t, tip.Found)
			wantHash, err := c.BlockHash(ctx, head+1)
			require.NoError(t, err)
			wantParent, err := c.BlockHash(ctx, head)
			require.NoError(t, err)
			assert.Equal(t, wantHash, tip.Hash)
			assert.Equal(t, wantParent, tip.ParentHash)
			assert.Equal(t, head+1, tip.Head)
			want, err := c.Transfers(ctx, head+1, head+1)
			require.NoError(t, err)
			assert.Equal(t, want, tip.Transfers)
			require.Len(t, tip.Transfers, 1)
			assert.Equal(t, sent.TxHash, tip.Transfers[0].TxHash)
			if n == paywatch.TRC20 {
				assert.Equal(t, uint64(2), requests, "the newest block, then its transaction infos")
			} else {
				assert.Equal(t, uint64(1), requests, "one JSON-RPC batch")
			}

			// An empty block, then two at once.
			_, err = d.Mine(ctx, n, 1)
			require.NoError(t, err)
			before = chains.Calls(c)
			tip, err = tr.ReadTip(ctx, head+2)
			require.NoError(t, err)
			assert.True(t, tip.Found)
			assert.Empty(t, tip.Transfers)
			assert.Equal(t, wantHash, tip.ParentHash)
			assert.Equal(t, uint64(1), chains.Calls(c)-before, "one request for a block without transactions")
			newest, err := d.Mine(ctx, n, 2)
			require.NoError(t, err)
			tip, err = tr.ReadTip(ctx, head+3)
			require.NoError(t, err)
			assert.Equal(t, newest, tip.Head)
			if n == paywatch.TRC20 {
				assert.False(t, tip.Found, "TRC20 reads the newest block only; a batch reads the ones before it")
			} else {
				assert.True(t, tip.Found)
			}
		})
	}
}

// A provider whose log index lags behind its head answers the tip's
// eth_getLogs without the newest block's logs: the block's logsBloom gives
// it away, and the read fails rather than pass a block whose transfers are
// missing; once the index has caught up, the same read finds them.
func TestReadTipRefusesLogsALaggingIndexLeftOut(t *testing.T) {
	n := paywatch.ARBITRUM
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, LogLag: 1})
	t.Cleanup(proxy.Close)
	c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: newAddress(t, n), Amount: "3"})
	require.NoError(t, err)

	_, err = c.(chains.TipReader).ReadTip(ctx, sent.BlockNumber)
	require.ErrorIs(t, err, chains.ErrIncompleteRead)

	proxy.SetLogLag(0)
	tip, err := c.(chains.TipReader).ReadTip(ctx, sent.BlockNumber)
	require.NoError(t, err)
	require.True(t, tip.Found)
	require.Len(t, tip.Transfers, 1)
	assert.Equal(t, sent.TxHash, tip.Transfers[0].TxHash)
}
