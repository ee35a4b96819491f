package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// micro_amount_decimals cannot change while payments are open, so open
// payments on a pool address never mix precisions.
func TestMicroDecimalsChangeRefusedWhilePaymentsAreOpen(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	addr := "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
	prj := project(t, s, "micro", pool(paywatch.MatchMicroAmount, 4), staticWallet("TRC20", addr))
	p, _, err := s.CreatePayment(ctx, newPayment(prj, "c", "10"))
	require.NoError(t, err)

	for _, st := range []paywatch.Status{paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPartial} {
		setStatus(t, s, p.ID, st, nil)
		_, err = s.UpdateProject(ctx, "micro", store.ProjectSettings{MicroAmountDecimals: ptr(3)})
		requireCode(t, err, paywatch.ECONFLICT, store.MsgMicroDecimalsOpen)
	}
	_, err = s.UpdateProject(ctx, "micro", store.ProjectSettings{MicroAmountDecimals: ptr(4)})
	require.NoError(t, err, "the same precision is no change")
	got, err := s.ProjectBySlug(ctx, "micro")
	require.NoError(t, err)
	assert.Equal(t, 4, got.MicroAmountDecimals, "a refused change changes nothing")

	setStatus(t, s, p.ID, paywatch.StatusExpired, nil)
	updated, err := s.UpdateProject(ctx, "micro", store.ProjectSettings{MicroAmountDecimals: ptr(3)})
	require.NoError(t, err)
	assert.Equal(t, 3, updated.MicroAmountDecimals)
}
