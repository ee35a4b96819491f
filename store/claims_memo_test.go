package store_test

import (
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A transfer carrying a memo payment's reference is that payment's, even
// when a payment of another mode still watches the shared address (a
// project that changed its address mode): never the other's. One without
// a known reference is the other's to take, as before.
func TestClaimOwnerPrefersTheMemoTheTransferCarries(t *testing.T) {
	ten := paywatch.MustParseAmount("10", 6)
	dedicated := store.WatchedPayment{PaymentID: "dedicated", Token: paywatch.USDC, Amount: ten}
	memo := store.WatchedPayment{PaymentID: "memo", Token: paywatch.USDC, Amount: ten, Memo: "ref-a"}
	watchers := []store.WatchedPayment{dedicated, memo} // the dedicated one is older
	tr := paywatch.Transfer{Token: paywatch.USDC, Amount: big.NewInt(10_000_000), Memos: []string{"ref-a"}}
	owner, ok := store.ClaimOwner(watchers, tr)
	assert.True(t, ok)
	assert.Equal(t, "memo", owner)

	tr.Memos = nil
	owner, ok = store.ClaimOwner(watchers, tr)
	assert.True(t, ok)
	assert.Equal(t, "dedicated", owner, "no reference: not the memo payment's")

	tr.Memos = []string{"ref-b"}
	_, ok = store.ClaimOwner([]store.WatchedPayment{memo}, tr)
	assert.False(t, ok, "another reference: nobody's")
}
