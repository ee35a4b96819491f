package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// On a busy pool + txid address an unclaimed transfer is pending only
// while a payment could still claim its hash: a live payment of its token
// whose start block is at or before the transfer's (VerifyTxHash refuses
// an earlier transaction). A double payment nobody submits turns unmatched
// once the payments that started before it end, however many later
// payments keep the address busy; a transfer a later open payment can
// still claim stays pending.
func TestTxidTransferPendingWhileClaimable(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	addr := tronAddrs[0]
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "txid", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", addr))}
	f.record(10, "")
	first, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	clk.Add(time.Second)
	second, _, err := s.CreatePayment(ctx, newPayment(f.prj, "bob", "10"))
	require.NoError(t, err)
	require.Equal(t, addr, first.Address)
	require.Equal(t, addr, second.Address)

	// Alice pays twice and submits the first hash only.
	paid := tronTransfer(hashOf('1'), addr, "10", 12)
	double := tronTransfer(hashOf('2'), addr, "10", 12)
	f.record(40, "", paid, double)
	require.NoError(t, s.ClaimTxHash(ctx, paywatch.TRC20, paid.TxHash, first.ID, []paywatch.Transfer{paid}))
	_, err = s.SavePaymentState(ctx, paidState(first, 1, paid.TxHash, "10"))
	require.NoError(t, err)
	assert.Equal(t, store.TransferMatched, f.state(paid.TxHash).State)
	assert.Equal(t, store.TransferPending, f.state(double.TxHash).State, "bob's payment, open since before it, may still be given its hash")

	// Bob's payment ends; a stream of later payments keeps the address
	// busy, open or inside their late windows.
	ended := clk.Now().Add(-paywatch.LateWindow - paywatch.ConfirmingGrace - time.Minute)
	setStatus(t, s, second.ID, paywatch.StatusExpired, &ended)
	var later []*store.Payment
	for i, ref := range []string{"carol", "dave", "erin"} {
		clk.Add(time.Minute)
		f.record(uint64(50+10*i), "")
		p, _, err := s.CreatePayment(ctx, newPayment(f.prj, ref, "10"))
		require.NoError(t, err)
		require.Greater(t, p.StartBlock, double.BlockNumber)
		later = append(later, p)
	}
	expired := clk.Now().Add(-time.Hour)
	setStatus(t, s, later[0].ID, paywatch.StatusExpired, &expired)
	got := f.state(double.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State, "no payment that could claim it is left")
	assert.Equal(t, store.ReasonAfterExpired, got.Reason)
	assert.Equal(t, second.ID, got.RelatedPaymentID)
	due, err := s.DueUnmatched(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1, "told")
	assert.Equal(t, double.TxHash, due[0].TxHash)

	// A transfer after the later payments started: they may still be given
	// its hash.
	fresh := tronTransfer(hashOf('3'), addr, "10", later[2].StartBlock)
	f.record(later[2].StartBlock+30, "", fresh)
	assert.Equal(t, store.TransferPending, f.state(fresh.TxHash).State)
	setStatus(t, s, later[1].ID, paywatch.StatusCancelled, nil)
	assert.Equal(t, store.TransferPending, f.state(fresh.TxHash).State, "erin's payment is still open")
	setStatus(t, s, later[2].ID, paywatch.StatusCancelled, nil)
	assert.Equal(t, store.TransferPending, f.state(fresh.TxHash).State, "carol's, expired an hour ago, is in its late window")
	setStatus(t, s, later[0].ID, paywatch.StatusExpired, &ended)
	assert.Equal(t, store.TransferUnmatched, f.state(fresh.TxHash).State)
}

// A pool + txid payment cannot claim a transaction whose hash another
// payment claimed (tx_claims, ClaimTxHash's 409): a transaction paying two
// addresses of a pool, submitted for the payment on one, leaves its
// transfer to the other unmatched, not pending while that address's open
// payment lasts.
func TestTxidTransferOfAHashClaimedElsewhere(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "txid", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", tronAddrs[:2]...))}
	f.record(10, "")
	x, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	y, _, err := s.CreatePayment(ctx, newPayment(f.prj, "bob", "10"))
	require.NoError(t, err)
	require.NotEqual(t, x.Address, y.Address, "the least busy address")

	h := hashOf('4')
	toX := tronTransfer(h, x.Address, "10", 12)
	toY := tronTransfer(h, y.Address, "10", 12)
	toY.LogIndex = 1
	f.record(40, "", toX, toY)
	require.NoError(t, s.ClaimTxHash(ctx, paywatch.TRC20, h, x.ID, []paywatch.Transfer{toX}))
	err = s.ClaimTxHash(ctx, paywatch.TRC20, h, y.ID, []paywatch.Transfer{toY})
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)

	idx := uint32(1)
	got, err := s.ProjectTransfer(ctx, f.prj.ID, paywatch.TRC20, h, &idx)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State, "bob's payment can never claim it")
	assert.Equal(t, store.ReasonNotTaken, got.Reason)
	assert.Equal(t, y.ID, got.RelatedPaymentID)
	idx = 0
	got, err = s.ProjectTransfer(ctx, f.prj.ID, paywatch.TRC20, h, &idx)
	require.NoError(t, err)
	assert.Equal(t, store.TransferPending, got.State, "claimed by alice's payment, still open")
}

// The second half of the claim's rule: a pool + txid payment cannot claim
// a transaction another of whose transfers to the address is claimed for
// another payment, so the rest of that transaction is unmatched even
// while such a payment is open on the address.
func TestTxidTransferOfATransactionPartlyClaimedElsewhere(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "txid", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", tronAddrs[0]))}
	f.record(10, "")
	x, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	y, _, err := s.CreatePayment(ctx, newPayment(f.prj, "bob", "10"))
	require.NoError(t, err)
	require.Equal(t, x.Address, y.Address, "one pool address")

	h := hashOf('6')
	first := tronTransfer(h, x.Address, "10", 12)
	second := tronTransfer(h, x.Address, "10", 12)
	second.LogIndex = 1
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: 40, BlockHash: "h40", Head: 40,
		Transfers: []paywatch.Transfer{first, second}, Claims: []store.TransferClaim{{Transfer: first, PaymentID: x.ID}}}, nil)
	require.NoError(t, err)
	setStatus(t, s, x.ID, paywatch.StatusPaid, nil)

	err = s.ClaimTxHash(ctx, paywatch.TRC20, h, y.ID, []paywatch.Transfer{second})
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
	idx := uint32(1)
	got, err := s.ProjectTransfer(ctx, f.prj.ID, paywatch.TRC20, h, &idx)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State, "bob's open payment can never claim it")
}
