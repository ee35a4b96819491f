package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A save reports the status it moved the payment into once: not again when
// retried, and not for a save that keeps the status.
func TestSavePaymentStateReportsEachStatusChangeOnce(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	id := f.payment(t)
	// The first step of its timeline, as creating a payment writes it.
	_, err := f.pool.Exec(ctx, `
		INSERT INTO payment_status_changes (payment_id, status, paid_amount, decimals, state_version, at)
		SELECT id, status, paid_amount, decimals, state_version, created_at FROM payments WHERE id = $1`, id)
	require.NoError(t, err)
	st := paywatch.PaymentState{
		PaymentID: id, Status: paywatch.StatusPending, Network: paywatch.ERC20, Token: paywatch.USDT,
		Address: "0x1111111111111111111111111111111111111111", Amount: paywatch.MustParseAmount("50.00", 6),
		PaidAmount: paywatch.NewAmount(nil, 6), Version: 1,
	}
	saved, err := s.SavePaymentStateResult(ctx, st)
	require.NoError(t, err)
	assert.Equal(t, store.SavedState{Applied: true}, saved, "still pending, as created: no change of status")

	st.Status, st.Version = paywatch.StatusConfirming, 2
	saved, err = s.SavePaymentStateResult(ctx, st)
	require.NoError(t, err)
	assert.Equal(t, store.SavedState{Applied: true, Entered: paywatch.StatusConfirming}, saved)

	saved, err = s.SavePaymentStateResult(ctx, st) // a retried save
	require.NoError(t, err)
	assert.Equal(t, store.SavedState{}, saved)

	st.Version = 3 // confirmations grow, the status stays
	saved, err = s.SavePaymentStateResult(ctx, st)
	require.NoError(t, err)
	assert.Equal(t, store.SavedState{Applied: true}, saved)
}
