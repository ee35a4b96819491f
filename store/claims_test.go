package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// micro_amount_decimals cannot change while payments are open, so open
// payments on a pool address never mix precisions.
func TestMicroDecimalsChangeRefusedWhilePaymentsAreOpen(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	addr := "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
	prj := project(t, s, "micro", pool(paywatch.MatchMicroAmount, 4), staticWallet("TRC20", addr))
	p, _, err := s.CreatePayment(ctx, newPayment(prj, "c", "10"))
	require.NoError(t, err)

	for _, st := range []paywatch.Status{paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPartial} {
		setStatus(t, s, p.ID, st, nil)
		_, err = s.UpdateProject(ctx, "micro", store.ProjectSettings{MicroAmountDecimals: ptr(3)})
		requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgMicroDecimalsOpen)
	}
	_, err = s.UpdateProject(ctx, "micro", store.ProjectSettings{MicroAmountDecimals: ptr(4)})
	require.NoError(t, err, "the same precision is no change")
	got, err := s.ProjectBySlug(ctx, "micro")
	require.NoError(t, err)
	assert.Equal(t, 4, got.MicroAmountDecimals, "a refused change changes nothing")

	setStatus(t, s, p.ID, paywatch.StatusExpired, nil)
	updated, err := s.UpdateProject(ctx, "micro", store.ProjectSettings{MicroAmountDecimals: ptr(3)})
	require.NoError(t, err)
	assert.Equal(t, 3, updated.MicroAmountDecimals)
}

// Migration 00008 claims the transfers payments counted before it, the
// oldest payment first where the old rules let two take one, and starts
// each derived address's received total from its confirmed ones.
func TestClaimsBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolAt(t, 7)
	const (
		older = "10000000-0000-4000-8000-000000000001"
		newer = "10000000-0000-4000-8000-000000000002"
		hashA = "0x" + "aa" + "00000000000000000000000000000000000000000000000000000000000000"
		hashB = "0x" + "bb" + "00000000000000000000000000000000000000000000000000000000000000"
	)
	txs := func(items ...string) string { return "[" + strings.Join(items, ",") + "]" }
	tx := func(hash, amount string, confirmed bool) string {
		return fmt.Sprintf(`{"tx_hash": %q, "log_index": 3, "block_number": 9, "block_hash": "h", "from": "f", "amount": %q, "confirmations": 20, "confirmed": %t}`,
			hash, amount, confirmed)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (id, slug, name) VALUES (1, 'old', 'Old')`, nil},
		{`INSERT INTO wallets (id, project_id, xpub_tron) VALUES (1, 1, $1)`, []any{testXPubTron}},
		{`INSERT INTO derived_addresses (id, wallet_id, family, derivation_index, address, decimals) VALUES (1, 1, 'tron', 1, $1, 6)`,
			[]any{testTronIndex1}},
		{`INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at,
		                        derived_address_id, transactions, created_at)
		  VALUES ($1, 1, 'per_user', 'TRC20', 'USDT', $3, 10000000, 6, 'a', now(), 1, $4::jsonb, now() - interval '2 hours'),
		         ($2, 1, 'per_user', 'TRC20', 'USDT', $3, 10500000, 6, 'b', now(), 1, $5::jsonb, now() - interval '1 hour')`,
			[]any{older, newer, testTronIndex1, txs(tx(hashA, "10.50", true)), txs(tx(hashA, "10.50", true), tx(hashB, "2.25", false))}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	_, err := store.Migrate(ctx, pool)
	require.NoError(t, err)

	rows, err := pool.Query(ctx, `SELECT tx_hash || ' ' || payment_id || ' ' || amount || ' ' || (counted_at IS NOT NULL) FROM transfer_claims ORDER BY tx_hash`)
	require.NoError(t, err)
	var claims []string
	for rows.Next() {
		var c string
		require.NoError(t, rows.Scan(&c))
		claims = append(claims, c)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{hashA + " " + older + " 10500000 true", hashB + " " + newer + " 2250000 false"}, claims)
	var received string
	require.NoError(t, pool.QueryRow(ctx, `SELECT received::text FROM derived_addresses WHERE id = 1`).Scan(&received))
	assert.Equal(t, "10500000", received, "the one confirmed transfer, once")
}
