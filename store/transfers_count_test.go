package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// countAndList returns the dashboard's count and the total of what the
// Unmatched page lists by default (unmatched, not handled).
func countAndList(t *testing.T, s *store.Store, projectID int64) (count, listed int) {
	t.Helper()
	ctx := context.Background()
	count, err := s.CountUnmatched(ctx, projectID)
	require.NoError(t, err)
	yes, no := true, false
	_, listed, err = s.ProjectTransfers(ctx, projectID, store.TransferFilter{Unmatched: &yes, Handled: &no})
	require.NoError(t, err)
	return count, listed
}

// The dashboard's count follows what the Unmatched page lists: a told
// transfer that a payment later counted (a reorg mined it again after a
// newer payment of the address started) or that a raised minimum made
// dust leaves it; a plain told one stays. A transfer settled silently as
// dust that a lowered minimum makes unmatched is told then, once, and
// counted.
func TestUnmatchedCountFollowsTheList(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "shop", mode(paywatch.ModePerUser), hdWallet())}
	first, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	counted := tronTransfer(hashOf('1'), first.Address, "10", 10)
	f.record(10, first.ID, counted)
	_, err = s.SavePaymentState(ctx, paidState(first, 1, counted.TxHash, "10"))
	require.NoError(t, err)
	again := tronTransfer(hashOf('2'), first.Address, "10", 11)
	plain := tronTransfer(hashOf('3'), first.Address, "10", 11)
	small := tronTransfer(hashOf('4'), first.Address, "0.50", 11)
	dust := tronTransfer(hashOf('5'), first.Address, "0.05", 11)
	f.record(40, "", again, plain, small, dust)
	told := tell(t, s)
	require.Len(t, told, 3)
	assert.NotContains(t, told, dust.TxHash, "dust is settled silently")
	n, listed := countAndList(t, s, f.prj.ID)
	assert.Equal(t, 3, n)
	assert.Equal(t, 3, listed)

	// (a) A reorg drops the second transfer; mined again after the
	// customer's next payment on the address started, that payment counts
	// it.
	second, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	require.Equal(t, first.Address, second.Address, "per_user: the customer's address")
	require.NoError(t, s.MarkTransfersRemoved(ctx, paywatch.TRC20, []paywatch.TransferKey{again.Key()}))
	back := again
	back.BlockNumber, back.BlockHash = second.StartBlock, "bagain"
	f.record(second.StartBlock, second.ID, back)
	f.record(second.StartBlock+30, "")
	_, err = s.SavePaymentState(ctx, paidState(second, 1, again.TxHash, "10"))
	require.NoError(t, err)
	got := f.state(again.TxHash)
	require.Equal(t, store.TransferMatched, got.State)
	assert.Equal(t, second.ID, got.PaymentID)
	n, listed = countAndList(t, s, f.prj.ID)
	assert.Equal(t, 2, listed)
	assert.Equal(t, 2, n, "a told transfer a payment counted is not counted")

	// (b) The minimum goes above the small one: dust now, not listed, not
	// to be marked, and not counted.
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{MinAmount: ptr(paywatch.MustParseAmount("1", 2))})
	require.NoError(t, err)
	assert.Equal(t, store.TransferBelowMinimum, f.state(small.TxHash).State)
	_, err = s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, small.TxHash, nil, "x", "")
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTransferNotUnmatched)
	n, listed = countAndList(t, s, f.prj.ID)
	assert.Equal(t, 1, listed)
	assert.Equal(t, 1, n, "a told transfer now below the minimum is not counted")
	assert.Empty(t, tell(t, s), "raising the minimum tells nothing")

	// (c) The minimum goes below the dust settled silently: it is
	// unmatched now, so it is told (once) and counted; the small one is
	// counted again, not told again.
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{MinAmount: ptr(paywatch.MustParseAmount("0.01", 2))})
	require.NoError(t, err)
	got = f.state(dust.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonAfterPaid, got.Reason)
	told = tell(t, s)
	require.Len(t, told, 1)
	assert.Contains(t, told, dust.TxHash)
	assert.Empty(t, tell(t, s), "told once")
	n, listed = countAndList(t, s, f.prj.ID)
	assert.Equal(t, 3, listed)
	assert.Equal(t, 3, n, "plain, small and dust")

	// Marking handled takes one off both.
	_, err = s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, plain.TxHash, nil, "owner@shop.test", "refunded")
	require.NoError(t, err)
	n, listed = countAndList(t, s, f.prj.ID)
	assert.Equal(t, 2, listed)
	assert.Equal(t, 2, n)
}

// A lowered minimum racing the reconciler's settle: a dust transfer the
// settle marks under the old minimum, committing after the change's
// reopen looked, would be unmatched and never told. Every transfer the new
// minimum makes unmatched is told, however the two interleave.
func TestLoweredMinimumRacesTheSettle(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "shop", mode(paywatch.ModePerUser), hdWallet())}
	first, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	paying := tronTransfer(hashOf('1'), first.Address, "10", 10)
	f.record(10, first.ID, paying)
	_, err = s.SavePaymentState(ctx, paidState(first, 1, paying.TxHash, "10"))
	require.NoError(t, err)

	const perRound = 1500
	height := uint64(20)
	for round := range 6 {
		_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{MinAmount: ptr(paywatch.MustParseAmount("0.10", 2))})
		require.NoError(t, err)
		dust := make([]paywatch.Transfer, perRound)
		for i := range dust {
			n := round*perRound + i + 1
			dust[i] = tronTransfer(fmt.Sprintf("%032x%032x", n, n), first.Address, "0.05", height)
		}
		f.record(height, "", dust...)
		height += 30
		f.record(height, "") // confirmed

		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.DueUnmatched(ctx, 1)
			assert.NoError(t, err)
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(round*15) * time.Millisecond)
			_, err := s.UpdateProject(ctx, "shop", store.ProjectSettings{MinAmount: ptr(paywatch.MustParseAmount("0.01", 2))})
			assert.NoError(t, err)
		}()
		wg.Wait()
		for {
			due, err := s.DueUnmatched(ctx, 1000)
			require.NoError(t, err)
			if len(due) == 0 {
				break
			}
			for _, tr := range due {
				_, _, err := s.TellUnmatched(ctx, tr, store.UnmatchedNotice{
					EventID: uuidOf(tr.TxHash), Payload: []byte(`{"event":"transfer.unmatched"}`),
				})
				require.NoError(t, err)
			}
		}
		var told int
		require.NoError(t, s.Pool().QueryRow(ctx, `
			SELECT count(*) FROM webhook_events e JOIN chain_transfers t
			  ON e.network = t.network AND e.tx_hash = t.tx_hash AND e.log_index = t.log_index
			WHERE t.block_number = $1`, int64(height-30)).Scan(&told))
		assert.Equal(t, perRound, told, "round %d: every transfer the lowered minimum makes unmatched is told", round)
	}
}
