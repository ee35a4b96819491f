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

// A network on which nothing waits is polled at its idle interval, over a
// long range, a few requests per poll however many blocks pass; a payment
// that comes to wait wakes the scanner within its wake check, and the
// payment's transfer is signalled as fast as on a busy network.
func TestIdleScannerPollsRarelyAndWakesForAPayment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}, BlockInterval: 25 * time.Millisecond})
	require.NoError(t, err)
	defer d.Close()
	st, _ := d.Network(n)
	proxy := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL})
	defer proxy.Close()
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer set.Close()
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

	// Nothing waits: 5 s of blocks at 20 a second cost two or three idle polls.
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
	for _, cs := range status {
		if cs.Network == n {
			assert.Equal(t, uint64(chains.RecentBlocks), cs.LagAllowance, "idle, it stays out of the blocks near the head, by design")
			assert.GreaterOrEqual(t, cs.LagBlocks, uint64(chains.RecentBlocks))
		}
	}

	// A payment comes to wait, and its transfer arrives: the scanner wakes
	// and signals it within a second or so, as a busy scanner would.
	addr := randomAddress(t, n)
	go func() {
		time.Sleep(time.Second)
		head, _ := d.Network(n)
		db.watch(t, n, paywatch.USDT, addr, head.Head)
		_, _ = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	}()
	start := time.Now()
	var seenAt time.Duration
	for time.Since(start) < 6*time.Second && seenAt == 0 {
		_, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 200 * time.Millisecond}, nil)
		require.NoError(t, err)
		for _, g := range sig.signals() {
			if g.Name == workflows.SignalTransferSeen {
				seenAt = time.Since(start)
			}
		}
	}
	require.NotZero(t, seenAt, "the woken scanner signalled the transfer")
	assert.Less(t, seenAt, 3*time.Second, "woken within the wake check, not the idle interval")

	// Waiting, it polls at block pace: many more requests per second.
	before := proxy.Requests()
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 2 * time.Second}, nil)
	require.NoError(t, err)
	busy := proxy.Requests() - before
	t.Logf("waiting: %d requests in 2 s", busy)
	assert.Greater(t, busy, idleRequests, "a network with a payment waiting is polled at its block pace")
}

// What makes a network wait at block pace: a payment in progress, or a
// counted transfer awaiting its confirmations; an expired payment inside
// its late window alone does not (it is scanned at the idle pace, and its
// window's end reads the chain itself).
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
	assert.False(t, waiting(), "expired, in its late window: idle pace")
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
