package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// derivedAt is the address the test mnemonic's xPub of family f derives at
// index i.
func derivedAt(t *testing.T, xpub string, f paywatch.Family, i uint32) string {
	t.Helper()
	x, err := paywatch.ParseXPub(xpub)
	require.NoError(t, err)
	a, err := x.Address(f, i)
	require.NoError(t, err)
	return a
}

// staticCount counts the static addresses of every wallet.
func staticCount(t *testing.T, s *store.Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM static_addresses`).Scan(&n))
	return n
}

func TestAnotherProjectsDerivedAddressCannotBeRegistered(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	shop := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	project(t, s, "other", pool(paywatch.MatchTxID, 3), store.WalletUpdate{})

	tron, _, err := s.CreatePayment(ctx, newPayment(shop, "alice", "10"))
	require.NoError(t, err)
	require.Equal(t, testTronIndex1, tron.Address)
	np := newPayment(shop, "bob", "10")
	np.Network = paywatch.ERC20
	np.Amount = amount("10", paywatch.ERC20, paywatch.USDT)
	evm, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	require.Equal(t, testEVMIndex1, evm.Address)

	// The shop's deposit addresses, registered as the other project's pool:
	// one transfer would pay in both projects. An EVM address is one
	// account on every EVM network, so another network is refused too.
	for _, c := range []struct{ network, address string }{
		{"TRC20", testTronIndex1}, {"ERC20", testEVMIndex1}, {"POLYGON", testEVMIndex1},
	} {
		name := "Renamed"
		u := staticWallet(c.network, c.address)
		u.Name = &name
		_, _, err := s.PutWallet(ctx, "other", u)
		requireCode(t, err, paywatch.ECONFLICT,
			"addresses."+c.network+": "+c.address+" is already a deposit address derived by another project's xPub")
	}
	// A mixed list is refused whole: nothing of it is saved.
	mixed := store.WalletUpdate{Addresses: map[string][]string{"TRC20": {tronAddrs[0], testTronIndex1}}}
	_, _, err = s.PutWallet(ctx, "other", mixed)
	requireCode(t, err, paywatch.ECONFLICT,
		"addresses.TRC20: "+testTronIndex1+" is already a deposit address derived by another project's xPub")
	w, err := s.WalletOf(ctx, mustProject(t, s, "other").ID)
	require.NoError(t, err)
	assert.Empty(t, w.Addresses)
	assert.Empty(t, w.Name)
	assert.Equal(t, 0, staticCount(t, s))

	// A static address of one project is refused on another EVM network
	// for another project, with the message for registered addresses.
	_, _, err = s.PutWallet(ctx, "other", staticWallet("ERC20", evmAddrs[2]))
	require.NoError(t, err)
	project(t, s, "third", store.ProjectSettings{}, store.WalletUpdate{})
	_, _, err = s.PutWallet(ctx, "third", staticWallet("BEP20", evmAddrs[2]))
	requireCode(t, err, paywatch.ECONFLICT, "addresses.BEP20: "+evmAddrs[2]+" is already registered by another project")

	// The owner may register one address on several networks of its
	// family, and its own derived address (both stay within one project).
	w, _, err = s.PutWallet(ctx, "other", store.WalletUpdate{Addresses: map[string][]string{
		"BEP20": {evmAddrs[2]}, "ARBITRUM": {evmAddrs[2]},
	}})
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Network]int{paywatch.ERC20: 1, paywatch.BEP20: 1, paywatch.ARBITRUM: 1}, w.Addresses)
	// Its own derived address only once no payment watches it there
	// (issue 24: a pool payment on it would share the transfers).
	_, _, err = s.PutWallet(ctx, "shop", staticWallet("TRC20", testTronIndex1))
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgStaticAddressWatched(paywatch.TRC20, testTronIndex1))
	setStatus(t, s, tron.ID, paywatch.StatusPaid, nil)
	w, _, err = s.PutWallet(ctx, "shop", staticWallet("TRC20", testTronIndex1))
	require.NoError(t, err)
	assert.Equal(t, 1, w.Addresses[paywatch.TRC20])
}

func TestDerivationSkipsAnAddressRegisteredElsewhere(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	shop := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	tron2 := derivedAt(t, testXPubTron, paywatch.FamilyTron, 2)
	evm1 := derivedAt(t, testXPubEVM, paywatch.FamilyEVM, 1)
	// Another project registers what the shop's keys would derive next:
	// tron at index 2, and the EVM index 1 on an EVM network the shop's
	// payment does not even use.
	project(t, s, "other", pool(paywatch.MatchTxID, 3), store.WalletUpdate{Addresses: map[string][]string{
		"TRC20": {tron2}, "BEP20": {evm1},
	}})
	// The shop's own static address at tron index 4 is skipped as well.
	tron4 := derivedAt(t, testXPubTron, paywatch.FamilyTron, 4)
	_, _, err := s.PutWallet(ctx, "shop", staticWallet("TRC20", tron4))
	require.NoError(t, err)

	var got []string
	for i := range 3 {
		p, _, err := s.CreatePayment(ctx, newPayment(shop, "c"+strconv.Itoa(i), "10"))
		require.NoError(t, err)
		got = append(got, p.Address)
	}
	assert.Equal(t, []string{
		testTronIndex1,
		derivedAt(t, testXPubTron, paywatch.FamilyTron, 3),
		derivedAt(t, testXPubTron, paywatch.FamilyTron, 5),
	}, got, "indices 2 and 4 are skipped")

	np := newPayment(shop, "e", "10")
	np.Network = paywatch.ERC20
	np.Amount = amount("10", paywatch.ERC20, paywatch.USDT)
	p, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	assert.Equal(t, derivedAt(t, testXPubEVM, paywatch.FamilyEVM, 2), p.Address)

	// per_user derives through the same path.
	users := project(t, s, "users", mode(paywatch.ModePerUser), otherHDWallet())
	_, _, err = s.PutWallet(ctx, "other", staticWallet("TRC20", derivedAt(t, testXPubTron2, paywatch.FamilyTron, 1)))
	require.NoError(t, err)
	p, _, err = s.CreatePayment(ctx, newPayment(users, "carol", "10"))
	require.NoError(t, err)
	assert.Equal(t, derivedAt(t, testXPubTron2, paywatch.FamilyTron, 2), p.Address)
}

// TestRegistrationAndDerivationRace lets a registration and a derivation
// of the same address run at once, round after round: exactly one gets it.
func TestRegistrationAndDerivationRace(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	shop := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	project(t, s, "other", pool(paywatch.MatchTxID, 3), store.WalletUpdate{})

	next := uint32(1) // the shop's next derivation index
	registered, derived := 0, 0
	for round := range 12 {
		target := derivedAt(t, testXPubTron, paywatch.FamilyTron, next)
		var pay *store.Payment
		var payErr, regErr error
		parallel(2, func(i int) {
			if i == 0 {
				pay, _, payErr = s.CreatePayment(ctx, newPayment(shop, "r"+strconv.Itoa(round), "10"))
				return
			}
			_, _, regErr = s.PutWallet(ctx, "other", staticWallet("TRC20", target))
		})
		require.NoError(t, payErr)
		if regErr == nil {
			registered++
			assert.Equal(t, derivedAt(t, testXPubTron, paywatch.FamilyTron, next+1), pay.Address,
				"round %d: the registration won, the derivation skipped the index", round)
			next += 2
			continue
		}
		requireCode(t, regErr, paywatch.ECONFLICT,
			"addresses.TRC20: "+target+" is already a deposit address derived by another project's xPub")
		assert.Equal(t, target, pay.Address, "round %d", round)
		derived++
		next++
	}
	t.Logf("registration won %d rounds, derivation %d", registered, derived)
	var shared int
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT count(*) FROM static_addresses st JOIN derived_addresses d ON d.address = st.address`).Scan(&shared))
	assert.Zero(t, shared, "no address is both registered and derived")
}

// TestAddressOwnersBackfill applies migration 00010 to rows of the older
// schema, one address of which two projects already share: the first
// registration keeps it, and the other project's next PUT of it is refused.
func TestAddressOwnersBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolAt(t, 8)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (id, slug, name) VALUES (1, 'old', 'Old'), (2, 'older', 'Older')`, nil},
		{`INSERT INTO wallets (id, project_id, xpub_tron) VALUES (1, 1, $1), (2, 2, NULL)`, []any{testXPubTron}},
		{`INSERT INTO derived_addresses (wallet_id, family, derivation_index, address, created_at)
		  VALUES (1, 'tron', 1, $1, '2025-01-02')`, []any{testTronIndex1}},
		{`INSERT INTO static_addresses (wallet_id, network, address, created_at)
		  VALUES (2, 'TRC20', $1, '2025-01-03'), (2, 'ERC20', $2, '2025-01-01'), (2, 'BEP20', $2, '2025-01-04')`,
			[]any{testTronIndex1, evmAddrs[0]}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	_, err := store.Migrate(ctx, pool)
	require.NoError(t, err)

	rows, err := pool.Query(ctx, `SELECT family || ' ' || address || ' ' || wallet_id FROM address_owners ORDER BY family, address`)
	require.NoError(t, err)
	var owners []string
	for rows.Next() {
		var o string
		require.NoError(t, rows.Scan(&o))
		owners = append(owners, o)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"evm " + evmAddrs[0] + " 2", "tron " + testTronIndex1 + " 1"}, owners)

	s := store.New(pool)
	_, _, err = s.PutWallet(ctx, "older", staticWallet("POLYGON", evmAddrs[0]))
	require.NoError(t, err)
	_, _, err = s.PutWallet(ctx, "older", staticWallet("TRC20", testTronIndex1))
	requireCode(t, err, paywatch.ECONFLICT,
		"addresses.TRC20: "+testTronIndex1+" is already a deposit address derived by another project's xPub")
}
