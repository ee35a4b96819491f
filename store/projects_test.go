package store_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

func TestAccounts(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	a, err := s.CreateAccount(ctx, " Alice@Example.com ", paywatch.PlanFree)
	require.NoError(t, err)
	assert.Equal(t, "alice@example.com", a.Email)
	assert.Equal(t, store.AccountActive, a.Status)
	assert.Equal(t, int64(500), a.Limits().APICallsPerDay)

	_, err = s.CreateAccount(ctx, "alice@example.com", paywatch.PlanPro)
	assert.Equal(t, paywatch.ECONFLICT, paywatch.ErrorCode(err))
	_, err = s.CreateAccount(ctx, "not an email", paywatch.PlanPro)
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))

	pro := paywatch.PlanPro
	calls := int64(100000)
	a, err = s.UpdateAccount(ctx, "alice@example.com", store.AccountUpdate{Plan: &pro, Limits: paywatch.LimitOverrides{APICallsPerDay: &calls}})
	require.NoError(t, err)
	assert.Equal(t, int64(100000), a.Limits().APICallsPerDay)
	assert.Equal(t, int64(3), a.Limits().Projects)
	a, err = s.UpdateAccount(ctx, "alice@example.com", store.AccountUpdate{ClearLimits: []string{"api_calls_per_day"}})
	require.NoError(t, err)
	assert.Equal(t, int64(5000), a.Limits().APICallsPerDay)

	_, err = s.UpdateAccount(ctx, "nobody@example.com", store.AccountUpdate{})
	assert.Equal(t, paywatch.ENOTFOUND, paywatch.ErrorCode(err))
}

func TestProjectsAndKeys(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	for _, bad := range []string{"", "Shop", "my_shop", "-shop", "shop-", "a--b", strings.Repeat("a", 64)} {
		_, _, err := s.CreateProject(ctx, store.NewProject{Slug: bad})
		assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err), "slug %q", bad)
	}

	p, creds, err := s.CreateProject(ctx, store.NewProject{Slug: "no-owner"})
	require.NoError(t, err)
	assert.Nil(t, p.Owner)
	assert.Equal(t, "no-owner", p.Name)
	assert.True(t, strings.HasPrefix(creds.APIKey, "pk_live_"))
	assert.Equal(t, creds.APIKey[:12], p.APIKeyPrefix)
	_, err = s.Authenticate(ctx, creds.APIKey)
	requireCode(t, err, paywatch.EUNAUTHORIZED, "Invalid API key")

	_, _, err = s.CreateProject(ctx, store.NewProject{Slug: "no-owner"})
	assert.Equal(t, paywatch.ECONFLICT, paywatch.ErrorCode(err))

	// The store keeps no key in clear.
	var stored int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM projects WHERE api_key_hash = $1::bytea OR api_key_prefix = $2`,
		[]byte(creds.APIKey), creds.APIKey).Scan(&stored))
	assert.Zero(t, stored)

	email := "owner@example.com"
	_, err = s.CreateAccount(ctx, email, paywatch.PlanFree)
	require.NoError(t, err)
	p, err = s.UpdateProject(ctx, "no-owner", store.ProjectSettings{OwnerEmail: &email})
	require.NoError(t, err)
	assert.Equal(t, email, p.OwnerEmail())
	got, err := s.Authenticate(ctx, creds.APIKey)
	require.NoError(t, err)
	assert.Equal(t, p.ID, got.ID)

	newCreds, _, err := s.RegenerateKeys(ctx, "no-owner", nil)
	require.NoError(t, err)
	_, err = s.Authenticate(ctx, creds.APIKey)
	requireCode(t, err, paywatch.EUNAUTHORIZED, "Invalid API key")
	_, err = s.Authenticate(ctx, newCreds.APIKey)
	require.NoError(t, err)
	assert.NotEqual(t, creds.WebhookSecret, newCreds.WebhookSecret)
	assert.NotEqual(t, creds.APISecret, newCreds.APISecret)

	off := false
	_, err = s.UpdateProject(ctx, "no-owner", store.ProjectSettings{Active: &off})
	require.NoError(t, err)
	_, err = s.Authenticate(ctx, newCreds.APIKey)
	requireCode(t, err, paywatch.EFORBIDDEN, "Project is deactivated")
	on := true
	_, err = s.UpdateProject(ctx, "no-owner", store.ProjectSettings{Active: &on})
	require.NoError(t, err)
	for st, msg := range map[store.AccountStatus]string{
		store.AccountSuspended: "Account suspended. Contact support.",
		store.AccountClosed:    "Account is no longer active.",
	} {
		_, err = s.UpdateAccount(ctx, email, store.AccountUpdate{Status: &st})
		require.NoError(t, err)
		_, err = s.Authenticate(ctx, newCreds.APIKey)
		requireCode(t, err, paywatch.EFORBIDDEN, msg)
	}

	// The owner must be an existing active account.
	missing := "ghost@example.com"
	_, _, err = s.CreateProject(ctx, store.NewProject{Slug: "ghost", Settings: store.ProjectSettings{OwnerEmail: &missing}})
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
	_, _, err = s.CreateProject(ctx, store.NewProject{Slug: "closed", Settings: store.ProjectSettings{OwnerEmail: &email}})
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
}

func TestProjectPlanLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	email := "free@example.com"
	_, err := s.CreateAccount(ctx, email, paywatch.PlanFree)
	require.NoError(t, err)
	var ok, refused atomic.Int32
	parallel(4, func(i int) {
		_, _, err := s.CreateProject(ctx, store.NewProject{Slug: []string{"a", "b", "c", "d"}[i], Settings: store.ProjectSettings{OwnerEmail: &email}})
		switch paywatch.ErrorCode(err) {
		case "":
			ok.Add(1)
		case paywatch.EFORBIDDEN:
			refused.Add(1)
		default:
			t.Errorf("unexpected %v", err)
		}
	})
	assert.Equal(t, int32(1), ok.Load(), "free plan: 1 project")
	assert.Equal(t, int32(3), refused.Load())

	// Wallets: 1 on free.
	owned, err := s.ListProjects(ctx)
	require.NoError(t, err)
	require.Len(t, owned, 1)
	_, _, err = s.PutWallet(ctx, owned[0].Slug, hdWallet())
	require.NoError(t, err)
	_, _, err = s.PutWallet(ctx, owned[0].Slug, hdWallet())
	require.NoError(t, err, "changing the existing wallet is not a new one")
	two := int64(2)
	_, err = s.UpdateAccount(ctx, email, store.AccountUpdate{Limits: paywatch.LimitOverrides{Projects: &two}})
	require.NoError(t, err)
	_, _, err = s.CreateProject(ctx, store.NewProject{Slug: "second", Settings: store.ProjectSettings{OwnerEmail: &email}})
	require.NoError(t, err, "the override lifts the project limit")
	_, _, err = s.PutWallet(ctx, "second", hdWallet())
	assert.Equal(t, paywatch.EFORBIDDEN, paywatch.ErrorCode(err))
}

func TestWalletValidation(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, store.WalletUpdate{})

	_, _, err := s.PutWallet(ctx, "shop", store.WalletUpdate{XPubs: map[string]*string{"evm": ptr(testXPrv)}})
	require.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
	assert.Contains(t, paywatch.ErrorMessage(err), "xpubs.evm:")
	assert.Contains(t, paywatch.ErrorMessage(err), "private key")
	assert.NotContains(t, paywatch.ErrorMessage(err), testXPrv[4:20], "never echoes the secret")

	_, _, err = s.PutWallet(ctx, "shop", store.WalletUpdate{XPubs: map[string]*string{"btc": ptr(testXPubEVM)}})
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))

	_, _, err = s.PutWallet(ctx, "shop", store.WalletUpdate{Addresses: map[string][]string{"TRC20": {tronAddrs[0], "Tnope"}}})
	require.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
	assert.Contains(t, paywatch.ErrorMessage(err), "addresses.TRC20[1]")

	_, _, err = s.PutWallet(ctx, "shop", store.WalletUpdate{Addresses: map[string][]string{"SOLANA": {evmAddrs[0]}}})
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))

	lower := strings.ToLower(evmAddrs[0])
	w, _, err := s.PutWallet(ctx, "shop", store.WalletUpdate{
		XPubs:     map[string]*string{"evm": ptr(testXPubEVM)},
		Addresses: map[string][]string{"ERC20": {lower, evmAddrs[0]}, "TRC20": {tronAddrs[0]}},
	})
	require.NoError(t, err)
	assert.True(t, w.HasXPub(paywatch.FamilyEVM))
	assert.False(t, w.HasXPub(paywatch.FamilyTron))
	assert.Equal(t, 1, w.Addresses[paywatch.ERC20], "normalised and deduplicated")
	var stored string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT address FROM static_addresses WHERE network = 'ERC20'`).Scan(&stored))
	assert.Equal(t, evmAddrs[0], stored, "EIP-55 form")

	// Removing an xpub.
	w, _, err = s.PutWallet(ctx, "shop", store.WalletUpdate{XPubs: map[string]*string{"evm": nil}})
	require.NoError(t, err)
	assert.False(t, w.HasXPub(paywatch.FamilyEVM))

	// Another project cannot register the same address.
	project(t, s, "other", store.ProjectSettings{}, store.WalletUpdate{})
	_, _, err = s.PutWallet(ctx, "other", store.WalletUpdate{Addresses: map[string][]string{"TRC20": {tronAddrs[0]}}})
	assert.Equal(t, paywatch.ECONFLICT, paywatch.ErrorCode(err))

	avail := s.AvailableNetworks(paywatch.ModeDedicated, w)
	require.Len(t, avail, 2)
	assert.Equal(t, paywatch.TRC20, avail[0].Network)
	assert.Empty(t, s.AvailableNetworks(paywatch.ModePerPayment, w))
	_ = p
}

func TestAddressModeChangeWhilePending(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	pay, _, err := s.CreatePayment(ctx, newPayment(p, "u", "10"))
	require.NoError(t, err)
	perUser := paywatch.ModePerUser
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{AddressMode: &perUser})
	requireCode(t, err, paywatch.ECONFLICT, "The address mode cannot be changed while payments are pending")
	same := paywatch.ModePerPayment
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{AddressMode: &same})
	require.NoError(t, err, "not a change")
	_, err = s.Pool().Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = $1`, pay.ID)
	require.NoError(t, err)
	got, err := s.UpdateProject(ctx, "shop", store.ProjectSettings{AddressMode: &perUser})
	require.NoError(t, err)
	assert.Equal(t, paywatch.ModePerUser, got.AddressMode)

	min := paywatch.MustParseAmount("0.5", 1)
	got, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{MinAmount: &min})
	require.NoError(t, err)
	assert.Equal(t, "0.50", got.MinAmount.String())
	got, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{ClearMinAmount: true})
	require.NoError(t, err)
	assert.Nil(t, got.MinAmount)
	bad := 9
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{MicroAmountDecimals: &bad})
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
}

func TestRateLimitWindows(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	var last store.RateWindow
	parallel(20, func(int) {
		_, err := s.HitRate(ctx, "k", time.Minute)
		require.NoError(t, err)
	})
	last, err := s.HitRate(ctx, "k", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(21), last.Count, "concurrent hits add up")
	assert.Equal(t, time.Date(2030, 5, 17, 12, 1, 0, 0, time.UTC), last.Reset)
	assert.Equal(t, 30*time.Second, last.RetryAfter())
	clk.Add(30 * time.Second)
	last, err = s.HitRate(ctx, "k", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1), last.Count, "a new window")

	a, err := s.CreateAccount(ctx, "a@example.com", paywatch.PlanFree)
	require.NoError(t, err)
	d, err := s.HitDaily(ctx, a.ID, store.DailyAPICalls)
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Count)
	assert.Equal(t, time.Date(2030, 5, 18, 0, 0, 0, 0, time.UTC), d.Reset)
	clk.Add(12 * time.Hour)
	d, err = s.HitDaily(ctx, a.ID, store.DailyAPICalls)
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Count, "reset at 00:00 UTC")

	clk.Add(2 * time.Hour)
	require.NoError(t, s.PruneRateLimits(ctx))
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM rate_limits`).Scan(&n))
	assert.Zero(t, n)
}
