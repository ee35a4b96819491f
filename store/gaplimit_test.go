package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// derivationIndex is the derivation index of a per_payment payment's address.
func derivationIndex(t *testing.T, s *store.Store, pay *store.Payment) int {
	t.Helper()
	var i int
	require.NoError(t, s.Pool().QueryRow(context.Background(),
		`SELECT d.derivation_index FROM payments p JOIN derived_addresses d ON d.id = p.derived_address_id WHERE p.id = $1`,
		pay.ID).Scan(&i))
	return i
}

// A refused creation uses no derivation index (issue 24): 25 of them, under
// the project minimum or on a network the service does not offer, and the
// next valid payment still gets index 1, where wallet software with the
// standard gap limit of 20 looks first.
func TestRefusedCreationsUseNoIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	p := project(t, s, "shop", store.ProjectSettings{MinAmount: ptr(paywatch.MustParseAmount("5", 2))}, hdWallet())
	for i := range 25 {
		np := newPayment(p, "u", "1")
		msg := "Amount must be at least $5.00 (project minimum)"
		if i%2 == 1 {
			np = newPayment(p, "u", "10")
			np.Network, np.Amount = paywatch.BEP20, amount("10", paywatch.BEP20, paywatch.USDT)
			msg = paywatch.MsgNotAvailable(paywatch.Pair{Network: paywatch.BEP20, Token: paywatch.USDT})
		}
		_, _, err := s.CreatePayment(ctx, np)
		requireCode(t, err, paywatch.EINVALID, msg)
	}
	pay, _, err := s.CreatePayment(ctx, newPayment(p, "u", "10"))
	require.NoError(t, err)
	assert.Equal(t, 1, derivationIndex(t, s, pay), "no refused creation took an index")
	w, err := s.WalletOf(ctx, p.ID)
	require.NoError(t, err)
	run, err := s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Family]int{paywatch.FamilyTron: 1, paywatch.FamilyEVM: 0}, run)
}

// Concurrent identical creations of one new order each take an index before
// their transaction, and all but one end as the idempotent repeat of the
// winner: the indexes they did not use go back, and the next payments take
// them before any new one, so the repeats leave no gap.
func TestConcurrentRepeatsReturnTheirIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	for round := range 5 {
		const n = 8
		order := newPayment(p, "u", "10")
		order.ExternalOrderID = ptr("order-" + string(rune('a'+round)))
		pays := make([]*store.Payment, n)
		errs := make([]error, n)
		parallel(n, func(i int) { pays[i], _, errs[i] = s.CreatePayment(ctx, order) })
		for i := range n {
			require.NoError(t, errs[i])
			require.Equal(t, pays[0].ID, pays[i].ID, "one payment")
		}
	}
	// Five payments took five indexes; the next ones continue without a gap.
	for i := range 5 {
		pay, _, err := s.CreatePayment(ctx, newPayment(p, "v"+string(rune('a'+i)), "10"))
		require.NoError(t, err)
		assert.LessOrEqual(t, derivationIndex(t, s, pay), 10)
	}
	var all []int
	require.NoError(t, s.Pool().QueryRow(ctx,
		`SELECT array_agg(derivation_index ORDER BY derivation_index) FROM derived_addresses`).Scan(&all))
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, all, "ten payments, indexes 1 to 10")
	w, err := s.WalletOf(ctx, p.ID)
	require.NoError(t, err)
	run, err := s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 10, run[paywatch.FamilyTron], "the returned indexes above 10 do not count")
}
