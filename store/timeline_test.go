package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// saveStatus saves payment p's state as its workflow would, with status st,
// paid amount paid and version v; it reports whether the save applied.
func saveStatus(t *testing.T, s *store.Store, p *store.Payment, st paywatch.Status, paid string, v int64) bool {
	t.Helper()
	paidAmount := paywatch.NewAmount(nil, p.Amount.Decimals())
	if paid != "0" {
		paidAmount = paywatch.MustParseAmount(paid, p.Amount.Decimals())
	}
	applied, err := s.SavePaymentState(context.Background(), paywatch.PaymentState{
		PaymentID: p.ID, Status: st, Network: p.Network, Token: p.Token, Address: p.Address,
		Amount: p.Amount, PaidAmount: paidAmount, Version: v,
	})
	require.NoError(t, err)
	return applied
}

// statusesOf lists the statuses of a timeline.
func statusesOf(tl []store.StatusChange) []paywatch.Status {
	out := make([]paywatch.Status, 0, len(tl))
	for _, c := range tl {
		out = append(out, c.Status)
	}
	return out
}

// The timeline records the creation and every status a save moves the
// payment to, once: a replayed or overtaken save, and a save that keeps
// the status, add nothing.
func TestPaymentTimelineRecordsStatusChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	other := project(t, s, "other", store.ProjectSettings{}, staticWallet("TRC20", tronAddrs[0]))
	created := clk.Now()
	pay, _, err := s.CreatePayment(ctx, newPayment(p, "u1", "50"))
	require.NoError(t, err)

	tl, err := s.PaymentTimeline(ctx, p.ID, pay.ID)
	require.NoError(t, err)
	require.Len(t, tl, 1)
	assert.Equal(t, paywatch.StatusPending, tl[0].Status)
	assert.True(t, created.Equal(tl[0].At), "%s", tl[0].At)
	assert.Equal(t, 0, tl[0].PaidAmount.Sign())

	clk.Add(time.Minute)
	confirmingAt := clk.Now()
	require.True(t, saveStatus(t, s, pay, paywatch.StatusConfirming, "0", 1))
	clk.Add(time.Minute)
	require.True(t, saveStatus(t, s, pay, paywatch.StatusConfirming, "0", 2), "a save that keeps the status")
	clk.Add(time.Minute)
	paidAt := clk.Now()
	require.True(t, saveStatus(t, s, pay, paywatch.StatusPaid, "50", 3))
	clk.Add(time.Minute)
	assert.False(t, saveStatus(t, s, pay, paywatch.StatusPaid, "50", 3), "a replayed save")
	assert.False(t, saveStatus(t, s, pay, paywatch.StatusConfirming, "0", 2), "an overtaken save")

	tl, err = s.PaymentTimeline(ctx, p.ID, pay.ID)
	require.NoError(t, err)
	assert.Equal(t, []paywatch.Status{paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPaid}, statusesOf(tl))
	assert.True(t, confirmingAt.Equal(tl[1].At), "%s", tl[1].At)
	assert.True(t, paidAt.Equal(tl[2].At), "%s", tl[2].At)
	assert.Equal(t, "50.00", tl[2].PaidAmount.String())

	// Another project's payment, or no payment at all, is not found.
	_, err = s.PaymentTimeline(ctx, other.ID, pay.ID)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgPaymentNotFound)
	_, err = s.PaymentTimeline(ctx, p.ID, "not-a-uuid")
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgPaymentNotFound)
	_, err = s.PaymentTimeline(ctx, p.ID, "00000000-0000-4000-8000-000000000000")
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgPaymentNotFound)
}

// A link payment's creation is recorded too, and a payment created
// without a network starts its timeline as any other.
func TestPaymentTimelineOfLinkAndNetworklessPayments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	l, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "tip", Title: "Tip"})
	require.NoError(t, err)
	l, err = s.PaymentLinkBySlug(ctx, l.Slug)
	require.NoError(t, err)
	pay, _, err := s.CreateLinkPayment(ctx, l, newPayment(p, "link:tip:a", "5"), store.Buyer{})
	require.NoError(t, err)
	tl, err := s.PaymentTimeline(ctx, p.ID, pay.ID)
	require.NoError(t, err)
	assert.Equal(t, []paywatch.Status{paywatch.StatusPending}, statusesOf(tl))

	np := newPayment(p, "u2", "5")
	np.Network, np.Token = "", ""
	pay, _, err = s.CreatePayment(ctx, np)
	require.NoError(t, err)
	tl, err = s.PaymentTimeline(ctx, p.ID, pay.ID)
	require.NoError(t, err)
	assert.Equal(t, []paywatch.Status{paywatch.StatusPending}, statusesOf(tl))
}

// Migration 00013 gives existing payments a timeline: the creation, and
// the current status when it is no longer pending.
func TestPaymentTimelineBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolAt(t, 12)
	created := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	updated := created.Add(10 * time.Minute)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (id, slug, name) VALUES (1, 'old', 'Old')`, nil},
		{`INSERT INTO payments (id, project_id, status, address_mode, amount, decimals, paid_amount, external_ref,
		                        expires_at, state_version, created_at, updated_at)
		  VALUES ('11111111-1111-4111-8111-111111111111', 1, 'paid', 'per_payment', 5000000, 6, 5000000, 'a', $1, 4, $2, $3),
		         ('22222222-2222-4222-8222-222222222222', 1, 'pending', 'per_payment', 5000000, 6, 0, 'b', $1, 0, $2, $2)`,
			[]any{created.Add(time.Hour), created, updated}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	_, err := store.Migrate(ctx, pool)
	require.NoError(t, err)

	s := store.New(pool)
	tl, err := s.PaymentTimeline(ctx, 1, "11111111-1111-4111-8111-111111111111")
	require.NoError(t, err)
	require.Equal(t, []paywatch.Status{paywatch.StatusPending, paywatch.StatusPaid}, statusesOf(tl))
	assert.True(t, created.Equal(tl[0].At))
	assert.True(t, updated.Equal(tl[1].At))
	assert.Equal(t, "5.00", tl[1].PaidAmount.String())
	tl, err = s.PaymentTimeline(ctx, 1, "22222222-2222-4222-8222-222222222222")
	require.NoError(t, err)
	assert.Equal(t, []paywatch.Status{paywatch.StatusPending}, statusesOf(tl))
}
