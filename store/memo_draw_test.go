package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// tonWallet returns a fresh TON wallet address in paywatch's form.
func tonWallet(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	a, err := paywatch.NormalizeTONWallet("0:" + hex.EncodeToString(k))
	require.NoError(t, err)
	return a
}

// TON memos are short, so two payments on an address could draw the
// same one: a memo is drawn again until no payment on the address has it
// and no customer holds it, and concurrent payments take turns, so
// however many are created at once each gets its own. Drawn here from
// 200 memos for 60 payments and 5 customers, concurrently: without the
// turns and the check, 65 draws from 200 repeat one but once in 7,000
// runs.
func TestMemosAreUniqueOnTheirAddressUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	var draws sync.Mutex
	s.DrawMemosWith(func(paywatch.Network) string {
		draws.Lock()
		defer draws.Unlock()
		n, _ := rand.Int(rand.Reader, big.NewInt(200))
		return fmt.Sprintf("MEMO%04d", n.Int64())
	})
	wallet := tonWallet(t)
	per := project(t, s, "ton-pp", mode(paywatch.ModePerPayment), staticWallet("TON", wallet))
	user := project(t, s, "ton-pu", mode(paywatch.ModePerUser), staticWallet("TON", tonWallet(t)))

	var wg sync.WaitGroup
	memos := make([]string, 65)
	addrs := make([]string, 65)
	errs := make([]error, 65)
	for i := range memos {
		wg.Go(func() {
			np := store.NewPayment{ProjectID: per.ID, Amount: amount("10", paywatch.TON, paywatch.USDT),
				ExternalRef: fmt.Sprintf("buyer-%d", i), Network: paywatch.TON, Token: paywatch.USDT}
			if i >= 60 {
				np.ProjectID, np.ExternalRef = user.ID, fmt.Sprintf("customer-%d", i)
			}
			p, _, err := s.CreatePayment(ctx, np)
			errs[i] = err
			if err == nil {
				memos[i], addrs[i] = p.Memo, p.Address
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for i, m := range memos {
		require.NoError(t, errs[i], "payment %d", i)
		require.NotEmpty(t, m)
		seen[addrs[i]+" "+m]++
	}
	for m, n := range seen {
		assert.Equal(t, 1, n, "memo %s drawn for %d payments on its address", m, n)
	}
	var customers int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(DISTINCT memo) FROM user_memos WHERE network = 'TON'`).Scan(&customers))
	assert.Equal(t, 5, customers, "each customer's memo its own on the network")
}
