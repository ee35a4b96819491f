package store_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// Two scans of one network: the newer one's lease refuses the older one's
// batches, and a batch the older one was recording when the newer one
// started commits before the newer one reads the cursor.
func TestScanLeaseFencesTheOlderScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	n := paywatch.POLYGON
	transfer := func(hash string, block uint64) paywatch.Transfer {
		return paywatch.Transfer{Network: n, Token: paywatch.USDT, TxHash: hash, BlockNumber: block, BlockHash: "h",
			From: "0xf", To: "0x1111111111111111111111111111111111111111", Amount: big.NewInt(5)}
	}

	older, err := s.AcquireScanLease(ctx, n)
	require.NoError(t, err)
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 100, BlockHash: "h100", Head: 120, Generation: older}, nil)
	require.NoError(t, err)

	// The older scan is mid-batch (signalling inside its transaction) when
	// the newer one starts.
	inBatch, release := make(chan struct{}), make(chan struct{})
	olderDone := make(chan error, 1)
	go func() {
		_, err := s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 110, BlockHash: "h110", Head: 120, Generation: older,
			Transfers: []paywatch.Transfer{transfer("0xa", 105)}},
			func(context.Context, []store.ClaimedTransfer) error {
				close(inBatch)
				<-release
				return nil
			})
		olderDone <- err
	}()
	<-inBatch
	type lease struct {
		gen uint64
		err error
	}
	acquired := make(chan lease, 1)
	go func() {
		gen, err := s.AcquireScanLease(ctx, n)
		acquired <- lease{gen, err}
	}()
	select {
	case l := <-acquired:
		t.Fatalf("the newer scan took the lease (generation %d, %v) while the older one's batch was uncommitted", l.gen, l.err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-olderDone, "the batch in flight commits")
	l := <-acquired
	require.NoError(t, l.err)
	newer := l.gen
	assert.Greater(t, newer, older)

	// The newer scan reads the cursor the older one's last batch left.
	cur, ok, err := s.ChainCursor(ctx, n)
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 110, cur.Height)

	// From now on the older scan's batches are refused, before anything is
	// written or signalled.
	signalled := false
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 90, BlockHash: "h90", Head: 120, Generation: older,
		Transfers: []paywatch.Transfer{transfer("0xb", 95)}},
		func(context.Context, []store.ClaimedTransfer) error { signalled = true; return nil })
	require.ErrorIs(t, err, store.ErrScanLeaseLost)
	assert.False(t, signalled)
	cur, _, err = s.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.EqualValues(t, 110, cur.Height, "the cursor did not move backwards")
	_, ok, err = s.ChainTransferByKey(ctx, n, paywatch.TransferKey{TxHash: "0xb"})
	require.NoError(t, err)
	assert.False(t, ok, "the refused batch recorded nothing")

	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 130, BlockHash: "h130", Head: 130, Generation: newer}, nil)
	require.NoError(t, err)
	cur, _, err = s.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.EqualValues(t, 130, cur.Height)

	// A lease is per network; a generation never taken is refused.
	other, err := s.AcquireScanLease(ctx, paywatch.BEP20)
	require.NoError(t, err)
	assert.EqualValues(t, 1, other)
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.ERC20, Height: 1, Generation: 1}, nil)
	assert.ErrorIs(t, err, store.ErrScanLeaseLost)
}
