package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

// Keys of the BIP39 test mnemonic "abandon ×11 about": the account xpubs
// m/44'/60'/0' and m/44'/195'/0', and the private key of the first.
const (
	testXPubEVM  = "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt"
	testXPubTron = "xpub6D1AabNHCupeiLM65ZR9UStMhJ1vCpyV4XbZdyhMZBiJXALQtmn9p42VTQckoHVn8WNqS7dqnJokZHAHcHGoaQgmv8D45oNUKx6DZMNZBCd"
	testXPrv     = "xprv9zDSoJv1aBcjX6sNgEpE2J9K6MV2MUnXuqXsFgzVn3zY2aHyupaFQdYCtdCbNMkvcTdx9FeN49sgXw6mjrhrFLRSzJVnRYPfSCCgjeg4GxY"
	// Addresses at index 1, the first payment address.
	testEVMIndex1  = "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0"
	testTronIndex1 = "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK"
)

// testClock is an injectable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock {
	return &testClock{t: time.Date(2030, 5, 17, 12, 0, 30, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newStore returns a store on a fresh database with an injected clock.
func newStore(t *testing.T, opts ...store.Option) (*store.Store, *testClock) {
	t.Helper()
	clk := newClock()
	return store.New(storetest.NewPool(t), append([]store.Option{store.WithClock(clk.Now)}, opts...)...), clk
}

// project creates an owner account, a project in the given settings and a
// wallet with the given contents.
func project(t *testing.T, s *store.Store, slug string, ps store.ProjectSettings, w store.WalletUpdate) *store.Project {
	t.Helper()
	ctx := context.Background()
	email := slug + "@example.com"
	_, err := s.CreateAccount(ctx, email, paywatch.PlanPro)
	require.NoError(t, err)
	ps.OwnerEmail = &email
	p, _, err := s.CreateProject(ctx, store.NewProject{Slug: slug, Settings: ps})
	require.NoError(t, err)
	_, p, err = s.PutWallet(ctx, slug, w)
	require.NoError(t, err)
	return p
}

func ptr[T any](v T) *T { return &v }

func hdWallet() store.WalletUpdate {
	return store.WalletUpdate{XPubs: map[string]*string{"evm": ptr(testXPubEVM), "tron": ptr(testXPubTron)}}
}

func staticWallet(network string, addrs ...string) store.WalletUpdate {
	return store.WalletUpdate{Addresses: map[string][]string{network: addrs}}
}

func mode(m paywatch.AddressMode) store.ProjectSettings {
	return store.ProjectSettings{AddressMode: &m}
}

func pool(m paywatch.PoolMatching, microDecimals int) store.ProjectSettings {
	ps := mode(paywatch.ModePool)
	ps.PoolMatching = &m
	ps.MicroAmountDecimals = &microDecimals
	return ps
}

func amount(s string, n paywatch.Network, t paywatch.Token) paywatch.Amount {
	return paywatch.MustParseAmount(s, paywatch.Decimals(n, t))
}

// newPayment is a creation request on TRC20 USDT.
func newPayment(p *store.Project, ref, amt string) store.NewPayment {
	return store.NewPayment{
		ProjectID: p.ID, ExternalRef: ref, Network: paywatch.TRC20, Token: paywatch.USDT,
		Amount: amount(amt, paywatch.TRC20, paywatch.USDT),
	}
}

// requireCode asserts an application error's code and message.
func requireCode(t *testing.T, err error, code, msg string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, paywatch.ErrorCode(err), "error %v", err)
	require.Equal(t, msg, paywatch.ErrorMessage(err))
}

// parallel runs fn n times at once and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// Static test addresses: valid, distinct and normalised.
var (
	tronAddrs = []string{
		"TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK", "TYJPRrdB5APNeRs4R7fYZSwW3TcrTKw2gx",
	}
	evmAddrs = []string{
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94", "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0", "0xb6716976A3ebe8D39aCEB04372f22Ff8e6802D7A",
	}
)
