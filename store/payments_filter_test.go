package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// The dashboard's network and token filters keep the payments of one
// network, of one token or of one pair; a payment whose network is not
// chosen yet has neither. Without them the list is what it was.
func TestListPaymentsByNetworkAndToken(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	create := func(ref string, n paywatch.Network, tk paywatch.Token) string {
		np := store.NewPayment{ProjectID: p.ID, ExternalRef: ref, Network: n, Token: tk}
		if n == "" {
			np.Amount = paywatch.MustParseAmount("7", 6)
		} else {
			np.Amount = amount("7", n, tk)
		}
		pay, _, err := s.CreatePayment(ctx, np)
		require.NoError(t, err)
		return pay.ID
	}
	daiBase := create("a", paywatch.BASE, paywatch.DAI)
	usdcBase := create("b", paywatch.BASE, paywatch.USDC)
	daiERC := create("c", paywatch.ERC20, paywatch.DAI)
	pyusdArb := create("d", paywatch.ARBITRUM, paywatch.PYUSD)
	tron := create("e", paywatch.TRC20, paywatch.USDT)
	unchosen := create("f", "", "")

	list := func(f store.ListFilter) []string {
		t.Helper()
		f.Limit = 100
		ps, total, err := s.ListPayments(ctx, p.ID, f)
		require.NoError(t, err)
		require.Len(t, ps, total)
		var ids []string
		for _, pay := range ps {
			ids = append(ids, pay.ID)
		}
		return ids
	}
	assert.ElementsMatch(t, []string{daiBase, usdcBase, daiERC, pyusdArb, tron, unchosen}, list(store.ListFilter{}))
	assert.ElementsMatch(t, []string{daiBase, usdcBase}, list(store.ListFilter{Network: paywatch.BASE}))
	assert.ElementsMatch(t, []string{daiBase, daiERC}, list(store.ListFilter{Token: paywatch.DAI}))
	assert.Equal(t, []string{daiBase}, list(store.ListFilter{Network: paywatch.BASE, Token: paywatch.DAI}))
	assert.Equal(t, []string{pyusdArb}, list(store.ListFilter{Token: paywatch.PYUSD}))
	assert.Empty(t, list(store.ListFilter{Network: paywatch.BASE, Token: paywatch.PYUSD}))
	paid := paywatch.StatusPaid
	assert.Empty(t, list(store.ListFilter{Network: paywatch.BASE, Status: &paid}), "the filters combine")
}
