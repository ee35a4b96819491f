package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// Scanners of one network (a replica taking over, an activity's retry
// racing the attempt it replaces) add their requests to the day's count
// at once: none is lost. The count is per UTC day, and the chain status
// shows today's with the budget last recorded.
func TestRPCUsageAddsUpConcurrently(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.BEP20}))
	ctx := context.Background()
	now := clk.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.AddRPCUsage(ctx, paywatch.BEP20, now, 5, 1_000)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	total, err := s.AddRPCUsage(ctx, paywatch.BEP20, now, 0, 2_000)
	require.NoError(t, err)
	assert.Equal(t, uint64(100), total)
	st, err := s.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, uint64(100), st[0].RPCRequestsToday)
	assert.Equal(t, uint64(2_000), st[0].RPCDailyBudget, "the budget last recorded")

	// The next UTC day starts from nothing.
	tomorrow := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	total, err = s.AddRPCUsage(ctx, paywatch.BEP20, tomorrow, 3, 2_000)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), total)
	clk.Add(tomorrow.Sub(now))
	st, err = s.ChainStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), st[0].RPCRequestsToday)
}
