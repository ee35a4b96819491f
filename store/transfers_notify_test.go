package store_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// tell tells every due unmatched transfer as the reconciler does, and
// returns the states.
func tell(t *testing.T, s *store.Store) map[string]store.UnmatchedTold {
	t.Helper()
	ctx := context.Background()
	due, err := s.DueUnmatched(ctx, 100)
	require.NoError(t, err)
	out := map[string]store.UnmatchedTold{}
	for _, tr := range due {
		told, ok, err := s.TellUnmatched(ctx, tr, store.UnmatchedNotice{
			EventID: uuidOf(tr.TxHash), Payload: []byte(`{"event":"transfer.unmatched","tx_hash":"` + tr.TxHash + `"}`), ChatText: "unmatched " + tr.TxHash,
		})
		require.NoError(t, err)
		if ok {
			out[tr.TxHash] = told
		}
	}
	return out
}

// uuidOf makes a UUID of a 64-digit hash's first 32 digits.
func uuidOf(h string) string {
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// Each unmatched transfer is told once, in the event log: without the
// opt-in its webhook is logged as skipped and never sent; with it, the
// event waits for delivery under the daily webhook quota; with a chat, a
// message under the chat quota. Held and dust transfers are settled
// silently; a transfer still pending is told once it is unmatched.
func TestUnmatchedToldOnce(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, prj: project(t, s, "shop", mode(paywatch.ModePerPayment), hdWallet())}
	paid, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	counted := tronTransfer(hashOf('1'), paid.Address, "10", 10)
	f.record(10, paid.ID, counted)
	_, err = s.SavePaymentState(ctx, paidState(paid, 1, counted.TxHash, "10"))
	require.NoError(t, err)
	first := tronTransfer(hashOf('a'), paid.Address, "10", 11)
	dust := tronTransfer(hashOf('b'), paid.Address, "0.01", 11)
	f.record(11, "", first, dust)
	assert.Empty(t, tell(t, s), "nothing confirmed yet")

	f.record(40, "")
	told := tell(t, s)
	require.Len(t, told, 1)
	assert.Equal(t, store.UnmatchedTold{Webhook: store.WebhookSkipped}, told[first.TxHash], "webhooks off, no chat")
	assert.Empty(t, tell(t, s), "told once")
	var settled int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM chain_transfers WHERE notified_at IS NOT NULL`).Scan(&settled))
	assert.Equal(t, 3, settled, "the held and the dust transfers are settled silently")
	evs, _, err := s.ListEvents(ctx, f.prj.ID, store.EventFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, store.EventTransferUnmatched, evs[0].Event)
	assert.Empty(t, evs[0].PaymentID)
	assert.Equal(t, store.WebhookSkipped, evs[0].State)
	attempts, err := s.WebhookAttempts(ctx, evs[0].EventID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	assert.Equal(t, "transfer.unmatched webhooks are off for this project", attempts[0].ResponseBody)

	// Opted in, with a chat, and quotas of one a day.
	on, chat := true, "12345"
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{UnmatchedWebhooks: &on, TelegramChatID: &chat})
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE accounts SET limits = '{"webhooks_per_day": 1, "chat_notifications_per_day": 1}' WHERE email = 'shop@example.com'`)
	require.NoError(t, err)
	second := tronTransfer(hashOf('c'), paid.Address, "5", 41)
	third := tronTransfer(hashOf('d'), paid.Address, "6", 41)
	f.record(41, "", second, third)
	f.record(70, "")
	told = tell(t, s)
	require.Len(t, told, 2)
	assert.Equal(t, store.UnmatchedTold{Webhook: store.WebhookPending, Chat: store.ChatPending}, told[second.TxHash])
	assert.Equal(t, store.UnmatchedTold{Webhook: store.WebhookSkipped, Chat: store.ChatSkipped}, told[third.TxHash], "over both quotas")

	// Given a webhook URL, only the event told under the opt-in and within
	// the quota waits to be sent: the first, told before the opt-in, and
	// the third, over the quota, never will.
	url := "https://shop.example/hooks"
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{WebhookURL: &url})
	require.NoError(t, err)
	pending, err := s.PendingWebhooks(ctx, f.prj.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, uuidOf(second.TxHash), pending[0].EventID)
}

// Replicas telling the same transfer at once tell it once: one event, one
// chat message.
func TestUnmatchedToldOnceUnderRace(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, prj: project(t, s, "race", mode(paywatch.ModeDedicated), staticWallet("TRC20", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"))}
	chat := "777"
	_, err := s.UpdateProject(ctx, "race", store.ProjectSettings{TelegramChatID: &chat})
	require.NoError(t, err)
	f.record(40, "", tronTransfer(hashOf('e'), "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "9", 5))
	due, err := s.DueUnmatched(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	var wins atomic.Int32
	parallel(8, func(int) {
		_, ok, err := s.TellUnmatched(ctx, due[0], store.UnmatchedNotice{EventID: uuidOf(due[0].TxHash), Payload: []byte(`{}`), ChatText: "x"})
		assert.NoError(t, err)
		if ok {
			wins.Add(1)
		}
	})
	assert.Equal(t, int32(1), wins.Load())
	var events, messages int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_events`).Scan(&events))
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM chat_messages`).Scan(&messages))
	assert.Equal(t, 1, events)
	assert.Equal(t, 1, messages)
}

// After an upgrade, the transfers recorded before it (to a payment's
// address, after the payment was paid) are given their project by
// migration 00031, listed as unmatched, and told by the first pass: nothing
// received before the upgrade stays silent (issue 27, item 4).
func TestUnmatchedAfterUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolAt(t, 30)
	const paid = "20000000-0000-4000-8000-000000000001"
	counted, later := hashOf('a'), hashOf('b')
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (id, slug, name) VALUES (1, 'old', 'Old')`, nil},
		{`INSERT INTO wallets (id, project_id, xpub_tron) VALUES (1, 1, $1)`, []any{testXPubTron}},
		{`INSERT INTO derived_addresses (id, wallet_id, family, derivation_index, address, decimals) VALUES (1, 1, 'tron', 1, $1, 6)`,
			[]any{testTronIndex1}},
		{`INSERT INTO address_owners (family, address, wallet_id) VALUES ('tron', $1, 1)`, []any{testTronIndex1}},
		{`INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at,
		                        derived_address_id, status, start_block, created_at)
		  VALUES ($1, 1, 'per_payment', 'TRC20', 'USDT', $2, 10000000, 6, 'a', now(), 1, 'paid', 5, now() - interval '2 hours')`,
			[]any{paid, testTronIndex1}},
		{`INSERT INTO transfer_claims (network, tx_hash, log_index, payment_id, to_address, token, amount, counted_at)
		  VALUES ('TRC20', $1, 0, $2, $3, 'USDT', 10000000, now())`, []any{counted, paid, testTronIndex1}},
		{`INSERT INTO chain_transfers (network, tx_hash, log_index, block_number, block_hash, token, from_address, to_address, amount)
		  VALUES ('TRC20', $1, 0, 10, 'b1', 'USDT', $3, $4, 10000000), ('TRC20', $2, 0, 11, 'b2', 'USDT', $3, $4, 10000000)`,
			[]any{counted, later, tronAddrs[0], testTronIndex1}},
		{`INSERT INTO chain_cursors (network, height, block_hash, head, updated_at) VALUES ('TRC20', 100, 'h', 100, now())`, nil},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err, q.sql)
	}
	_, err := store.Migrate(ctx, pool)
	require.NoError(t, err)
	s := store.New(pool)

	list, total, err := s.ProjectTransfers(ctx, 1, store.TransferFilter{})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	states := map[string]store.TransferState{}
	for _, tr := range list {
		states[tr.TxHash] = tr.State
	}
	assert.Equal(t, map[string]store.TransferState{counted: store.TransferMatched, later: store.TransferUnmatched}, states)
	told := tell(t, s)
	require.Len(t, told, 1)
	assert.Contains(t, told, later)
}
