package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// A daily budget is spent evenly over the UTC day: at any moment the day's
// share so far plus half an hour's share; past it, the scanner waits until
// the share has caught up, and never past the day's end.
func TestBudgetWait(t *testing.T) {
	noon := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const perDay = 86_400 // one a second
	assert.Zero(t, activities.BudgetWait(0, 1_000_000, noon), "no budget")
	assert.Zero(t, activities.BudgetWait(perDay, 43_200, noon), "on the even pace")
	assert.Zero(t, activities.BudgetWait(perDay, 43_200+1_800, noon), "half an hour ahead")
	assert.Equal(t, 5_000*time.Second, activities.BudgetWait(perDay, 43_200+1_800+5_000, noon), "5,000 past the pace and its slack: 5,000 s")
	assert.Equal(t, 12*time.Hour, activities.BudgetWait(perDay, 200_000, noon), "spent: until the day ends")
	assert.Zero(t, activities.BudgetWait(perDay, 1_800, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)), "a new day")
	late := time.Date(2026, 11, 27, 23, 59, 0, 0, time.UTC)
	assert.Zero(t, activities.BudgetWait(perDay, perDay-1, late), "the last request of the day")
	assert.Equal(t, time.Minute, activities.BudgetWait(perDay, perDay, late), "never more than the budget: until the day ends")
}

// A scanner with a daily budget stays within its share of the day: here
// at 00:30 UTC a budget of 480 requests a day allows 20 (10 for the half
// hour gone, 10 of slack), where a busy network at 20 blocks a second
// costs that every second. Its requests are counted in PostgreSQL, where
// /health and the metrics read them.
func TestScannerStaysWithinItsDailyBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, proxy, set := countedChain(ctx, t, n, 50*time.Millisecond)
	var err error
	st, _ := d.Network(n)
	db := newScanDB(t)
	db.watch(t, n, paywatch.USDT, randomAddress(t, n), st.Head)
	// The scanner's clock reads 00:30 UTC today, and runs.
	realStart := time.Now()
	start := realStart.UTC().Truncate(24 * time.Hour).Add(30 * time.Minute)
	clock := func() time.Time { return start.Add(time.Since(realStart)) }
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: &signalLog{}, Clock: clock,
		PollInterval: map[paywatch.Network]time.Duration{n: 50 * time.Millisecond},
		DailyBudget:  map[paywatch.Network]uint64{n: 480},
	})
	assert.Equal(t, uint64(480), s.DailyBudget(n))
	assert.Zero(t, activities.NewScanner(activities.ScannerDeps{}).DailyBudget(n), "no budget unless set")

	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 4 * time.Second}, nil)
	require.NoError(t, err)
	requests := proxy.Requests()
	t.Logf("%d requests in 4 s under a budget that allows 20 by now", requests)
	assert.True(t, p.OverBudget, "it waits for its budget")
	assert.LessOrEqual(t, requests, 20+4, "the share so far, plus the poll that crossed it")
	assert.GreaterOrEqual(t, requests, 15, "it spends what the share allows")
	status, err := db.store.ChainStatus(ctx)
	require.NoError(t, err)
	var found bool
	for _, cs := range status {
		if cs.Network == n {
			found = true
			assert.Equal(t, uint64(requests), cs.RPCRequestsToday, "every request counted, the last ones when the run ended")
			assert.Equal(t, uint64(480), cs.RPCDailyBudget)
		}
	}
	assert.True(t, found)

	// A new run (another replica, say) goes on from the day's count: it
	// is over budget from its first poll.
	before := proxy.Requests()
	p, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: time.Second}, nil)
	require.NoError(t, err)
	assert.True(t, p.OverBudget)
	assert.LessOrEqual(t, proxy.Requests()-before, 4, "one poll at most")
	status, err = db.store.ChainStatus(ctx)
	require.NoError(t, err)
	for _, cs := range status {
		if cs.Network == n {
			assert.Equal(t, uint64(proxy.Requests()), cs.RPCRequestsToday, "each request counted once over both runs")
		}
	}
}

// Issue 37, item 1: a network whose daily budget is spent (here at 00:30
// UTC, all 480 requests of the day) stops polling while nothing waits on
// it, but a payment waiting on it still has its transfer read: the
// scanner polls past the budget, at most OverBudgetPoll apart, and the
// customer's transfer is signalled within that of its block.
func TestSpentBudgetNeverStopsAWaitingPayment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, proxy, set := countedChain(ctx, t, n, 100*time.Millisecond)
	db := newScanDB(t)
	realStart := time.Now()
	start := realStart.UTC().Truncate(24 * time.Hour).Add(30 * time.Minute)
	clock := func() time.Time { return start.Add(time.Since(realStart)) }
	_, err := db.store.AddRPCUsage(ctx, n, clock(), 480, 480)
	require.NoError(t, err)
	signals := &signalLog{}
	const overPoll = 2 * time.Second
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: signals, Clock: clock,
		PollInterval:   map[paywatch.Network]time.Duration{n: 100 * time.Millisecond},
		DailyBudget:    map[paywatch.Network]uint64{n: 480},
		OverBudgetPoll: overPoll,
		BatchBlocks:    map[paywatch.Network]uint64{n: 200},
	})

	// Nothing waits: the scanner polls once and rests.
	before := proxy.Requests()
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 3 * time.Second}, nil)
	require.NoError(t, err)
	assert.LessOrEqual(t, proxy.Requests()-before, 4, "one poll at most")

	// The scanner stays away while 3,000 blocks are made (a day over
	// budget, idle): 15 batches behind. A payment waits, and its customer
	// pays: the scanner catches up back to back, not one batch per
	// over-budget poll.
	_, err = d.Mine(ctx, n, 3000)
	require.NoError(t, err)
	addr := randomAddress(t, n)
	db.watch(t, n, paywatch.USDT, addr, mustHead(t, d, n))
	seen := make(chan time.Time, 1)
	signals.onSeen = func(tx paywatch.Transaction) {
		select {
		case seen <- time.Now():
		default:
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(runCtx, workflows.ScanInput{Network: n, RunFor: 20 * time.Second}, nil)
		done <- err
	}()
	time.Sleep(time.Second)
	paid, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "25"})
	require.NoError(t, err)
	mined, ok := d.MinedAt(n, paid.BlockNumber)
	require.True(t, ok)
	select {
	case at := <-seen:
		assert.Less(t, at.Sub(mined), 2*overPoll, "read within the over-budget pace of its block")
	case <-time.After(15 * time.Second):
		t.Fatal("the transfer to a waiting payment was never read under a spent budget")
	}
	stop()
	<-done
	status, err := db.store.ChainStatus(ctx)
	require.NoError(t, err)
	for _, cs := range status {
		if cs.Network == n {
			assert.Greater(t, cs.RPCRequestsToday, cs.RPCDailyBudget, "the overrun is counted, for /health and the metrics")
		}
	}
}
