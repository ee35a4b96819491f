package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// N payments claim one hash at once: exactly one wins, the others get the
// 409 message; the winner may claim again (activity retry).
func TestClaimTxHashConcurrency(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = f.payment(t)
	}
	hash := "0xa0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.ClaimTxHash(ctx, paywatch.ERC20, hash, ids[i], nil)
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two winners")
			winner = i
			continue
		}
		assert.Equal(t, paywatch.ECONFLICT, paywatch.ErrorCode(err))
		assert.Equal(t, "This transaction hash is already submitted for another payment", paywatch.ErrorMessage(err))
	}
	require.NotEqual(t, -1, winner)
	assert.NoError(t, s.ClaimTxHash(ctx, paywatch.ERC20, hash, ids[winner], nil), "claiming again for the same payment is idempotent")
	assert.NoError(t, s.ClaimTxHash(ctx, paywatch.POLYGON, hash, ids[(winner+1)%n], nil), "claims are per network")
}
