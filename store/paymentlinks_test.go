package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

func TestCreateLinkPaymentRecordsTheBuyer(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	fixed := amount("25", paywatch.TRC20, paywatch.USDT)
	l, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "hoodie", Title: "  Hoodie  ", Amount: &fixed, Network: paywatch.TRC20})
	require.NoError(t, err)
	assert.Equal(t, "Hoodie", l.Title)
	assert.Equal(t, paywatch.USDT, l.Token, "a fixed network defaults to USDT")
	base, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "on-base", Title: "Base", Network: paywatch.BASE})
	require.NoError(t, err, "BASE serves no USDT: a link there takes its first token")
	assert.Equal(t, paywatch.USDC, base.Token)
	_, err = s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "pyusd-on-base", Title: "Base", Network: paywatch.BASE, Token: paywatch.PYUSD})
	assert.EqualError(t, err, "PYUSD is not supported on BASE")

	got, err := s.PaymentLinkBySlug(ctx, "hoodie")
	require.NoError(t, err)
	assert.Equal(t, l.ID, got.ID)
	assert.Equal(t, "25.00", got.Amount.String())
	assert.Equal(t, paywatch.TRC20, got.Network)
	assert.True(t, got.Accepting())
	assert.Equal(t, p.ID, got.Project.ID)

	pay, existing, err := s.CreateLinkPayment(ctx, got, newPayment(p, "link:hoodie:ana@example.com", "25"),
		store.Buyer{Email: "ana@example.com", Name: "Ana", Note: "Size M"})
	require.NoError(t, err)
	assert.False(t, existing)
	assert.Equal(t, testTronIndex1, pay.Address)

	info, err := s.WebhookPaymentInfo(ctx, pay.ID)
	require.NoError(t, err)
	require.NotNil(t, info.Link)
	assert.Equal(t, l.ID, info.Link.PaymentLinkID)
	assert.Equal(t, "hoodie", info.Link.PaymentLinkSlug)
	assert.Equal(t, "ana@example.com", *info.Link.BuyerEmail)
	assert.Equal(t, "Ana", *info.Link.BuyerName)
	assert.Equal(t, "Size M", *info.Link.BuyerNote)

	// Empty buyer fields are stored as NULL, and webhooks show null.
	pay2, _, err := s.CreateLinkPayment(ctx, got, newPayment(p, "link:hoodie:x", "25"), store.Buyer{})
	require.NoError(t, err)
	info, err = s.WebhookPaymentInfo(ctx, pay2.ID)
	require.NoError(t, err)
	require.NotNil(t, info.Link)
	assert.Nil(t, info.Link.BuyerEmail)
	assert.Nil(t, info.Link.BuyerName)
	assert.Nil(t, info.Link.BuyerNote)

	tok, err := s.PaymentLinkToken(ctx, pay.ID)
	require.NoError(t, err)
	assert.Equal(t, paywatch.USDT, tok)

	requireCode(t, func() error { _, err := s.PaymentLinkBySlug(ctx, "nope"); return err }(), paywatch.ENOTFOUND, "Payment link not found")
	requireCode(t, func() error { _, err := s.PaymentLinkBySlug(ctx, "Not A Slug"); return err }(), paywatch.ENOTFOUND, "Payment link not found")
}
