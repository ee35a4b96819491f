package activities_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// A network on which nothing waits is polled at its idle interval, over a
// long range, a few requests per poll however many blocks pass; a payment
// that comes to wait wakes the scanner within its wake check, and the
// payment's transfer is signalled as fast as on a busy network.
func TestIdleScannerPollsRarelyAndWakesForAPayment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, proxy, set := countedChain(ctx, t, n, 25*time.Millisecond)
	var err error
	db := newScanDB(t)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: sig,
		PollInterval:     map[paywatch.Network]time.Duration{n: 50 * time.Millisecond},
		IdlePollInterval: map[paywatch.Network]time.Duration{n: 2 * time.Second},
		WakeCheck:        100 * time.Millisecond,
	})
	assert.Equal(t, activities.DefaultEVMIdlePoll, activities.NewScanner(activities.ScannerDeps{}).IdlePollInterval(paywatch.ERC20))
	assert.Equal(t, 300*time.Second, activities.NewScanner(activities.ScannerDeps{}).IdlePollInterval(paywatch.TRC20),
		"TRC20: a 100-block range per idle poll")

	// Nothing waits: 5 s of blocks at 40 a second cost two or three idle polls.
	headBefore, _ := d.Network(n)
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 5 * time.Second}, nil)
	require.NoError(t, err)
	headAfter, _ := d.Network(n)
	blocks := headAfter.Head - headBefore.Head
	idleRequests := proxy.Requests()
	t.Logf("idle: %d requests over %d blocks", idleRequests, blocks)
	assert.True(t, p.Idle)
	assert.Greater(t, blocks, uint64(100))
	assert.LessOrEqual(t, idleRequests, 16, "a few requests per idle poll, not per block")
	status, err := db.store.ChainStatus(ctx)
	require.NoError(t, err)
	var checked bool
	for _, cs := range status {
		if cs.Network == n {
			checked = true
			assert.Equal(t, uint64(chains.RecentBlocks), cs.LagAllowance, "idle, it stays out of the blocks near the head, by design")
			assert.GreaterOrEqual(t, cs.LagBlocks, uint64(chains.RecentBlocks))
		}
	}
	assert.True(t, checked)

	// A payment comes to wait, and its transfer arrives, while one long
	// run idles: the scanner wakes within its wake check (not its idle
	// interval) and signals it, heartbeating all along.
	addr := randomAddress(t, n)
	var beats atomic.Int64
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Run(rctx, workflows.ScanInput{Network: n}, func(workflows.ScanProgress) { beats.Add(1) })
	}()
	time.Sleep(2500 * time.Millisecond) // idling: its 2 s interval has come round once
	idleBeats := beats.Load()
	head, _ := d.Network(n)
	db.watch(t, n, paywatch.USDT, addr, head.Head)
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	start := time.Now()
	var seenAt time.Duration
	for time.Since(start) < 5*time.Second && seenAt == 0 {
		for _, g := range sig.signals() {
			if g.Name == workflows.SignalTransferSeen && g.Arg.(paywatch.Transaction).TxHash == sent.TxHash {
				seenAt = time.Since(start)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	rcancel()
	<-done
	require.NotZero(t, seenAt, "the woken scanner signalled the transfer")
	t.Logf("woken: transfer signalled %s after it was mined", seenAt)
	assert.Less(t, seenAt, 1500*time.Millisecond, "woken within the wake check, not the idle interval")
	assert.GreaterOrEqual(t, idleBeats, int64(10), "an idle scanner heartbeats at each wake check while it waits")

	// Waiting, it polls at block pace: many more requests per second.
	before := proxy.Requests()
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 2 * time.Second}, nil)
	require.NoError(t, err)
	busy := proxy.Requests() - before
	t.Logf("waiting: %d requests in 2 s", busy)
	assert.Greater(t, busy, idleRequests, "a network with a payment waiting is polled at its block pace")
}

// What makes a network wait at block pace: a payment in progress, one
// expired inside its late window (late funds still count, judged by when
// their signal arrives), or a counted transfer awaiting its confirmations.
func TestWhatKeepsANetworkWaiting(t *testing.T) {
	ctx := context.Background()
	db := newScanDB(t)
	n := paywatch.BEP20
	waiting := func() bool {
		ok, err := db.store.Waiting(ctx, n)
		require.NoError(t, err)
		return ok
	}
	assert.False(t, waiting(), "nothing at all")
	id := db.watch(t, n, paywatch.USDT, randomAddress(t, n), 1)
	assert.True(t, waiting(), "pending")
	ok, err := db.store.Waiting(ctx, paywatch.ERC20)
	require.NoError(t, err)
	assert.False(t, ok, "another network's payment")
	_, err = db.pool.Exec(ctx, `UPDATE payments SET status = 'expired', expires_at = now() - interval '1 hour' WHERE id = $1`, id)
	require.NoError(t, err)
	// A run of the release before judges a late transfer by when its
	// signal arrives: its network stays at block pace through the window.
	assert.True(t, waiting(), "expired, in its late window, judged by its signals")
	_, err = db.pool.Exec(ctx, `UPDATE payments SET expires_at = now() - interval '25 hours' WHERE id = $1`, id)
	require.NoError(t, err)
	assert.False(t, waiting(), "expired, its late window over")
	// Issue 37, item 4: a run that closes its late window by reading the
	// chain leaves an abandoned checkout's network at the idle pace.
	_, err = db.pool.Exec(ctx, `UPDATE payments SET expires_at = now() - interval '1 hour', late_by_chain = true WHERE id = $1`, id)
	require.NoError(t, err)
	assert.False(t, waiting(), "expired, in its late window, closed by the chain")
	_, err = db.pool.Exec(ctx, `INSERT INTO awaited_confirmations (payment_id, network, tx_hash, log_index, block_number, block_hash)
		VALUES ($1, $2, '0xabc', 0, 5, '0xdef')`, id, string(n))
	require.NoError(t, err)
	assert.True(t, waiting(), "a late transfer awaiting its confirmations")
	_, err = db.pool.Exec(ctx, `UPDATE awaited_confirmations SET signalled_at = now()`)
	require.NoError(t, err)
	assert.False(t, waiting(), "signalled")
	for _, status := range []string{"confirming", "partial"} {
		_, err = db.pool.Exec(ctx, `UPDATE payments SET status = $2 WHERE id = $1`, id, status)
		require.NoError(t, err)
		assert.True(t, waiting(), status)
	}
	_, err = db.pool.Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = $1`, id)
	require.NoError(t, err)
	assert.False(t, waiting(), "paid")
}

// After a rate limit whose Retry-After every endpoint sent, the scanner
// waits at least that long; without one, its own backoff.
func TestBackoffHonoursRetryAfter(t *testing.T) {
	limited := fmt.Errorf("%w: no", chains.ErrRateLimited)
	plain := activities.Backoff(limited, 1)
	assert.Less(t, plain, 10*time.Second)
	asked := fmt.Errorf("%w: %w", chains.ErrRateLimited, &chains.RetryAfterError{After: 90 * time.Second, Err: errors.New("429")})
	assert.GreaterOrEqual(t, activities.Backoff(asked, 1), 90*time.Second)
}
