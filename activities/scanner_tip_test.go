package activities_test

import (
	"context"
	"sync"
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

// While a payment waits, a scanner at the head reads each new block in
// about one request (chains.TipReader, timed by the tip pace), where it
// used to make three or four: a head read, the headers, the logs with the
// cursor's header, and a head read that found nothing new. A transfer to
// the payment is signalled at the block that brings it, and a reorg that
// replaces that block is caught by the next block's parent hash.
func TestScannerAtTheTipReadsABlockPerRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.ARBITRUM
	const interval = 250 * time.Millisecond
	d, proxy, set := countedChain(ctx, t, n, interval)
	var err error
	st, _ := d.Network(n)
	db := newScanDB(t)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: interval},
	})
	addr := randomAddress(t, n)
	db.watch(t, n, paywatch.USDT, addr, st.Head)

	// Catch up, then count what the blocks at the tip cost.
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: time.Second}, nil)
	require.NoError(t, err)
	before, headBefore := proxy.Requests(), mustHead(t, d, n)
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 8 * time.Second}, nil)
	require.NoError(t, err)
	requests, blocks := proxy.Requests()-before, mustHead(t, d, n)-headBefore
	perBlock := float64(requests) / float64(blocks)
	t.Logf("at the tip: %d requests over %d blocks, %.2f per block", requests, blocks, perBlock)
	assert.False(t, p.Idle)
	assert.GreaterOrEqual(t, blocks, uint64(20))
	assert.LessOrEqual(t, perBlock, 2.0, "about one request per block (it was over 3); loose for a loaded machine")

	// A transfer at the tip is signalled; a reorg replacing its block is
	// seen at the next block, whose parent is not the recorded block.
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "5"})
	require.NoError(t, err)
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: time.Second}, nil)
	require.NoError(t, err)
	var seen *paywatch.Transaction
	for _, g := range sig.signals() {
		if g.Name == workflows.SignalTransferSeen {
			tx := g.Arg.(paywatch.Transaction)
			seen = &tx
		}
	}
	require.NotNil(t, seen, "the transfer was signalled")
	assert.Equal(t, sent.TxHash, seen.TxHash)
	// Two blocks deeper than needed: the chain mines on (every 250 ms)
	// between the head read and the reorg.
	_, dropped, err := d.Reorg(ctx, n, int(mustHead(t, d, n)-sent.BlockNumber+3))
	require.NoError(t, err)
	require.Contains(t, dropped, sent.TxHash)
	p, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: time.Second}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, p.Reorgs)
	var removed bool
	for _, g := range sig.signals() {
		if g.Name == workflows.SignalTransferRemoved && g.Arg.(workflows.TransferRemoved).TxHash == sent.TxHash {
			removed = true
		}
	}
	assert.True(t, removed, "the workflow is told the transfer left the chain")
	rec, ok, err := db.store.ChainTransferByKey(ctx, n, paywatch.TransferKey{TxHash: sent.TxHash, LogIndex: seen.LogIndex})
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, rec.Removed)
}

// countedChain starts a devnet chain of network n making a block every
// interval, behind a faultproxy that counts the requests, and the chain
// client set that reads it through the proxy.
func countedChain(ctx context.Context, t testing.TB, n paywatch.Network, interval time.Duration) (*devnet.Devnet, *faultproxy.Proxy, *chains.Set) {
	t.Helper()
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}, BlockInterval: interval})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL})
	t.Cleanup(proxy.Close)
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(set.Close)
	return d, proxy, set
}

func mustHead(t testing.TB, d *devnet.Devnet, n paywatch.Network) uint64 {
	t.Helper()
	st, ok := d.Network(n)
	require.True(t, ok)
	return st.Head
}

// A burst of blocks that brings a transfer together with its last
// confirmations (a node catching up, a provider's lag clearing): the batch
// that reads the transfer signals it seen with its depth, in the block it
// read, and no transfers-confirmed follows: the payment takes the depth as
// its confirmation (one signal, one Action). A payment that did not take it
// (a run that predates the scanner's confirmations) awaits the
// confirmation once its workflow has saved the transfer, after the poll,
// and the scanner looks for that between polls and signals it then, not at
// its next poll: here the poll interval is a minute, and the confirmation
// comes within seconds, once.
func TestABurstsConfirmationIsSignalledBeforeTheNextPoll(t *testing.T) {
	for _, taken := range []bool{true, false} {
		t.Run(map[bool]string{true: "the depth taken", false: "the depth not taken"}[taken], func(t *testing.T) {
			burst(t, taken)
		})
	}
}

func burst(t *testing.T, taken bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.ARBITRUM // 40 confirmations
	d, set := devnetChain(ctx, t, n)
	st, _ := d.Network(n)
	db := newScanDB(t)
	addr := randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, st.Head)
	// The workflow, as the signal reaches it: it saves the transfer it
	// counts a little later, confirmed if it took the depth, or awaiting
	// its confirmation.
	sig := &signalLog{}
	saved := make(chan struct{})
	var once sync.Once
	sig.onSeen = func(tx paywatch.Transaction) {
		go func() {
			time.Sleep(200 * time.Millisecond)
			state := paywatch.PaymentState{
				PaymentID: id, Status: paywatch.StatusConfirming, Network: n, Token: paywatch.USDT,
				Amount: paywatch.MustParseAmount("10", 6), PaidAmount: paywatch.NewAmount(nil, 6), Version: 1,
				Transactions: []paywatch.Transaction{tx},
			}
			if taken {
				state.Status, state.PaidAmount = paywatch.StatusPaid, tx.Amount
				state.Transactions[0].Confirmed = true
			} else {
				state.Transactions[0].Confirmations = 0
			}
			_, err := db.store.SavePaymentState(ctx, state)
			assert.NoError(t, err)
			once.Do(func() { close(saved) })
		}()
	}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: time.Minute}})

	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	_, err = d.Mine(ctx, n, 45) // the burst: the transfer and its 40 confirmations, at once
	require.NoError(t, err)
	start := time.Now()
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 5 * time.Second}, nil)
	require.NoError(t, err)
	select {
	case <-saved:
	case <-ctx.Done():
		t.Fatal("the transfer was never signalled")
	}
	var names []string
	var seen []paywatch.Transaction
	var confirmed []workflows.TransferConfirmed
	for _, g := range sig.signals() {
		names = append(names, g.Name)
		switch g.Name {
		case workflows.SignalTransferSeen:
			seen = append(seen, g.Arg.(paywatch.Transaction))
		case workflows.SignalTransfersConfirmed:
			confirmed = append(confirmed, g.Arg.(workflows.TransfersConfirmed).Transfers...)
		}
	}
	require.NotEmpty(t, seen)
	assert.Equal(t, workflows.SignalTransferSeen, names[0], "seen first")
	assert.Equal(t, sent.TxHash, seen[0].TxHash)
	assert.Equal(t, sent.BlockNumber, seen[0].BlockNumber)
	assert.GreaterOrEqual(t, seen[0].Confirmations, 40, "seen with its depth")
	if taken {
		assert.Empty(t, confirmed, "no second signal")
		return
	}
	require.Len(t, confirmed, 1, "the awaited confirmation, once, within the run, a minute before the next poll (run took %s)", time.Since(start))
	assert.Equal(t, sent.TxHash, confirmed[0].TxHash)
	assert.Equal(t, sent.BlockNumber, confirmed[0].BlockNumber)
	assert.True(t, confirmed[0].Canonical)
	assert.GreaterOrEqual(t, confirmed[0].Confirmations, 40)
}
