package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// Saves apply in version order: a retried or overtaken older save never
// overwrites a newer one, and an identical save is a no-op.
func TestSavePaymentStateVersionGuard(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	id := f.payment(t)
	paidAt := time.Date(2025, 3, 1, 12, 5, 0, 0, time.UTC)
	amount := paywatch.MustParseAmount("50.00", 6)
	v2 := paywatch.PaymentState{
		PaymentID: id, Status: paywatch.StatusPaid, Network: paywatch.ERC20, Token: paywatch.USDT,
		Address: "0x1111111111111111111111111111111111111111", Amount: amount,
		PaidAmount: paywatch.MustParseAmount("50.00", 6), TxHash: "0xabc", PaidAt: &paidAt, Version: 2,
		Transactions: []paywatch.Transaction{{TxHash: "0xabc", BlockNumber: 7, BlockHash: "0xb", From: "0xf",
			Amount: paywatch.MustParseAmount("50", 6), Confirmations: 12, Confirmed: true}},
		StartBlock: 5,
	}
	v1 := v2
	v1.Status, v1.Version, v1.PaidAt = paywatch.StatusConfirming, 1, nil
	v1.PaidAmount = paywatch.NewAmount(nil, 6)

	applied, err := s.SavePaymentState(ctx, v2)
	require.NoError(t, err)
	assert.True(t, applied)
	applied, err = s.SavePaymentState(ctx, v1) // late, older save
	require.NoError(t, err)
	assert.False(t, applied)
	applied, err = s.SavePaymentState(ctx, v2) // retried save
	require.NoError(t, err)
	assert.False(t, applied)

	var status, paid, txHash string
	var version int64
	var txs []byte
	var gotPaidAt time.Time
	var startBlock int64
	require.NoError(t, f.pool.QueryRow(ctx, `
		SELECT status, paid_amount::text, tx_hash, state_version, transactions, paid_at, start_block FROM payments WHERE id = $1`, id).
		Scan(&status, &paid, &txHash, &version, &txs, &gotPaidAt, &startBlock))
	assert.Equal(t, "paid", status)
	assert.Equal(t, "50000000", paid)
	assert.Equal(t, "0xabc", txHash)
	assert.EqualValues(t, 2, version)
	assert.True(t, paidAt.Equal(gotPaidAt))
	assert.EqualValues(t, 5, startBlock)
	var rows []store.PaymentTransaction
	require.NoError(t, json.Unmarshal(txs, &rows))
	assert.Equal(t, []store.PaymentTransaction{{TxHash: "0xabc", BlockNumber: 7, BlockHash: "0xb", From: "0xf", Amount: "50.00", Confirmations: 12, Confirmed: true}}, rows)

	// The row reads back as typed transactions, amounts exact.
	p, err := s.PaymentByID(ctx, id)
	require.NoError(t, err)
	require.Len(t, p.Transactions, 1)
	assert.Equal(t, v2.Transactions[0].TxHash, p.Transactions[0].TxHash)
	assert.Equal(t, 0, p.Transactions[0].Amount.Cmp(v2.Transactions[0].Amount))
	assert.Equal(t, 6, p.Transactions[0].Amount.Decimals())
	assert.True(t, p.Transactions[0].Confirmed)

	// A row that cannot be read is an error, never an empty list.
	_, err = f.pool.Exec(ctx, `UPDATE payments SET transactions = '[{"tx_hash": "0xabc", "amount": "not a number"}]' WHERE id = $1`, id)
	require.NoError(t, err)
	_, err = s.PaymentByID(ctx, id)
	assert.ErrorContains(t, err, "read transaction 0xabc")
}
