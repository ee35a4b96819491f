package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A static address a payment holds cannot be removed; a removed one goes to
// no new payment, and a dedicated customer's address is never removed.
func TestRemoveStaticAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	p := project(t, s, "pool", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", tronAddrs[0], tronAddrs[1]))

	pay, _, err := s.CreatePayment(ctx, newPayment(p, "a", "10"))
	require.NoError(t, err)
	requireCode(t, s.RemoveStaticAddress(ctx, "pool", paywatch.TRC20, pay.Address), paywatch.ECONFLICT, paywatch.MsgStaticAddressBusy)
	requireCode(t, s.RemoveStaticAddress(ctx, "pool", paywatch.TRC20, tronAddrs[2]), paywatch.ENOTFOUND, paywatch.MsgStaticAddressNotFound)
	require.True(t, saveStatus(t, s, pay, paywatch.StatusCancelled, "0", 1))
	require.NoError(t, s.RemoveStaticAddress(ctx, "pool", paywatch.TRC20, pay.Address))
	list, err := s.StaticAddresses(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.NotEqual(t, pay.Address, list[0].Address)
	for i := range 3 {
		next, _, err := s.CreatePayment(ctx, newPayment(p, fmt.Sprint("b", i), "10"))
		require.NoError(t, err)
		assert.Equal(t, list[0].Address, next.Address)
	}

	d := project(t, s, "ded", mode(paywatch.ModeDedicated), staticWallet("TRC20", tronAddrs[2]))
	dp, _, err := s.CreatePayment(ctx, newPayment(d, "customer", "10"))
	require.NoError(t, err)
	require.True(t, saveStatus(t, s, dp, paywatch.StatusCancelled, "0", 1))
	requireCode(t, s.RemoveStaticAddress(ctx, "ded", paywatch.TRC20, tronAddrs[2]), paywatch.ECONFLICT, paywatch.MsgStaticAddressAssigned)
}

// Removing the last free address races a payment taking it: either the
// payment has it (and the removal is refused) or the removal wins (and the
// payment finds no address); never both.
func TestRemoveStaticAddressRacesPaymentCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	p := project(t, s, "pool", pool(paywatch.MatchTxID, 3), store.WalletUpdate{})
	outcomes := map[string]int{}
	for round := range 12 {
		_, _, err := s.PutWallet(ctx, "pool", staticWallet("TRC20", tronAddrs[0]))
		require.NoError(t, err)
		var rmErr, payErr error
		var pay *store.Payment
		parallel(2, func(i int) {
			if i == 0 {
				rmErr = s.RemoveStaticAddress(ctx, "pool", paywatch.TRC20, tronAddrs[0])
				return
			}
			pay, _, payErr = s.CreatePayment(ctx, newPayment(p, fmt.Sprint("u", round), "10"))
		})
		if rmErr == nil {
			require.Error(t, payErr, "a payment got a removed address")
			outcomes["removed"]++
			continue
		}
		requireCode(t, rmErr, paywatch.ECONFLICT, paywatch.MsgStaticAddressBusy)
		require.NoError(t, payErr)
		outcomes["paid"]++
		require.True(t, saveStatus(t, s, pay, paywatch.StatusCancelled, "0", 1))
		require.NoError(t, s.RemoveStaticAddress(ctx, "pool", paywatch.TRC20, tronAddrs[0]))
	}
	t.Logf("outcomes: %v", outcomes)
}
