package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A per_payment creation takes its derivation index before its transaction
// (so concurrent creations of a merchant do not queue on the counter): every
// payment still gets an index of its own, and an idempotent repeat and a
// refused creation take none (issue 24: no gap for wallet software).
func TestCreationReservesItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{MinAmount: ptr(paywatch.MustParseAmount("5", 2))}, hdWallet())
	index := func(pay *store.Payment) int {
		var i int
		require.NoError(t, s.Pool().QueryRow(ctx,
			`SELECT d.derivation_index FROM payments p JOIN derived_addresses d ON d.id = p.derived_address_id WHERE p.id = $1`,
			pay.ID).Scan(&i))
		return i
	}

	first, _, err := s.CreatePayment(ctx, newPayment(p, "u1", "10"))
	require.NoError(t, err)
	assert.Equal(t, 1, index(first))

	order := newPayment(p, "u2", "10")
	order.ExternalOrderID = ptr("order-7")
	second, _, err := s.CreatePayment(ctx, order)
	require.NoError(t, err)
	assert.Equal(t, 2, index(second))
	again, existing, err := s.CreatePayment(ctx, order)
	require.NoError(t, err)
	assert.True(t, existing)
	assert.Equal(t, second.ID, again.ID)

	_, _, err = s.CreatePayment(ctx, newPayment(p, "u3", "1"))
	requireCode(t, err, paywatch.EINVALID, "Amount must be at least $5.00 (project minimum)")

	third, _, err := s.CreatePayment(ctx, newPayment(p, "u4", "10"))
	require.NoError(t, err)
	assert.Equal(t, 3, index(third), "the refused creation took no index")
	var derived int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM derived_addresses`).Scan(&derived))
	assert.Equal(t, 3, derived, "nothing was derived for the repeat or the refusal")
}
