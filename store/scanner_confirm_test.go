package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A saved state's unconfirmed transfers are awaited until they are
// confirmed, each signalled once per block; an older save changes nothing,
// and the payment shows how deep its transfer is at the scanner's head.
func TestAwaitedConfirmationsFollowTheSavedState(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	id := f.payment(t)
	n := paywatch.ERC20 // 12 confirmations
	tx := func(block uint64, hash string, confirmed bool) paywatch.Transaction {
		return paywatch.Transaction{TxHash: "0xabc", BlockNumber: block, BlockHash: hash, From: "0xf",
			Amount: paywatch.MustParseAmount("50", 6), Confirmed: confirmed}
	}
	save := func(version int64, status paywatch.Status, txs ...paywatch.Transaction) {
		t.Helper()
		_, err := s.SavePaymentState(ctx, paywatch.PaymentState{
			PaymentID: id, Status: status, Network: n, Token: paywatch.USDT,
			Address: "0x1111111111111111111111111111111111111111", Amount: paywatch.MustParseAmount("50.00", 6),
			PaidAmount: paywatch.NewAmount(nil, 6), Version: version, Transactions: txs,
		})
		require.NoError(t, err)
	}
	due := func(upTo uint64) []store.AwaitedConfirmation {
		t.Helper()
		as, err := s.DueConfirmations(ctx, n, upTo, 100)
		require.NoError(t, err)
		return as
	}

	save(1, paywatch.StatusConfirming, tx(100, "0xb100", false))
	assert.Empty(t, due(99), "not deep enough")
	got := due(100)
	require.Len(t, got, 1)
	assert.Equal(t, store.AwaitedConfirmation{PaymentID: id, Network: n, TxHash: "0xabc", LogIndex: 0, BlockNumber: 100, BlockHash: "0xb100"}, got[0])
	assert.Empty(t, func() []store.AwaitedConfirmation {
		as, err := s.DueConfirmations(ctx, paywatch.POLYGON, 1000, 100)
		require.NoError(t, err)
		return as
	}(), "another network's scanner sees none")

	// The API shows the depth at the scanner's head, short of the count
	// until the workflow confirms it.
	_, err := f.pool.Exec(ctx, `INSERT INTO chain_cursors (network, height, block_hash, head) VALUES ('ERC20', 104, '0xh', 104)`)
	require.NoError(t, err)
	p, err := s.PaymentByID(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 5, p.Transactions[0].Confirmations)
	_, err = f.pool.Exec(ctx, `UPDATE chain_cursors SET head = 400 WHERE network = 'ERC20'`)
	require.NoError(t, err)
	p, err = s.PaymentByID(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 11, p.Transactions[0].Confirmations, "never the full count before it is confirmed")
	assert.False(t, p.Transactions[0].Confirmed)

	// Signalled once; a save that changes something else keeps it so.
	require.NoError(t, s.MarkConfirmationsSignalled(ctx, got))
	assert.Empty(t, due(1000))
	save(2, paywatch.StatusConfirming, tx(100, "0xb100", false))
	assert.Empty(t, due(1000))

	// Mined again in another block: due again, there.
	save(3, paywatch.StatusConfirming, tx(105, "0xb105", false))
	assert.Empty(t, due(104))
	got = due(105)
	require.Len(t, got, 1)
	assert.Equal(t, uint64(105), got[0].BlockNumber)
	// A mark for the old block does not cover the new one.
	require.NoError(t, s.MarkConfirmationsSignalled(ctx, []store.AwaitedConfirmation{{PaymentID: id, Network: n, TxHash: "0xabc", BlockNumber: 100, BlockHash: "0xb100"}}))
	assert.Len(t, due(105), 1)

	// An older save that arrives late changes nothing; the confirmed state
	// ends the wait.
	save(2, paywatch.StatusConfirming, tx(100, "0xb100", false))
	assert.Equal(t, uint64(105), due(105)[0].BlockNumber)
	save(4, paywatch.StatusPaid, tx(105, "0xb105", true))
	assert.Empty(t, due(1000))
	var rows int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM awaited_confirmations`).Scan(&rows))
	assert.Zero(t, rows)
}

// A payment whose workflow ends (its address released) awaits nothing, even
// with a transfer that never confirmed.
func TestReleaseForgetsAwaitedConfirmations(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	id := f.payment(t)
	_, err := s.SavePaymentState(ctx, paywatch.PaymentState{
		PaymentID: id, Status: paywatch.StatusExpired, Network: paywatch.ERC20, Token: paywatch.USDT,
		Address: "0x1111111111111111111111111111111111111111", Amount: paywatch.MustParseAmount("50.00", 6),
		PaidAmount: paywatch.NewAmount(nil, 6), Version: 1,
		Transactions: []paywatch.Transaction{{TxHash: "0xabc", BlockNumber: 100, BlockHash: "0xb100", From: "0xf",
			Amount: paywatch.MustParseAmount("50", 6)}},
	})
	require.NoError(t, err)
	due, err := s.DueConfirmations(ctx, paywatch.ERC20, 100, 10)
	require.NoError(t, err)
	require.Len(t, due, 1, "an expired payment in its late window awaits its transfer")
	require.NoError(t, s.ReleaseAddress(ctx, id, paywatch.StatusExpired))
	due, err = s.DueConfirmations(ctx, paywatch.ERC20, 1000, 10)
	require.NoError(t, err)
	assert.Empty(t, due)
}
