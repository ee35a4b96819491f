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

// unmatchedFixture is a TRC20 project with payments, and a scanner cursor
// that records transfers to its addresses.
type unmatchedFixture struct {
	t      *testing.T
	s      *store.Store
	clk    *testClock
	prj    *store.Project
	height uint64
}

// record records transfers (claimed for payment when it is set) and moves
// the cursor to height.
func (f *unmatchedFixture) record(height uint64, payment string, ts ...paywatch.Transfer) {
	f.t.Helper()
	b := store.ScanBatch{Network: paywatch.TRC20, Height: height, BlockHash: "h" + big.NewInt(int64(height)).String(), Head: height, Transfers: ts}
	if payment != "" {
		for _, t := range ts {
			b.Claims = append(b.Claims, store.TransferClaim{Transfer: t, PaymentID: payment})
		}
	}
	_, err := f.s.RecordScan(context.Background(), b, nil)
	require.NoError(f.t, err)
	f.height = height
}

// state returns how the transfer of hash stands for the project.
func (f *unmatchedFixture) state(hash string) store.ProjectTransfer {
	f.t.Helper()
	got, err := f.s.ProjectTransfer(context.Background(), f.prj.ID, paywatch.TRC20, hash, nil)
	require.NoError(f.t, err)
	return got
}

// tronTransfer is a USDT transfer of amt to addr in block.
func tronTransfer(hash, addr, amt string, block uint64) paywatch.Transfer {
	return paywatch.Transfer{
		TxHash: hash, BlockNumber: block, BlockHash: "b" + hash[:8], Token: paywatch.USDT,
		From: tronAddrs[0], To: addr, Amount: amount(amt, paywatch.TRC20, paywatch.USDT).Units(),
	}
}

func hashOf(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// Every case of money no payment counted is listed as unmatched, with why;
// what a payment holds is matched, never unmatched; what is short of its
// confirmations, or may still be taken, is pending; dust is below the
// minimum; and marking one handled records who and why.
func TestTransfersClassified(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "shop", mode(paywatch.ModePerPayment), hdWallet())}

	paid, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	cancelled, _, err := s.CreatePayment(ctx, newPayment(f.prj, "bob", "10"))
	require.NoError(t, err)
	late, _, err := s.CreatePayment(ctx, newPayment(f.prj, "carol", "10"))
	require.NoError(t, err)
	open, _, err := s.CreatePayment(ctx, newPayment(f.prj, "dave", "10"))
	require.NoError(t, err)

	counted := tronTransfer(hashOf('1'), paid.Address, "10", 10)
	f.record(10, paid.ID, counted)
	_, err = s.SavePaymentState(ctx, paidState(paid, 1, counted.TxHash, "10"))
	require.NoError(t, err)
	again := tronTransfer(hashOf('2'), paid.Address, "10", 11)
	dust := tronTransfer(hashOf('3'), paid.Address, "0.05", 11)
	setStatus(t, s, cancelled.ID, paywatch.StatusCancelled, nil)
	afterCancel := tronTransfer(hashOf('4'), cancelled.Address, "10", 11)
	expiredAt := clk.Now().Add(-time.Hour)
	setStatus(t, s, late.ID, paywatch.StatusExpired, &expiredAt)
	lateFunds := tronTransfer(hashOf('5'), late.Address, "4", 12)
	f.record(12, "", again, dust, afterCancel)
	f.record(13, late.ID, lateFunds)
	fresh := tronTransfer(hashOf('6'), paid.Address, "10", 13)
	f.record(13, "", fresh)

	// Short of 19 confirmations: everything not held is pending.
	for _, h := range []string{again.TxHash, afterCancel.TxHash, dust.TxHash} {
		assert.Equal(t, store.TransferPending, f.state(h).State, h)
	}
	f.record(40, "")
	got := f.state(counted.TxHash)
	assert.Equal(t, store.TransferMatched, got.State)
	assert.Equal(t, paid.ID, got.PaymentID)
	assert.Empty(t, got.Reason)
	assert.Equal(t, 31, got.Confirmations)
	got = f.state(again.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State, "a second payment after paid")
	assert.Equal(t, store.ReasonAfterPaid, got.Reason)
	assert.Equal(t, paid.ID, got.RelatedPaymentID)
	assert.Equal(t, "10.00", got.Amount.String())
	assert.Equal(t, store.TransferBelowMinimum, f.state(dust.TxHash).State)
	got = f.state(afterCancel.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonAfterCancelled, got.Reason)
	assert.Equal(t, store.TransferPending, f.state(lateFunds.TxHash).State, "inside the late window: the payment may still take it")
	assert.Equal(t, store.TransferUnmatched, f.state(fresh.TxHash).State)

	// The late window closes without the payment taking it.
	clk.Add(paywatch.LateWindow + paywatch.ConfirmingGrace)
	setStatus(t, s, late.ID, paywatch.StatusExpired, nil)
	got = f.state(lateFunds.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonAfterExpired, got.Reason)
	assert.Equal(t, late.ID, got.RelatedPaymentID)

	const kioskAddr = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
	// An address with nothing ever opened on it (a static address of
	// another project) is that project's, not this one's.
	other := project(t, s, "kiosk", mode(paywatch.ModeDedicated), staticWallet("TRC20", kioskAddr))
	nobody := tronTransfer(hashOf('7'), kioskAddr, "3", 41)
	f.record(70, "", nobody)
	_, err = s.ProjectTransfer(ctx, f.prj.ID, paywatch.TRC20, nobody.TxHash, nil)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	got, err = s.ProjectTransfer(ctx, other.ID, paywatch.TRC20, nobody.TxHash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonNoPayment, got.Reason)

	// The list, its filters and the count.
	yes, no := true, false
	list, total, err := s.ProjectTransfers(ctx, f.prj.ID, store.TransferFilter{Unmatched: &yes})
	require.NoError(t, err)
	assert.Equal(t, 4, total)
	assert.Len(t, list, 4)
	for _, tr := range list {
		assert.NotEqual(t, counted.TxHash, tr.TxHash, "a transfer a payment holds is never unmatched")
	}
	_, total, err = s.ProjectTransfers(ctx, f.prj.ID, store.TransferFilter{Unmatched: &no})
	require.NoError(t, err)
	assert.Equal(t, 2, total, "the matched one and the dust")
	list, total, err = s.ProjectTransfers(ctx, f.prj.ID, store.TransferFilter{Addresses: []string{cancelled.Address}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	assert.Equal(t, afterCancel.TxHash, list[0].TxHash)
	_, total, err = s.ProjectTransfers(ctx, f.prj.ID, store.TransferFilter{PaymentID: paid.ID})
	require.NoError(t, err)
	assert.Equal(t, 4, total, "the payment's own transfer and the three later ones to its address")
	n, err := s.CountUnmatched(ctx, f.prj.ID)
	require.NoError(t, err)
	assert.Zero(t, n, "counted once told")
	tell(t, s)
	n, err = s.CountUnmatched(ctx, f.prj.ID)
	require.NoError(t, err)
	assert.Equal(t, 4, n)

	// Marking handled.
	marked, err := s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, again.TxHash, nil, "owner@shop.test", "refunded")
	require.NoError(t, err)
	require.NotNil(t, marked.Handled)
	assert.Equal(t, "owner@shop.test", marked.Handled.By)
	assert.Equal(t, "refunded", marked.Handled.Note)
	assert.Equal(t, clk.Now(), marked.Handled.At)
	assert.Equal(t, store.TransferUnmatched, marked.State)
	n, err = s.CountUnmatched(ctx, f.prj.ID)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	_, err = s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, counted.TxHash, nil, "x", "")
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTransferNotUnmatched)
	_, err = s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, nobody.TxHash, nil, "x", "")
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	assert.Nil(t, f.state(counted.TxHash).Handled, "a refused mark changes nothing")

	// A transfer to the open payment's address is pending while the
	// payment may still take it (its final check claims what the scanner
	// recorded), and unmatched once it cannot.
	toOpen := tronTransfer(hashOf('8'), open.Address, "10", 71)
	f.record(100, "", toOpen)
	assert.Equal(t, store.TransferPending, f.state(toOpen.TxHash).State, "the open payment may still take it")
	setStatus(t, s, open.ID, paywatch.StatusCancelled, nil)
	got = f.state(toOpen.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonAfterCancelled, got.Reason)
	assert.Equal(t, open.ID, got.RelatedPaymentID)

	// On a pool + micro_amount address, an amount outside every open
	// payment's match window is not taken: unmatched at once, naming the
	// open payment; the payment's own amount is pending.
	const poolAddr = "TLEaY8XoqpBmndLsjcfThgdKLN1ssNuUcF" // a devnet account, no xPub's
	pl := project(t, s, "pool", pool(paywatch.MatchMicroAmount, 3), staticWallet("TRC20", poolAddr))
	want, _, err := s.CreatePayment(ctx, newPayment(pl, "erin", "10"))
	require.NoError(t, err)
	odd := tronTransfer(hashOf('9'), want.Address, "7", 101)
	near := tronTransfer(hashOf('a'), want.Address, want.Amount.String(), 101)
	f.record(130, "", odd, near)
	got, err = s.ProjectTransfer(ctx, pl.ID, paywatch.TRC20, odd.TxHash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonNotTaken, got.Reason)
	assert.Equal(t, want.ID, got.RelatedPaymentID)
	got, err = s.ProjectTransfer(ctx, pl.ID, paywatch.TRC20, near.TxHash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferPending, got.State, "the open payment may still take its own amount")
}

// A transfer on another EVM network than the payment's, to the payment's
// address (the same on all four), is unmatched as "other_network"; the
// payment an address served is the last one assigned before the
// transfer's block, not the last one created before a lagging scanner
// recorded it; and a deleted wallet's addresses stay the project's.
func TestTransfersOtherNetworkAndDeletedWallet(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.BEP20, paywatch.POLYGON}))
	ctx := context.Background()
	prj := project(t, s, "evm", mode(paywatch.ModePerPayment), hdWallet())
	np := newPayment(prj, "alice", "10")
	np.Network, np.Token, np.Amount = paywatch.BEP20, paywatch.USDT, amount("10", paywatch.BEP20, paywatch.USDT)
	p, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	hash := "0x" + hashOf('9')
	wrong := paywatch.Transfer{TxHash: hash, BlockNumber: 5, BlockHash: "0xb", Token: paywatch.USDT, From: evmAddrs[0], To: p.Address,
		Amount: amount("10", paywatch.POLYGON, paywatch.USDT).Units()}
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.POLYGON, Height: 500, BlockHash: "0xh", Head: 500, Transfers: []paywatch.Transfer{wrong}}, nil)
	require.NoError(t, err)
	got, err := s.ProjectTransfer(ctx, prj.ID, paywatch.POLYGON, hash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonOtherNetwork, got.Reason)
	assert.Equal(t, p.ID, got.RelatedPaymentID)

	setStatus(t, s, p.ID, paywatch.StatusCancelled, nil)
	require.NoError(t, s.DeleteWallet(ctx, "evm"))
	hash2 := "0x" + hashOf('8')
	later := wrong
	later.TxHash = hash2
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.POLYGON, Height: 600, BlockHash: "0xi", Head: 600, Transfers: []paywatch.Transfer{later}}, nil)
	require.NoError(t, err)
	got, err = s.ProjectTransfer(ctx, prj.ID, paywatch.POLYGON, hash2, nil)
	require.NoError(t, err, "a deleted wallet's address is still the project's")
	assert.Equal(t, store.TransferUnmatched, got.State)
}

// A payment on another network of the family that got the address after
// a transfer was seen is not the payment the transfer came after: that
// transfer is no_payment, not other_network naming the later payment; a
// wrong-network transfer seen after the payment is other_network.
func TestTransferOtherNetworkOnlyBeforeIt(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.BEP20, paywatch.POLYGON}))
	ctx := context.Background()
	addr := evmAddrs[0]
	prj := project(t, s, "evm", pool(paywatch.MatchTxID, 3), staticWallet("BEP20", addr))
	early := paywatch.Transfer{TxHash: "0x" + hashOf('7'), BlockNumber: 5, BlockHash: "0xb", Token: paywatch.USDT, From: evmAddrs[1], To: addr,
		Amount: amount("10", paywatch.POLYGON, paywatch.USDT).Units()}
	_, err := s.RecordScan(ctx, store.ScanBatch{Network: paywatch.POLYGON, Height: 500, BlockHash: "0xh", Head: 500, Transfers: []paywatch.Transfer{early}}, nil)
	require.NoError(t, err)

	clk.Add(time.Hour)
	np := newPayment(prj, "alice", "10")
	np.Network, np.Token, np.Amount = paywatch.BEP20, paywatch.USDT, amount("10", paywatch.BEP20, paywatch.USDT)
	p, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	require.Equal(t, addr, p.Address)
	got, err := s.ProjectTransfer(ctx, prj.ID, paywatch.POLYGON, early.TxHash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonNoPayment, got.Reason, "the BEP20 payment came an hour after it")
	assert.Empty(t, got.RelatedPaymentID)

	later := early
	later.TxHash, later.BlockNumber = "0x"+hashOf('6'), 6
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.POLYGON, Height: 600, BlockHash: "0xi", Head: 600, Transfers: []paywatch.Transfer{later}}, nil)
	require.NoError(t, err)
	got, err = s.ProjectTransfer(ctx, prj.ID, paywatch.POLYGON, later.TxHash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonOtherNetwork, got.Reason)
	assert.Equal(t, p.ID, got.RelatedPaymentID)
}

// A transfer a reorg took away from its payment, and brought back after
// the payment ended without it, is unmatched; while it is removed it is
// not listed at all.
func TestTransferBroughtBackAfterItsPaymentEnded(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "shop", mode(paywatch.ModePerPayment), hdWallet())}
	p, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	tr := tronTransfer(hashOf('f'), p.Address, "10", 10)
	f.record(10, p.ID, tr)
	assert.Equal(t, store.TransferPending, f.state(tr.TxHash).State, "claimed by an open payment")

	require.NoError(t, s.MarkTransfersRemoved(ctx, paywatch.TRC20, []paywatch.TransferKey{tr.Key()}))
	_, err = s.ProjectTransfer(ctx, f.prj.ID, paywatch.TRC20, tr.TxHash, nil)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	setStatus(t, s, p.ID, paywatch.StatusCancelled, nil)

	back := tr
	back.BlockNumber, back.BlockHash = 12, "bother"
	f.record(40, "", back)
	got := f.state(tr.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonAfterCancelled, got.Reason)
	assert.Equal(t, p.ID, got.RelatedPaymentID)
}

// Two quick transfers to a payment: the first pays it, and the payment
// ends still listing the second unconfirmed, never counting it. The
// second is unmatched (after_paid), not matched; the first is matched.
// And an unclaimed transfer to the address of a payment still open, whose
// final check may still claim it, is pending, not unmatched.
func TestTransferListedButNeverCounted(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "shop", mode(paywatch.ModePerPayment), hdWallet())}
	p, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	first := tronTransfer(hashOf('1'), p.Address, "10", 10)
	second := tronTransfer(hashOf('2'), p.Address, "10", 11)
	f.record(11, p.ID, first, second)
	st := paidState(p, 1, first.TxHash, "10")
	st.Transactions = append(st.Transactions, paywatch.Transaction{TxHash: second.TxHash, BlockNumber: 11, BlockHash: second.BlockHash,
		From: second.From, Amount: amount("10", paywatch.TRC20, paywatch.USDT), Confirmations: 18})
	_, err = s.SavePaymentState(ctx, st)
	require.NoError(t, err)
	f.record(40, "")
	assert.Equal(t, store.TransferMatched, f.state(first.TxHash).State)
	got := f.state(second.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State, "listed unconfirmed by a paid payment, never counted")
	assert.Equal(t, store.ReasonAfterPaid, got.Reason)
	due, err := s.DueUnmatched(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	assert.Equal(t, second.TxHash, due[0].TxHash, "told, not settled silently")

	open, _, err := s.CreatePayment(ctx, newPayment(f.prj, "bob", "10"))
	require.NoError(t, err)
	early := tronTransfer(hashOf('3'), open.Address, "10", open.StartBlock)
	f.record(70, "", early)
	assert.Equal(t, store.TransferPending, f.state(early.TxHash).State, "the open payment's final check may still take it")
	setStatus(t, s, open.ID, paywatch.StatusCancelled, nil)
	assert.Equal(t, store.TransferUnmatched, f.state(early.TxHash).State)
}
