package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A scanner's failed polls are counted from the first, with the last
// error, next to the network's cursor or without one, until a poll works.
func TestScanFailuresJoinTheChainStatus(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20, paywatch.ERC20}))
	ctx := context.Background()
	_, err := s.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: 90, BlockHash: "h90", Head: 95}, nil)
	require.NoError(t, err)

	first := clk.Now()
	require.NoError(t, s.RecordScanFailure(ctx, paywatch.TRC20, "rpc endpoints unavailable: connection refused"))
	clk.Add(2 * time.Second)
	require.NoError(t, s.RecordScanFailure(ctx, paywatch.TRC20, "rate limited\x00 \xff"+strings.Repeat("x", 5000)))
	require.NoError(t, s.RecordScanFailure(ctx, paywatch.ERC20, "never reached"))

	st, err := s.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, st, 2)
	assert.Equal(t, uint64(90), st[0].Scanned)
	assert.Equal(t, uint64(5), st[0].LagBlocks)
	assert.Equal(t, 2, st[0].FailedPolls)
	assert.True(t, st[0].FailingSince.Equal(first), "since the first failure in a row")
	assert.True(t, strings.HasPrefix(st[0].LastError, "rate limited ?x"), "the last error, storable: %.30q", st[0].LastError)
	assert.LessOrEqual(t, len(st[0].LastError), 1000)
	assert.Equal(t, paywatch.ERC20, st[1].Network)
	assert.Equal(t, 1, st[1].FailedPolls, "a network without a cursor")
	assert.Zero(t, st[1].Scanned)

	require.NoError(t, s.ClearScanFailure(ctx, paywatch.TRC20))
	require.NoError(t, s.ClearScanFailure(ctx, paywatch.TRC20), "clearing twice is harmless")
	st, err = s.ChainStatus(ctx)
	require.NoError(t, err)
	assert.Zero(t, st[0].FailedPolls)
	assert.True(t, st[0].FailingSince.IsZero())
	assert.Empty(t, st[0].LastError)
	assert.Equal(t, uint64(90), st[0].Scanned, "the cursor stays")

	// Without WithNetworks, a network with only a failure record is listed.
	all, _ := newStore(t)
	require.NoError(t, all.RecordScanFailure(ctx, paywatch.BEP20, "down"))
	st, err = all.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, paywatch.BEP20, st[0].Network)
}

// A failure record last written before the scanner's last recorded
// progress is stale (a late write, a leftover activity): the scanner works,
// so ChainStatus does not report it; a failure after that progress counts.
func TestStaleScanFailureIsNotReported(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	for range 3 {
		require.NoError(t, s.RecordScanFailure(ctx, paywatch.TRC20, "down"))
	}
	clk.Add(time.Second)
	_, err := s.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: 90, BlockHash: "h90", Head: 95}, nil)
	require.NoError(t, err)

	st, err := s.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Zero(t, st[0].FailedPolls, "progress recorded since the failures")
	assert.True(t, st[0].FailingSince.IsZero())
	assert.Empty(t, st[0].LastError)
	assert.Equal(t, uint64(90), st[0].Scanned)

	clk.Add(time.Second)
	again := clk.Now()
	require.NoError(t, s.RecordScanFailure(ctx, paywatch.TRC20, "down again"))
	st, err = s.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, 1, st[0].FailedPolls, "a failure after the progress starts a new record")
	assert.True(t, st[0].FailingSince.Equal(again))
	assert.Equal(t, "down again", st[0].LastError)
}
