package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// paidState is a payment's state once one transfer of amount confirmed.
func paidState(p *store.Payment, version int64, hash, amt string) paywatch.PaymentState {
	a := amount(amt, p.Network, p.Token)
	return paywatch.PaymentState{
		PaymentID: p.ID, Status: paywatch.StatusPaid, Network: p.Network, Token: p.Token, Address: p.Address,
		Amount: p.Amount, PaidAmount: a, TxHash: hash, ExpiresAt: p.ExpiresAt, Version: version,
		Transactions: []paywatch.Transaction{{TxHash: hash, BlockNumber: 10, BlockHash: "0xb", From: "TX", Amount: a, Confirmations: 19, Confirmed: true}},
	}
}

// received reads a derived address's received total.
func received(t *testing.T, s *store.Store, address string) string {
	t.Helper()
	var got string
	require.NoError(t, s.Pool().QueryRow(context.Background(),
		`SELECT received::text FROM derived_addresses WHERE address = $1`, address).Scan(&got))
	return got
}

// The confirmed amount an address received is kept in the transaction that
// saves the state in which a transfer counts, once per transfer however
// often the state is saved, and per_user rotation follows it.
func TestReceivedTotalDrivesPerUserRotation(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	ps := mode(paywatch.ModePerUser)
	ps.RotationThreshold = ptr(paywatch.MustParseAmount("15", 2))
	prj := project(t, s, "rot", ps, hdWallet())

	p1, _, err := s.CreatePayment(ctx, newPayment(prj, "alice", "10"))
	require.NoError(t, err)
	for v := int64(1); v <= 3; v++ { // a retried save, and a later one
		_, err = s.SavePaymentState(ctx, paidState(p1, v, "aa"+zeros(62), "10"))
		require.NoError(t, err)
	}
	assert.Equal(t, "10000000", received(t, s, p1.Address), "counted once")

	p2, _, err := s.CreatePayment(ctx, newPayment(prj, "alice", "10"))
	require.NoError(t, err)
	assert.Equal(t, p1.Address, p2.Address, "10 received does not exceed 15")
	_, err = s.SavePaymentState(ctx, paidState(p2, 1, "bb"+zeros(62), "10"))
	require.NoError(t, err)
	assert.Equal(t, "20000000", received(t, s, p1.Address))

	p3, _, err := s.CreatePayment(ctx, newPayment(prj, "alice", "10"))
	require.NoError(t, err)
	assert.NotEqual(t, p1.Address, p3.Address, "20 received exceeds 15")

	// A transfer claimed for another payment never adds to this address.
	claimed, err := s.ClaimTransfers(ctx, paywatch.TRC20, []paywatch.Transfer{{
		TxHash: "cc" + zeros(62), BlockNumber: 11, BlockHash: "0xc", Token: paywatch.USDT, From: "TX", To: p3.Address,
		Amount: amount("10", paywatch.TRC20, paywatch.USDT).Units(),
	}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, p3.ID, claimed[0].PaymentID, "the open payment on the address claims it")
	require.Equal(t, paywatch.TransferKey{TxHash: "cc" + zeros(62)}, claimed[0].Transfer.Key())
	_, err = s.SavePaymentState(ctx, paidState(p1, 9, "cc"+zeros(62), "10"))
	require.NoError(t, err)
	assert.Equal(t, "20000000", received(t, s, p1.Address))
	assert.Equal(t, "0", received(t, s, p3.Address), "not confirmed for p3 yet")
}
