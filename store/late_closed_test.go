package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

// Issue 37, item 2: a late transfer is seen a minute before the late
// window's end, and the workflow's check of it gets no answer for over
// half an hour (Temporal or the provider down), so the window is still
// open in the workflow while the clock says it ended. Until the workflow
// saves its verdict (LateClosed), the transfer is pending, not told
// unmatched, and the scanners still watch the address (a reorg of it is
// signalled); once the verdict is saved, it is unmatched at once.
func TestLateWindowOpenUntilTheWorkflowClosesIt(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "latehold", mode(paywatch.ModePerPayment), hdWallet())}
	p, _, err := s.CreatePayment(ctx, newPayment(f.prj, "carol", "10"))
	require.NoError(t, err)
	f.record(10, "")
	// Expired a day and 40 minutes ago: by the clock the window and its
	// grace are over.
	expiredAt := clk.Now().Add(-paywatch.LateWindow - 40*time.Minute)
	setStatus(t, s, p.ID, paywatch.StatusExpired, &expiredAt)
	holdLateWindow(t, s, p.ID)
	lateFunds := tronTransfer(hashOf('7'), p.Address, "10", 12)
	f.record(40, "", lateFunds)

	assert.Equal(t, store.TransferPending, f.state(lateFunds.TxHash).State, "the workflow may still count it")
	due, err := s.DueUnmatched(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, due, "nothing told while a payment can count it")
	watched, err := s.WatchedAddresses(ctx, paywatch.TRC20, []string{p.Address}, nil, nil)
	require.NoError(t, err)
	assert.Len(t, watched[p.Address], 1, "still watched: a reorg of the transfer reaches the workflow")

	// The workflow closes the window without counting it.
	st := expiredState(p, 7)
	st.LateClosed = true
	_, err = s.SavePaymentState(ctx, st)
	require.NoError(t, err)
	got := f.state(lateFunds.TxHash)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonAfterExpired, got.Reason)
	due, err = s.DueUnmatched(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	assert.Equal(t, lateFunds.TxHash, due[0].TxHash)
	watched, err = s.WatchedAddresses(ctx, paywatch.TRC20, []string{p.Address}, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, watched[p.Address])
}

// A window the workflow closed early by the clock's measure (nothing was
// confirming at its end) needs no wait for the clock either.
func TestLateWindowClosedByTheWorkflowIsClosed(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "lateshut", mode(paywatch.ModePerPayment), hdWallet())}
	p, _, err := s.CreatePayment(ctx, newPayment(f.prj, "dan", "10"))
	require.NoError(t, err)
	f.record(10, "")
	expiredAt := clk.Now().Add(-paywatch.LateWindow - 2*time.Minute)
	setStatus(t, s, p.ID, paywatch.StatusExpired, &expiredAt)
	st := expiredState(p, 3)
	st.LateClosed = true
	_, err = s.SavePaymentState(ctx, st)
	require.NoError(t, err)
	after := tronTransfer(hashOf('8'), p.Address, "10", 12)
	f.record(40, "", after)
	assert.Equal(t, store.TransferUnmatched, f.state(after.TxHash).State)
}

// expiredState is p's workflow state, expired, at version v.
func expiredState(p *store.Payment, v int64) paywatch.PaymentState {
	return paywatch.PaymentState{
		PaymentID: p.ID, Status: paywatch.StatusExpired, Network: p.Network, Token: p.Token, Address: p.Address,
		Amount: p.Amount, PaidAmount: paywatch.NewAmount(nil, p.Amount.Decimals()), ExpiresAt: p.ExpiresAt, Version: v,
	}
}

// Issue 37, item 3: when the chain's head cannot be read at creation, the
// scanner's newest block stands in only while it is fresh. A stale one
// (the scanner idle, or down) would let a transfer mined inside the gap,
// say a per_user customer's earlier duplicate, count for a new payment on
// the same address: a reused address is then refused with 429 "try again
// in a minute" and nothing is created, while a fresh per_payment address,
// which nothing can have been sent to before, is still given out.
func TestStaleScannerHeadIsNoStartBlockForAReusedAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := paywatch.TRC20
	dead, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{"127.0.0.1:1"}})
	require.NoError(t, err)
	defer dead.Close()
	clk := newClock()
	s := store.New(storetest.NewPool(t), store.WithClock(clk.Now),
		store.WithChainHeads(chains.NewHeads(dead, func(paywatch.Network) time.Duration { return 0 })))
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 40, BlockHash: "h40", Head: 41}, nil)
	require.NoError(t, err)
	// A pool address is reused as a per_user one is.
	perUser := project(t, s, "reused", pool(paywatch.MatchMicroAmount, 3), staticWallet("TRC20", tronAddrs[2]))
	perPayment := project(t, s, "perpay", mode(paywatch.ModePerPayment), hdWallet())

	// Fresh: the scanner recorded block 41 a moment ago.
	p, _, err := s.CreatePayment(ctx, newPayment(perUser, "alice", "10"))
	require.NoError(t, err)
	assert.Equal(t, uint64(42), p.StartBlock)

	// A minute later the scanner has recorded nothing more (idle, or down).
	clk.Add(time.Minute)
	_, _, err = s.CreatePayment(ctx, newPayment(perUser, "bob", "10"))
	require.Error(t, err)
	assert.Equal(t, paywatch.ERATELIMIT, paywatch.ErrorCode(err))
	assert.Equal(t, paywatch.MsgRecheckFailed, paywatch.ErrorMessage(err))
	var rows int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM payments WHERE external_ref = 'bob'`).Scan(&rows))
	assert.Zero(t, rows, "a refused creation changes nothing")

	q, _, err := s.CreatePayment(ctx, newPayment(perPayment, "carol", "10"))
	require.NoError(t, err, "a new derived address has nothing before it")
	assert.Equal(t, uint64(42), q.StartBlock)
}
