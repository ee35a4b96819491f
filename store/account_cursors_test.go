package store_test

import (
	"context"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// The wallets a SOLANA scanner reads (each costs calls at every poll):
// the registered ones, and a removed one only while a payment given it
// may still count a transfer.
func TestWatchedOwnersAreTheRegisteredSolanaWallets(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t)
	kept, removed, idle := sol.NewWallet().PublicKey().String(), sol.NewWallet().PublicKey().String(), sol.NewWallet().PublicKey().String()
	// A memo payment takes the wallet's first address: removed, once the
	// payment is cancelled.
	p := project(t, s, "sol", mode(paywatch.ModePerPayment), staticWallet("SOLANA", removed, kept, idle))
	pay, _, err := s.CreatePayment(ctx, store.NewPayment{ProjectID: p.ID, Amount: amount("10", paywatch.SOLANA, paywatch.USDC),
		ExternalRef: "u", Network: paywatch.SOLANA, Token: paywatch.USDC})
	require.NoError(t, err)
	require.Equal(t, removed, pay.Address)
	require.NotEmpty(t, pay.Memo)
	_, err = s.Pool().Exec(ctx, `UPDATE payments SET status = 'cancelled' WHERE id = $1`, pay.ID)
	require.NoError(t, err)
	require.NoError(t, s.RemoveStaticAddress(ctx, "sol", paywatch.SOLANA, removed))
	require.NoError(t, s.RemoveStaticAddress(ctx, "sol", paywatch.SOLANA, idle))

	owners, err := s.WatchedOwners(ctx, paywatch.SOLANA)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{kept, removed}, owners, "the removed wallet's payment may still be paid")
	clk.Add(51 * time.Hour)
	owners, err = s.WatchedOwners(ctx, paywatch.SOLANA)
	require.NoError(t, err)
	assert.Equal(t, []string{kept}, owners, "its payment is long over")
	owners, err = s.WatchedOwners(ctx, paywatch.BASE)
	require.NoError(t, err)
	assert.Empty(t, owners, "another family's")
}
