package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// chatFixture is a project with a chat and a payment whose events are
// queued as webhooks, as the payment workflow's activity does.
type chatFixture struct {
	s   *store.Store
	clk *testClock
	p   *store.Project
	pay *store.Payment
	seq int
}

func newChatFixture(t *testing.T, chat string, limit int64) *chatFixture {
	t.Helper()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{TelegramChatID: &chat}, hdWallet())
	if limit != 0 {
		_, err := s.UpdateAccount(ctx, "shop@example.com", store.AccountUpdate{Limits: paywatch.LimitOverrides{ChatNotificationsPerDay: ptr(limit)}})
		require.NoError(t, err)
	}
	pay, _, err := s.CreatePayment(ctx, newPayment(p, "c", "10"))
	require.NoError(t, err)
	return &chatFixture{s: s, clk: clk, p: p, pay: pay}
}

// event queues the next webhook event of the payment and its chat message.
func (f *chatFixture) event(t *testing.T) (string, store.ChatState, bool) {
	t.Helper()
	f.seq++
	ev := whEvent(f.pay.ID, f.seq, paywatch.EventExpired)
	_, err := f.s.QueueWebhookEvent(context.Background(), ev)
	require.NoError(t, err)
	st, queued, err := f.s.QueueChatMessage(context.Background(), ev.EventID, func(n store.ChatNotice) string { return "Expired: " + n.ProjectName })
	require.NoError(t, err)
	return ev.EventID, st, queued
}

// A project's chat gets one message per event, counted once; a project
// without a chat gets none.
func TestQueueChatMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newChatFixture(t, "-1001234567890", 0)
	id, st, queued := f.event(t)
	assert.True(t, queued)
	assert.Equal(t, store.ChatPending, st)
	m, err := f.s.ChatMessageByID(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "-1001234567890", m.ChatID)
	assert.Equal(t, "Expired: shop", m.Text)

	// Queued again (a retried activity): the same message, counted once.
	st, queued, err = f.s.QueueChatMessage(ctx, id, func(store.ChatNotice) string { return "other" })
	require.NoError(t, err)
	assert.True(t, queued)
	assert.Equal(t, store.ChatPending, st)
	u, err := f.s.Usage(ctx, f.p.Owner.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 1, u.ChatNotificationsToday)

	// The reconciler starts a message whose workflow never started.
	f.clk.Add(10 * time.Minute)
	ids, err := f.s.UnstartedChatMessages(ctx, time.Minute, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{id}, ids)
	require.NoError(t, f.s.MarkChatStarted(ctx, id))
	ids, err = f.s.UnstartedChatMessages(ctx, time.Minute, 10)
	require.NoError(t, err)
	assert.Empty(t, ids)
	assert.Equal(t, m.ChatID, m.CurrentChatID)

	require.NoError(t, f.s.MarkChatSent(ctx, id, 77))
	require.NoError(t, f.s.MarkChatFailed(ctx, id, "late failure"), "a sent message stays sent")
	m, err = f.s.ChatMessageByID(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, store.ChatSent, m.State)
	assert.EqualValues(t, 77, m.TelegramMessageID)

	empty := ""
	_, err = f.s.UpdateProject(ctx, "shop", store.ProjectSettings{TelegramChatID: &empty})
	require.NoError(t, err)
	_, _, queued = f.event(t)
	assert.False(t, queued)
	bad := "not a chat"
	_, err = f.s.UpdateProject(ctx, "shop", store.ProjectSettings{TelegramChatID: &bad})
	requireCode(t, err, paywatch.EINVALID, paywatch.MsgChatID)
}

// Over the daily quota a message is skipped, and recorded as such; the
// quota starts again at 00:00 UTC.
func TestChatQuotaAndMidnightReset(t *testing.T) {
	t.Parallel()
	f := newChatFixture(t, "42", 2)
	day := time.Date(2026, 11, 25, 23, 59, 0, 0, time.UTC)
	f.clk.Add(day.Sub(f.clk.Now()))
	for range 2 {
		_, st, _ := f.event(t)
		assert.Equal(t, store.ChatPending, st)
	}
	id, st, queued := f.event(t)
	assert.True(t, queued)
	assert.Equal(t, store.ChatSkipped, st)
	m, err := f.s.ChatMessageByID(context.Background(), id)
	require.NoError(t, err)
	assert.Contains(t, m.LastError, "quota")

	f.clk.Add(time.Minute) // 00:00 UTC the next day
	_, st, _ = f.event(t)
	assert.Equal(t, store.ChatPending, st)
}

// Events raised at once share the quota exactly: never more messages than
// the limit.
func TestChatQuotaUnderConcurrency(t *testing.T) {
	t.Parallel()
	f := newChatFixture(t, "42", 5)
	ids := make([]string, 12)
	for i := range ids {
		f.seq++
		ev := whEvent(f.pay.ID, f.seq, paywatch.EventPartial)
		_, err := f.s.QueueWebhookEvent(context.Background(), ev)
		require.NoError(t, err)
		ids[i] = ev.EventID
	}
	var pending, skipped atomic.Int32
	parallel(len(ids), func(i int) {
		st, _, err := f.s.QueueChatMessage(context.Background(), ids[i], func(store.ChatNotice) string { return "x" })
		if err != nil {
			t.Error(err)
			return
		}
		if st == store.ChatPending {
			pending.Add(1)
		} else {
			skipped.Add(1)
		}
	})
	assert.EqualValues(t, 5, pending.Load())
	assert.EqualValues(t, 7, skipped.Load())
}

// A link code links the chat that sends it, once and for an hour; /stop
// unlinks the chat.
func TestTelegramLinkCodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	_, err := s.NewTelegramLinkCode(ctx, p.ID, "CODE1")
	require.NoError(t, err)
	name, ok, err := s.LinkTelegramChat(ctx, "CODE1", "555")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "shop", name)
	_, ok, err = s.LinkTelegramChat(ctx, "CODE1", "666")
	require.NoError(t, err)
	assert.False(t, ok, "a code works once")
	got, err := s.ProjectBySlug(ctx, "shop")
	require.NoError(t, err)
	assert.Equal(t, "555", got.TelegramChatID)

	_, err = s.NewTelegramLinkCode(ctx, p.ID, "CODE2")
	require.NoError(t, err)
	clk.Add(61 * time.Minute)
	_, ok, err = s.LinkTelegramChat(ctx, "CODE2", "666")
	require.NoError(t, err)
	assert.False(t, ok, "a code works for an hour")

	names, err := s.UnlinkTelegramChat(ctx, "555")
	require.NoError(t, err)
	assert.Equal(t, []string{"shop"}, names)
	got, err = s.ProjectBySlug(ctx, "shop")
	require.NoError(t, err)
	assert.Empty(t, got.TelegramChatID)

	// Codes that expired over a day ago are pruned; the others stay.
	clk.Add(22 * time.Hour) // the two codes expired 22 h ago
	require.NoError(t, s.PruneAuth(ctx, store.SessionIdle))
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM telegram_link_codes`).Scan(&n))
	assert.Equal(t, 2, n)
	clk.Add(2 * time.Hour)
	_, err = s.NewTelegramLinkCode(ctx, p.ID, "CODE3")
	require.NoError(t, err)
	require.NoError(t, s.PruneAuth(ctx, store.SessionIdle))
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM telegram_link_codes`).Scan(&n))
	assert.Equal(t, 1, n, "only the fresh code")

	require.NoError(t, s.SetTelegramOffset(ctx, 10))
	require.NoError(t, s.SetTelegramOffset(ctx, 5))
	off, err := s.TelegramOffset(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 10, off, "the offset never goes back")
}
