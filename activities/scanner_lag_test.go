package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
	"github.com/paywatch/paywatch/workflows"
)

// A provider behind a load balancer: eth_blockNumber and the block headers
// come from a backend that has the newest block, eth_getLogs from one whose
// log index has not reached it yet and answers [] for it. The scanner must
// not pass that block as one without transfers: it waits until the logs
// are there, and then records and signals the transfer.
func TestScannerDoesNotPassABlockTheLogIndexLacks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	defer d.Close()
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, LogLag: 1})
	defer proxy.Close()
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)
	addr := randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, st.Head)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond},
	})
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 200 * time.Millisecond}, nil)
	require.NoError(t, err)

	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "7"})
	require.NoError(t, err)
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 1500 * time.Millisecond}, nil)
	require.NoError(t, err)
	require.Positive(t, proxy.Hidden(), "the proxy answered eth_getLogs without the newest block's logs")
	assert.Less(t, p.Height, sent.BlockNumber, "the scan did not pass the block it could not read fully")
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Less(t, cur.Height, sent.BlockNumber)
	assert.Empty(t, sig.signals())

	// The index catches up once a newer block exists: the transfer counts.
	head, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	p, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 500 * time.Millisecond}, nil)
	require.NoError(t, err)
	assert.Equal(t, head, p.Height)
	got := sig.signals()
	require.Len(t, got, 1, "the transfer in the block the index lacked was signalled")
	assert.Equal(t, workflows.PaymentWorkflowID(id), got[0].WorkflowID)
	seen := got[0].Arg.(paywatch.Transaction)
	assert.Equal(t, sent.TxHash, seen.TxHash)
	assert.Equal(t, sent.BlockNumber, seen.BlockNumber)
	assert.Equal(t, "7.00", seen.Amount.String())
}

// The final check asks the chain about the payment's address over its
// whole window: a transfer the scanner's records lack (here: read through a
// lagging log index by a batch path without the scanner's completeness
// check, so the cursor passed its block) is still found.
func TestFinalCheckFindsATransferTheScannerMissed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	defer d.Close()
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, LogLag: 1})
	defer proxy.Close()
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)
	addr := randomAddress(t, n)
	start := st.Head
	id := db.watch(t, n, paywatch.USDT, addr, start)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "3"})
	require.NoError(t, err)

	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: &signalLog{}})
	_, err = s.ScanRange(ctx, n, start, sent.BlockNumber)
	require.NoError(t, err)
	require.Positive(t, proxy.Hidden())
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	require.Equal(t, sent.BlockNumber, cur.Height, "the cursor passed the transfer's block")
	var rows int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
	require.Zero(t, rows, "and the records miss the transfer")

	head, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	acts := activities.New(activities.Deps{Store: db.store, Chains: set})
	res, err := acts.FinalCheck(ctx, workflows.FinalCheckInput{PaymentID: id, Network: n, Token: paywatch.USDT, Address: addr, StartBlock: start})
	require.NoError(t, err)
	assert.Equal(t, head, res.Head)
	require.Len(t, res.Transfers, 1, "found on chain")
	assert.Equal(t, sent.TxHash, res.Transfers[0].TxHash)
	assert.Equal(t, sent.BlockNumber, res.Transfers[0].BlockNumber)
	assert.Equal(t, "3.00", res.Transfers[0].Amount.String())
}
