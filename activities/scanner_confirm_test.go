package activities_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// The scanner signals a transfer a payment awaits once, at the poll whose
// head gives it the network's confirmations, after checking its block is
// still canonical; a transfer whose block was replaced is signalled as gone,
// and one mined again in another block is signalled again for that block.
func TestScannerSignalsConfirmationsAtTheExactBlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := paywatch.ARBITRUM // 40 confirmations
	required := uint64(40)
	d, set := devnetChain(ctx, t, n)
	st, _ := d.Network(n)
	db := newScanDB(t)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond}})
	scan := func() {
		t.Helper()
		_, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 300 * time.Millisecond}, nil)
		require.NoError(t, err)
	}
	confirmed := func() []workflows.TransfersConfirmed {
		var out []workflows.TransfersConfirmed
		for _, g := range sig.signals() {
			if g.Name == workflows.SignalTransfersConfirmed {
				out = append(out, g.Arg.(workflows.TransfersConfirmed))
			}
		}
		return out
	}

	addr, gone := randomAddress(t, n), randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, st.Head)
	goneID := db.watch(t, n, paywatch.USDT, gone, st.Head)
	client, err := set.Client(n)
	require.NoError(t, err)
	hashOf := func(block uint64) string {
		t.Helper()
		h, err := client.BlockHash(ctx, block)
		require.NoError(t, err)
		return h
	}
	res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	resHash := hashOf(res.BlockNumber)
	// What the payment workflows save once they count their transfers: one
	// in the block the chain has, one in a block the chain no longer has.
	save := func(paymentID string, version int64, block uint64, blockHash string) {
		t.Helper()
		_, err := db.store.SavePaymentState(ctx, paywatch.PaymentState{
			PaymentID: paymentID, Status: paywatch.StatusConfirming, Network: n, Token: paywatch.USDT,
			Amount: paywatch.MustParseAmount("10", 6), PaidAmount: paywatch.NewAmount(nil, 6), Version: version,
			Transactions: []paywatch.Transaction{{TxHash: res.TxHash, LogIndex: 0, BlockNumber: block, BlockHash: blockHash,
				From: "0xf", Amount: paywatch.MustParseAmount("10", 6)}},
		})
		require.NoError(t, err)
	}
	save(id, 1, res.BlockNumber, resHash)
	save(goneID, 1, res.BlockNumber, "0xdeadbeef")

	// 39 confirmations: nothing yet.
	_, err = d.Mine(ctx, n, int(required)-2)
	require.NoError(t, err)
	scan()
	assert.Empty(t, confirmed(), "one confirmation short")

	// The 40th: one signal each, once.
	_, err = d.Mine(ctx, n, 1)
	require.NoError(t, err)
	scan()
	scan()
	got := confirmed()
	require.Len(t, got, 2)
	byPayment := map[string]workflows.TransferConfirmed{}
	for _, g := range sig.signals() {
		if g.Name == workflows.SignalTransfersConfirmed {
			tc := g.Arg.(workflows.TransfersConfirmed)
			require.Len(t, tc.Transfers, 1)
			byPayment[g.WorkflowID] = tc.Transfers[0]
		}
	}
	ok := byPayment[workflows.PaymentWorkflowID(id)]
	assert.Equal(t, workflows.TransferConfirmed{TxHash: res.TxHash, LogIndex: 0, BlockNumber: res.BlockNumber,
		BlockHash: resHash, Confirmations: int(required), Canonical: true}, ok)
	bad := byPayment[workflows.PaymentWorkflowID(goneID)]
	assert.False(t, bad.Canonical, "a block the chain no longer has")
	assert.Equal(t, "0xdeadbeef", bad.BlockHash)

	// Mined again in another block (as the workflow saw it): due again at
	// that block's 40th confirmation, and only then.
	res2, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: randomAddress(t, n), Amount: "1"})
	require.NoError(t, err)
	res2Hash := hashOf(res2.BlockNumber)
	save(id, 2, res2.BlockNumber, res2Hash)
	scan()
	assert.Len(t, confirmed(), 2, "the new block is not deep enough yet")
	_, err = d.Mine(ctx, n, int(required)-1)
	require.NoError(t, err)
	scan()
	got = confirmed()
	require.Len(t, got, 3)
	assert.Equal(t, res2.BlockNumber, got[2].Transfers[0].BlockNumber)
	assert.True(t, got[2].Transfers[0].Canonical)

	// Once confirmed in the saved state, the transfer is awaited no more.
	var rows int
	_, err = db.store.SavePaymentState(ctx, paywatch.PaymentState{
		PaymentID: id, Status: paywatch.StatusPaid, Network: n, Token: paywatch.USDT,
		Amount: paywatch.MustParseAmount("10", 6), PaidAmount: paywatch.MustParseAmount("10", 6), Version: 3,
		Transactions: []paywatch.Transaction{{TxHash: res.TxHash, BlockNumber: res2.BlockNumber, BlockHash: res2Hash,
			From: "0xf", Amount: paywatch.MustParseAmount("10", 6), Confirmed: true, Confirmations: 40}},
	})
	require.NoError(t, err)
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM awaited_confirmations WHERE payment_id = $1`, id).Scan(&rows))
	assert.Zero(t, rows)
}

// A poll whose batch fails (here: a transfer for a payment whose workflow
// has not started yet holds the batch back) still pushes the confirmations
// due at the head it last saw.
func TestScannerPushesConfirmationsWhileABatchIsHeldBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.BEP20 // 15 confirmations
	d, set := devnetChain(ctx, t, n)
	st, _ := d.Network(n)
	client, err := set.Client(n)
	require.NoError(t, err)
	db := newScanDB(t)

	addr := randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, st.Head)
	res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	hash, err := client.BlockHash(ctx, res.BlockNumber)
	require.NoError(t, err)
	_, err = db.store.SavePaymentState(ctx, paywatch.PaymentState{
		PaymentID: id, Status: paywatch.StatusConfirming, Network: n, Token: paywatch.USDT,
		Amount: paywatch.MustParseAmount("10", 18), PaidAmount: paywatch.NewAmount(nil, 18), Version: 1,
		Transactions: []paywatch.Transaction{{TxHash: res.TxHash, BlockNumber: res.BlockNumber, BlockHash: hash,
			From: "0xf", Amount: paywatch.MustParseAmount("10", 18)}},
	})
	require.NoError(t, err)

	// A payment whose workflow has not started yet gets a transfer: every
	// batch from here on fails until it starts.
	unstarted := randomAddress(t, n)
	uid := db.watch(t, n, paywatch.USDT, unstarted, st.Head)
	db.setStarted(t, uid, false, 0)
	sig := &signalLog{ended: map[string]bool{workflows.PaymentWorkflowID(uid): true}}
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: unstarted, Amount: "1"})
	require.NoError(t, err)
	_, err = d.Mine(ctx, n, 15)
	require.NoError(t, err)

	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond}})
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 500 * time.Millisecond}, nil)
	require.NoError(t, err)
	assert.Less(t, p.Height, res.BlockNumber+1, "the batch with the unstarted payment's transfer is held back")
	var confirmed []workflows.TransferConfirmed
	for _, g := range sig.signals() {
		if g.Name == workflows.SignalTransfersConfirmed && g.WorkflowID == workflows.PaymentWorkflowID(id) {
			confirmed = append(confirmed, g.Arg.(workflows.TransfersConfirmed).Transfers...)
		}
	}
	require.Len(t, confirmed, 1)
	assert.True(t, confirmed[0].Canonical)
	assert.GreaterOrEqual(t, confirmed[0].Confirmations, 15)
}

// A caught-up scanner's polls lock onto its network's blocks: about one
// poll per block, each block seen within one step (an eighth of the
// interval) of being made, on a regular chain, a jittery one, one slower
// than its nominal block time and one faster (simulated: the chain makes
// block k at k·period ± jitter, and a poll sees the blocks made before
// it started plus half its duration). Latencies count once the pace has
// measured the blocks' period (the first 100 blocks).
func TestTipPollsLockOntoTheBlocks(t *testing.T) {
	const interval = time.Second
	step := interval / 8
	cases := []struct {
		name           string
		period, jitter time.Duration
		maxPolls       float64
		maxLatency     time.Duration // of the newest block a poll found
	}{
		{"regular", interval, 0, 1.15, step + 40*time.Millisecond},
		{"jitter ±10%", interval, interval / 10, 1.3, step + interval/5 + 40*time.Millisecond},
		{"20% slower than nominal", interval * 6 / 5, 0, 1.3, step + 40*time.Millisecond},
		{"20% faster than nominal", interval * 4 / 5, 0, 1.0, interval + 40*time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const blocks = 2000
			made := make([]time.Duration, blocks+2) // made[k]: when block k came
			for k := range made {
				made[k] = time.Duration(k)*c.period + time.Duration(rng.Int64N(int64(2*c.jitter)+1)) - c.jitter
				if k > 0 && made[k] <= made[k-1] {
					made[k] = made[k-1] + time.Millisecond
				}
			}
			base := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
			var pace activities.TipPace
			now, polls, seen := made[0], 0, uint64(0)
			var latencies []time.Duration
			for seen < blocks {
				polls++
				dur := time.Duration(10+rng.IntN(30)) * time.Millisecond
				head := seen
				for head+1 < uint64(len(made)) && made[head+1] <= now+dur/2 {
					head++
				}
				if head > seen && seen >= 100 {
					latencies = append(latencies, now+dur-made[head])
				}
				if head > seen {
					seen = head
				}
				next := pace.Next(base.Add(now), base.Add(now+dur), head, interval)
				now = next.Sub(base)
			}
			slices.Sort(latencies)
			perBlock := float64(polls) / blocks
			p50, worst := latencies[len(latencies)/2], latencies[len(latencies)-1]
			t.Logf("%s: %.3f polls per block, latency p50 %s, max %s", c.name, perBlock, p50, worst)
			assert.LessOrEqual(t, perBlock, c.maxPolls)
			assert.LessOrEqual(t, worst, c.maxLatency)
		})
	}
}

// The pace re-anchors when the head goes back (a failover to an endpoint
// a few blocks behind), rather than counting every poll as a miss until
// that endpoint passes the old head; and a measured period across a halt
// is capped at twice the interval.
func TestTipPaceAfterAHeadGoesBackAndAHalt(t *testing.T) {
	const interval = time.Second
	base := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var pace activities.TipPace
	at := func(d time.Duration) time.Time { return base.Add(d) }
	next := pace.Next(at(0), at(10*time.Millisecond), 100, interval)
	assert.Equal(t, at(interval-interval/128), next)
	next = pace.Next(at(time.Second), at(time.Second+10*time.Millisecond), 97, interval)
	assert.Equal(t, at(2*time.Second-interval/128), next, "a lower head anchors anew: a block's time later, not a step")

	// 64 blocks over ten minutes (a halt): the pace is at most 2 s.
	pace = activities.TipPace{}
	pace.Next(at(0), at(0), 1, interval)
	pace.Next(at(10*time.Minute), at(10*time.Minute), 65, interval)
	next = pace.Next(at(10*time.Minute+time.Second), at(10*time.Minute+time.Second), 66, interval)
	assert.Equal(t, at(10*time.Minute+time.Second+2*time.Second-2*time.Second/128), next)
}
