package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// ownedProject creates a project of the account with the given email.
func ownedProject(t *testing.T, s *store.Store, email, slug, name string) *store.Project {
	t.Helper()
	ps := store.ProjectSettings{Name: &name}
	if email != "" {
		ps.OwnerEmail = &email
	}
	p, _, err := s.CreateProject(context.Background(), store.NewProject{Slug: slug, Settings: ps})
	require.NoError(t, err)
	return p
}

func TestProjectsOwnedBy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	ana, err := s.CreateAccount(ctx, "ana@example.com", paywatch.PlanPro)
	require.NoError(t, err)
	_, err = s.CreateAccount(ctx, "bo@example.com", paywatch.PlanPro)
	require.NoError(t, err)
	ownedProject(t, s, "ana@example.com", "zeta", "Zeta shop")
	ownedProject(t, s, "bo@example.com", "bo", "Bo's")
	ownedProject(t, s, "ana@example.com", "alpha", "Alpha shop")
	ownedProject(t, s, "", "orphan", "Orphan")

	got, err := s.ProjectsOwnedBy(ctx, ana.ID)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "alpha", got[0].Slug, "by name")
	assert.Equal(t, "zeta", got[1].Slug)
	assert.Equal(t, "ana@example.com", got[0].OwnerEmail())

	got, err = s.ProjectsOwnedBy(ctx, 424242)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestListAndDeactivatePaymentLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	other := project(t, s, "other", store.ProjectSettings{}, store.WalletUpdate{})
	first, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "first", Title: "First"})
	require.NoError(t, err)
	clk.Add(time.Minute)
	second, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "second", Title: "Second"})
	require.NoError(t, err)
	foreign, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "other", Slug: "elsewhere", Title: "Elsewhere"})
	require.NoError(t, err)

	l, err := s.PaymentLinkBySlug(ctx, "first")
	require.NoError(t, err)
	pay, _, err := s.CreateLinkPayment(ctx, l, newPayment(p, "link:first:a", "5"), store.Buyer{})
	require.NoError(t, err)
	_, _, err = s.CreateLinkPayment(ctx, l, newPayment(p, "link:first:b", "5"), store.Buyer{})
	require.NoError(t, err)
	require.True(t, saveStatus(t, s, pay, paywatch.StatusPaid, "5", 1))

	list, err := s.ListPaymentLinks(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, second.ID, list[0].Link.ID, "newest first")
	assert.EqualValues(t, 0, list[0].Payments)
	assert.Equal(t, first.ID, list[1].Link.ID)
	assert.Equal(t, "First", list[1].Link.Title)
	assert.EqualValues(t, 2, list[1].Payments)
	assert.EqualValues(t, 1, list[1].Paid)
	assert.True(t, list[1].Link.Accepting())
	assert.Equal(t, p.ID, list[1].Link.Project.ID)

	// Deactivated, the link takes no payment; its payments go on.
	got, err := s.SetPaymentLinkActive(ctx, p.ID, first.ID, false)
	require.NoError(t, err)
	assert.False(t, got.Active)
	l, err = s.PaymentLinkBySlug(ctx, "first")
	require.NoError(t, err)
	assert.False(t, l.Accepting())
	list, err = s.ListPaymentLinks(ctx, p.ID)
	require.NoError(t, err)
	assert.False(t, list[1].Link.Active)
	assert.EqualValues(t, 2, list[1].Payments)

	// Another project's link, or no link at all, is not found, and stays
	// as it was.
	_, err = s.SetPaymentLinkActive(ctx, p.ID, foreign.ID, false)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgLinkNotFound)
	_, err = s.SetPaymentLinkActive(ctx, p.ID, "first", false)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgLinkNotFound)
	l, err = s.PaymentLinkBySlug(ctx, "elsewhere")
	require.NoError(t, err)
	assert.True(t, l.Active)
	list, err = s.ListPaymentLinks(ctx, other.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, foreign.ID, list[0].Link.ID)

	got, err = s.SetPaymentLinkActive(ctx, p.ID, first.ID, true)
	require.NoError(t, err)
	assert.True(t, got.Active)
	assert.True(t, got.Accepting())
}

func TestUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	ownedProject(t, s, "shop@example.com", "second", "Second")
	project(t, s, "other", store.ProjectSettings{}, staticWallet("TRC20", tronAddrs[0])) // another owner's
	_, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "tip", Title: "Tip"})
	require.NoError(t, err)
	_, err = s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "second", Slug: "gift", Title: "Gift"})
	require.NoError(t, err)
	_, err = s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "other", Slug: "not-mine", Title: "Not mine"})
	require.NoError(t, err)
	owner := p.Owner.ID
	clk.Add(-24 * time.Hour)
	_, err = s.HitDaily(ctx, owner, store.DailyAPICalls) // yesterday's
	require.NoError(t, err)
	clk.Add(24 * time.Hour)
	for range 3 {
		_, err = s.HitDaily(ctx, owner, store.DailyAPICalls)
		require.NoError(t, err)
	}
	_, err = s.HitDaily(ctx, owner, store.DailyWebhooks)
	require.NoError(t, err)

	u, err := s.Usage(ctx, owner)
	require.NoError(t, err)
	assert.Equal(t, store.Usage{
		APICallsToday: 3, WebhooksToday: 1, Projects: 2, Wallets: 1, PaymentLinks: 2,
		Limits: paywatch.PlanLimits(paywatch.PlanPro),
	}, u)

	// The limits are the effective ones; a deactivated link still counts,
	// a deleted wallet no longer does; the daily counters start again at
	// midnight UTC.
	_, err = s.UpdateAccount(ctx, "shop@example.com", store.AccountUpdate{Limits: paywatch.LimitOverrides{Wallets: ptr[int64](paywatch.Unlimited)}})
	require.NoError(t, err)
	links, err := s.ListPaymentLinks(ctx, p.ID)
	require.NoError(t, err)
	_, err = s.SetPaymentLinkActive(ctx, p.ID, links[0].Link.ID, false)
	require.NoError(t, err)
	require.NoError(t, s.DeleteWallet(ctx, "shop"))
	clk.Add(12 * time.Hour)
	u, err = s.Usage(ctx, owner)
	require.NoError(t, err)
	assert.EqualValues(t, paywatch.Unlimited, u.Limits.Wallets)
	assert.EqualValues(t, 0, u.Wallets)
	assert.EqualValues(t, 2, u.PaymentLinks)
	assert.EqualValues(t, 0, u.APICallsToday)
	assert.EqualValues(t, 0, u.WebhooksToday)

	_, err = s.Usage(ctx, 424242)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgAccountNotFound)
}

// A wallet cannot be deleted while a payment may still be paid into it;
// once deleted the project has none, and re-adding the same xPub goes on
// deriving after the last index used.
func TestDeleteWallet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	before, err := s.WalletOf(ctx, p.ID)
	require.NoError(t, err)
	first, _, err := s.CreatePayment(ctx, newPayment(p, "u1", "10"))
	require.NoError(t, err)

	refused := func(why string) {
		t.Helper()
		requireCode(t, s.DeleteWallet(ctx, "shop"), paywatch.ECONFLICT, paywatch.MsgWalletInUse)
		w, err := s.WalletOf(ctx, p.ID)
		require.NoError(t, err)
		require.NotNil(t, w, why)
	}
	refused("pending")
	require.True(t, saveStatus(t, s, first, paywatch.StatusConfirming, "0", 1))
	refused("confirming")
	require.True(t, saveStatus(t, s, first, paywatch.StatusPartial, "4", 2))
	refused("partial")
	require.True(t, saveStatus(t, s, first, paywatch.StatusExpired, "4", 3))
	refused("expired, late funds may still come")
	second, _, err := s.CreatePayment(ctx, newPayment(p, "u2", "10"))
	require.NoError(t, err)
	require.True(t, saveStatus(t, s, second, paywatch.StatusPaid, "10", 1))
	clk.Add(time.Hour + paywatch.LateWindow - time.Second) // first expired almost 24 h ago
	refused("expired, still in the late window")
	clk.Add(time.Second) // the late window ends
	refused("expired, the late window not closed by its workflow yet")
	closeLateWindow(t, s, first.ID)
	require.NoError(t, s.DeleteWallet(ctx, "shop"), "a paid payment and an old expired one need no wallet")

	prj, err := s.ProjectBySlug(ctx, "shop")
	require.NoError(t, err)
	assert.False(t, prj.HasWallet)
	w, err := s.WalletOf(ctx, p.ID)
	require.NoError(t, err)
	assert.Nil(t, w)
	_, _, err = s.CreatePayment(ctx, newPayment(p, "u3", "10"))
	requireCode(t, err, paywatch.EINVALID, paywatch.MsgNoWallet)
	requireCode(t, s.DeleteWallet(ctx, "shop"), paywatch.ENOTFOUND, paywatch.MsgNoWallet)
	requireCode(t, s.DeleteWallet(ctx, "nope"), paywatch.ENOTFOUND, paywatch.MsgProjectNotFound)

	// Re-added, it has only what is given now...
	w, prj, err = s.PutWallet(ctx, "shop", store.WalletUpdate{Name: ptr("Again")})
	require.NoError(t, err)
	assert.True(t, prj.HasWallet)
	assert.Equal(t, before.ID, w.ID, "the same wallet comes back")
	assert.Equal(t, "Again", w.Name)
	assert.Empty(t, w.XPubs, "its xPubs were removed with it")
	_, _, err = s.CreatePayment(ctx, newPayment(p, "u3", "10"))
	requireCode(t, err, paywatch.EINVALID, paywatch.MsgNoXPub)

	// ...and the same xPub derives after the last index used.
	_, _, err = s.PutWallet(ctx, "shop", hdWallet())
	require.NoError(t, err)
	third, _, err := s.CreatePayment(ctx, newPayment(p, "u3", "10"))
	require.NoError(t, err)
	preview, err := store.WalletPreview(testXPubTron, paywatch.FamilyTron, 3)
	require.NoError(t, err)
	assert.Equal(t, preview, []string{first.Address, second.Address, third.Address})
	assert.NotContains(t, []string{first.Address, second.Address}, third.Address)
}

// A deleted wallet's addresses stay its own: another project may take its
// xPub, but derives only past the addresses the deleted wallet used.
func TestDeletedWalletKeepsItsAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	other := project(t, s, "other", store.ProjectSettings{}, store.WalletUpdate{})
	first, _, err := s.CreatePayment(ctx, newPayment(p, "u1", "10"))
	require.NoError(t, err)
	require.True(t, saveStatus(t, s, first, paywatch.StatusExpired, "0", 1))
	clk.Add(paywatch.LateWindow + 2*time.Hour)
	closeLateWindow(t, s, first.ID)
	require.NoError(t, s.DeleteWallet(ctx, "shop"))

	_, _, err = s.PutWallet(ctx, "other", hdWallet())
	require.NoError(t, err)
	pay, _, err := s.CreatePayment(ctx, newPayment(other, "u1", "10"))
	require.NoError(t, err)
	assert.NotEqual(t, first.Address, pay.Address)
	preview, err := store.WalletPreview(testXPubTron, paywatch.FamilyTron, 2)
	require.NoError(t, err)
	assert.Equal(t, preview[1], pay.Address)

	_, _, err = s.PutWallet(ctx, "shop", xpubs("tron", testXPubTron))
	requireCode(t, err, paywatch.ECONFLICT, "xpubs.tron: this xPub is already used by another project")
}

func TestDeletedWalletNoLongerCountsTowardTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	_, err := s.CreateAccount(ctx, "ana@example.com", paywatch.PlanFree)
	require.NoError(t, err)
	_, err = s.UpdateAccount(ctx, "ana@example.com", store.AccountUpdate{Limits: paywatch.LimitOverrides{Projects: ptr[int64](2)}})
	require.NoError(t, err)
	ownedProject(t, s, "ana@example.com", "one", "One")
	ownedProject(t, s, "ana@example.com", "two", "Two")
	_, _, err = s.PutWallet(ctx, "one", hdWallet())
	require.NoError(t, err)
	_, _, err = s.PutWallet(ctx, "two", staticWallet("TRC20", tronAddrs[0]))
	requireCode(t, err, paywatch.EFORBIDDEN, paywatch.MsgPlanLimit(1, "wallet"))

	require.NoError(t, s.DeleteWallet(ctx, "one"))
	_, _, err = s.PutWallet(ctx, "two", staticWallet("TRC20", tronAddrs[0]))
	require.NoError(t, err)
	_, _, err = s.PutWallet(ctx, "one", hdWallet())
	requireCode(t, err, paywatch.EFORBIDDEN, paywatch.MsgPlanLimit(1, "wallet"))
}

// A deletion racing a payment creation on the same project: either the
// payment is created and the deletion refused, or the wallet is deleted
// and the payment refused; never both.
func TestDeleteWalletRacesPaymentCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, store.WalletUpdate{})
	outcomes := map[string]int{}
	for round := range 16 {
		_, _, err := s.PutWallet(ctx, "shop", hdWallet())
		require.NoError(t, err)
		var delErr, payErr error
		var pay *store.Payment
		parallel(2, func(i int) {
			if i == 0 {
				delErr = s.DeleteWallet(ctx, "shop")
				return
			}
			pay, _, payErr = s.CreatePayment(ctx, newPayment(p, fmt.Sprintf("u%d", round), "10"))
		})
		if delErr == nil {
			requireCode(t, payErr, paywatch.EINVALID, paywatch.MsgNoWallet)
			outcomes["deleted"]++
			continue
		}
		requireCode(t, delErr, paywatch.ECONFLICT, paywatch.MsgWalletInUse)
		require.NoError(t, payErr)
		outcomes["created"]++
		require.True(t, saveStatus(t, s, pay, paywatch.StatusExpired, "0", 1))
		clk.Add(paywatch.LateWindow + 2*time.Hour)
		closeLateWindow(t, s, pay.ID)
		require.NoError(t, s.DeleteWallet(ctx, "shop"))
	}
	t.Logf("outcomes: %v", outcomes)
}

func TestWalletPreview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	project(t, s, "shop", store.ProjectSettings{}, store.WalletUpdate{})

	got, err := store.WalletPreview(testXPubTron, paywatch.FamilyTron, 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, testTronIndex1, got[0])
	assert.NotEqual(t, got[0], got[1])
	got, err = store.WalletPreview(testXPubEVM, paywatch.FamilyEVM, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{testEVMIndex1}, got)

	// A key the wallet endpoint refuses is refused with its message.
	for _, c := range []struct {
		family paywatch.Family
		key    string
	}{
		{paywatch.FamilyEVM, testXPrv},
		{paywatch.FamilyTron, "xpub-nonsense"},
		{paywatch.Family("btc"), testXPubEVM},
	} {
		_, _, putErr := s.PutWallet(ctx, "shop", xpubs(string(c.family), c.key))
		require.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(putErr), "%v", putErr)
		_, err := store.WalletPreview(c.key, c.family, 3)
		requireCode(t, err, paywatch.EINVALID, paywatch.ErrorMessage(putErr))
	}
	_, err = store.WalletPreview(testXPubEVM, paywatch.FamilyEVM, 0)
	assert.Error(t, err)
	_, err = store.WalletPreview(testXPubEVM, paywatch.FamilyEVM, store.MaxPreviewAddresses+1)
	assert.Error(t, err)
}
