package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sliding window lets no burst of twice the limit through across a
// window's edge (issue 28, item 17): ten hits in the last second of a
// minute leave room for none in the first seconds of the next, and the
// previous minute's hits weigh less as the window slides past them.
func TestHitSlidingAcrossTheEdge(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	clk.Add(time.Minute - clk.Now().Sub(clk.Now().Truncate(time.Minute)) - time.Second) // 1 s before the minute turns
	for i := 1; i <= 10; i++ {
		w, err := s.HitSliding(ctx, "k", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, int64(i), w.Count)
	}
	clk.Add(2 * time.Second) // 1 s into the next minute
	w, err := s.HitSliding(ctx, "k", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(11), w.Count, "1 now + the 10 of the previous minute, 59/60 of which are still in the window, rounded up")
	fixed, err := s.HitRate(ctx, "f", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1), fixed.Count, "where a fixed window starts again")

	clk.Add(45 * time.Second) // 46 s into the minute: 14/60 of the previous one left
	w, err = s.HitSliding(ctx, "k", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(2+3), w.Count, "2 now + ceil(10 x 14/60)")
	clk.Add(time.Minute) // the earlier minute is out of the window
	w, err = s.HitSliding(ctx, "k", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1+(2*14+59)/60), w.Count)
}
