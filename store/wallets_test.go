package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/migrations"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

// More watch-only keys for tests that need several wallets.
const (
	// The external chains m/44'/60'/0'/0 and m/44'/195'/0'/0 of the test
	// mnemonic: other strings for the same addresses as testXPubEVM and
	// testXPubTron.
	testXPubEVMExternal  = "xpub6EF8jXqFeFEW5bwMU7RpQtHkzE4KJxcqJtvkCjJumzW8CPpacXkb92ek4WzLQXjL93HycJwTPUAcuNxCqFPKKU5m5Z2Vq4nCyh5CyPeBFFr"
	testXPubTronExternal = "xpub6EuK4CZWW5urEHdwAVDdDw327danAtccFcrXYvgf1DHrPXRwErt36xStQ2PNhn4hpwzPbzJ8pJVpewgChRnSs59q5Ay61GCfQZKUe71gbLq"
	// Account xpubs of a second wallet (the BIP32 seed
	// sha256("paywatch second test wallet")).
	testXPubEVM2  = "xpub6ChoXjmYbBBUSYWguCr89kNQuH1PQ9nNwAb1MhtKSoqeUVdYxagTJKrWcFYgN9ueXfYR6pMMgqGFGW23XkhQJ4bYCrJLGtrSGGoVq6sJhe4"
	testXPubTron2 = "xpub6ByFDymkPaVqJvsTLsSFKqxedCn33Y2SZWACasWzQ3XJ1mCx3TM4aSBMwfoFJeh9y7A6JXfLLYvcz2WmPc1xsJC9B6X4G48NP1S2SFrNmUZ"
)

// otherHDWallet is a wallet with both xpubs of the second test wallet, for a
// project beside one holding hdWallet.
func otherHDWallet() store.WalletUpdate {
	return store.WalletUpdate{XPubs: map[string]*string{"evm": ptr(testXPubEVM2), "tron": ptr(testXPubTron2)}}
}

func xpubs(family, xpub string) store.WalletUpdate {
	return store.WalletUpdate{XPubs: map[string]*string{family: ptr(xpub)}}
}

func TestAnXPubBelongsToOneProject(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	project(t, s, "other", store.ProjectSettings{}, store.WalletUpdate{})

	// The same key, or its external chain, would derive the shop's
	// addresses: a transfer to one would credit both projects.
	for _, c := range []struct{ family, xpub string }{
		{"evm", testXPubEVM}, {"evm", testXPubEVMExternal}, {"tron", testXPubTron}, {"tron", testXPubTronExternal},
	} {
		_, _, err := s.PutWallet(ctx, "other", xpubs(c.family, c.xpub))
		requireCode(t, err, paywatch.ECONFLICT, "xpubs."+c.family+": this xPub is already used by another project")
	}
	// The refused request changed nothing.
	w, err := s.WalletOf(ctx, mustProject(t, s, "other").ID)
	require.NoError(t, err)
	assert.Empty(t, w.XPubs)

	// Saving the shop's own keys again, in either form, is idempotent.
	w, _, err = s.PutWallet(ctx, "shop", hdWallet())
	require.NoError(t, err)
	assert.Equal(t, testXPubEVM, w.XPubs[paywatch.FamilyEVM])
	w, _, err = s.PutWallet(ctx, "shop", xpubs("evm", testXPubEVMExternal))
	require.NoError(t, err)
	assert.Equal(t, testXPubEVMExternal, w.XPubs[paywatch.FamilyEVM])

	// Another account's keys are fine, and a family's key does not block
	// the other family: an EVM key used as the tron key derives Tron
	// addresses, which no EVM scanner matches.
	w, _, err = s.PutWallet(ctx, "other", otherHDWallet())
	require.NoError(t, err)
	assert.True(t, w.HasXPub(paywatch.FamilyEVM) && w.HasXPub(paywatch.FamilyTron))
	project(t, s, "third", store.ProjectSettings{}, xpubs("tron", testXPubEVM))
}

func TestConcurrentWalletsCannotShareAnXPub(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	slugs := []string{"a", "b", "c", "d"}
	for _, slug := range slugs {
		project(t, s, slug, store.ProjectSettings{}, store.WalletUpdate{})
	}
	errs := make([]error, len(slugs))
	parallel(len(slugs), func(i int) {
		x := []string{testXPubTron, testXPubTronExternal}[i%2]
		_, _, errs[i] = s.PutWallet(ctx, slugs[i], xpubs("tron", x))
	})
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		requireCode(t, err, paywatch.ECONFLICT, "xpubs.tron: this xPub is already used by another project")
	}
	assert.Equal(t, 1, won)
}

func TestConcurrentStaticAddressRegistration(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	a := project(t, s, "a", store.ProjectSettings{}, staticWallet("TRC20", tronAddrs[0]))
	project(t, s, "b", store.ProjectSettings{}, store.WalletUpdate{})
	wa, err := s.WalletOf(ctx, a.ID)
	require.NoError(t, err)

	// Project a's registration is under way and not yet committed, so b's
	// check that nobody else has the address passes; b must still lose.
	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO static_addresses (wallet_id, network, address) VALUES ($1, 'TRC20', $2)`, wa.ID, tronAddrs[1])
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, _, err := s.PutWallet(ctx, "b", staticWallet("TRC20", tronAddrs[1]))
		done <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := s.Pool().QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			               WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO static_addresses%')`).
			Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "b's insert waits for a's")
	require.NoError(t, tx.Commit(ctx))
	requireCode(t, <-done, paywatch.ECONFLICT, "addresses.TRC20: "+tronAddrs[1]+" is already registered by another project")

	// Registering its own address again stays idempotent for a.
	w, _, err := s.PutWallet(ctx, "a", staticWallet("TRC20", tronAddrs[1], tronAddrs[0]))
	require.NoError(t, err)
	assert.Equal(t, 2, w.Addresses[paywatch.TRC20])
}

// TestMigrationOnExistingWallets applies migration 00007 to a database that
// already has wallets: their keys get no fingerprint until saved again.
func TestMigrationOnExistingWallets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolAt(t, 6)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (id, slug, name) VALUES (1, 'old', 'Old'), (2, 'older', 'Older')`, nil},
		{`INSERT INTO wallets (id, project_id, xpub_evm, xpub_tron) VALUES (1, 1, $1, $2), (2, 2, NULL, NULL)`, []any{testXPubEVM, testXPubTron}},
		{`INSERT INTO static_addresses (wallet_id, network, address) VALUES (1, 'TRC20', $1), (2, 'TRC20', $2)`, []any{tronAddrs[0], tronAddrs[1]}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	_, err := store.Migrate(ctx, pool)
	require.NoError(t, err)

	var fingerprint *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT xpub_evm_fingerprint FROM wallets WHERE id = 1`).Scan(&fingerprint))
	assert.Nil(t, fingerprint)

	s := store.New(pool)
	_, _, err = s.PutWallet(ctx, "old", hdWallet())
	require.NoError(t, err)
	_, _, err = s.PutWallet(ctx, "older", xpubs("evm", testXPubEVMExternal))
	requireCode(t, err, paywatch.ECONFLICT, "xpubs.evm: this xPub is already used by another project")
}

// mustProject loads a project by slug.
func mustProject(t *testing.T, s *store.Store, slug string) *store.Project {
	t.Helper()
	p, err := s.ProjectBySlug(context.Background(), slug)
	require.NoError(t, err)
	return p
}

// newPoolAt returns a pool on a fresh database migrated up to version only,
// to test a later migration against the rows of an older schema.
func newPoolAt(t *testing.T, version int64) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Connect(ctx, storetest.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithLogger(goose.NopLogger()))
	require.NoError(t, err)
	_, err = p.UpTo(ctx, version)
	require.NoError(t, err)
	return pool
}
