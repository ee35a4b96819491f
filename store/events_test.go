package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// The event log lists a project's events newest first with each one's
// delivery state, its attempts (a quota skip is none; a redelivery adds
// to the first delivery's) and its payload; every filter and the
// pagination total apply, and another project's events never show.
func TestListEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := whSeed(t, "pro", `{"webhooks_per_day": 1}`)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := store.New(f.pool, store.WithClock(func() time.Time { return now }))
	p1, p2 := f.payment(t), f.payment(t)
	queued := 0
	queue := func(pay string, seq int, ev paywatch.Event) string {
		queued++
		e := whEvent(pay, seq, ev)
		e.EventID = fmt.Sprintf("00000000-0000-4000-8000-%012d", queued)
		_, err := s.QueueWebhookEvent(ctx, e)
		require.NoError(t, err)
		return e.EventID
	}
	generation := 0 // of the delivery that makes the next attempts
	attempt := func(id string, n int, code int, st store.WebhookState) {
		require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{
			EventID: id, Attempt: n, StatusCode: code, ResponseBody: "x", State: st, Generation: generation,
		}))
	}

	// 12:00 p1 partial: counted, then its receiver is down for all 5 attempts.
	failed := queue(p1, 1, paywatch.EventPartial)
	for n := 1; n < 5; n++ {
		attempt(failed, n, 503, store.WebhookRetrying)
	}
	attempt(failed, 5, 503, store.WebhookFailed)
	// 12:01 p2 expired: over the quota of 1, skipped.
	now = now.Add(time.Minute)
	skipped := queue(p2, 1, paywatch.EventExpired)
	// 12:02 p1 completed, delivered at once, then sent again and failing.
	now = now.Add(time.Minute)
	again := queue(p1, 2, paywatch.EventCompleted)
	attempt(again, 1, 200, store.WebhookDelivered)
	// 12:02 too: p1 overpaid, still waiting for its first attempt.
	pending := queue(p1, 3, paywatch.EventOverpaid)
	now = now.Add(time.Minute)
	red, err := s.PrepareRedelivery(ctx, f.projectID, again)
	require.NoError(t, err)
	require.Equal(t, 2, red.NextAttempt)
	generation = red.Generation // the redelivery's run makes the attempt
	attempt(again, 2, 500, store.WebhookRetrying)

	// Another project's event is never listed.
	var otherProject int64
	require.NoError(t, f.pool.QueryRow(ctx, `INSERT INTO projects (slug, name) VALUES ('other', 'Other') RETURNING id`).Scan(&otherProject))
	_, err = f.pool.Exec(ctx, `
		INSERT INTO payments (id, project_id, address_mode, amount, decimals, external_ref, expires_at)
		VALUES ('10000000-0000-4000-8000-000000000009', $1, 'per_payment', 10, 6, 'r', now())`, otherProject)
	require.NoError(t, err)
	queue("10000000-0000-4000-8000-000000000009", 1, paywatch.EventCancelled)

	list := func(ef store.EventFilter) ([]string, int) {
		t.Helper()
		if ef.Limit == 0 {
			ef.Limit = 20
		}
		evs, total, err := s.ListEvents(ctx, f.projectID, ef)
		require.NoError(t, err)
		var got []string
		for _, ev := range evs {
			got = append(got, fmt.Sprintf("%s %s %d", ev.EventID, ev.State, ev.Attempts))
		}
		return got, total
	}
	all, total := list(store.EventFilter{})
	assert.Equal(t, []string{
		pending + " pending 0", // same instant as `again`: the higher sequence first
		again + " retrying 2",  // the redelivery's state; both deliveries' attempts
		skipped + " skipped 0", // the quota skip sent nothing
		failed + " failed 5",
	}, all)
	assert.Equal(t, 4, total)

	evs, _, err := s.ListEvents(ctx, f.projectID, store.EventFilter{Limit: 1, Offset: 3})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, store.Event{
		EventID: failed, Event: paywatch.EventPartial, PaymentID: p1, Sequence: 1,
		CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), State: store.WebhookFailed, Attempts: 5,
		Payload: []byte(`{"event": "payment.partial", "sequence": 1}`),
	}, evs[0])

	page, total := list(store.EventFilter{Limit: 2, Offset: 1})
	assert.Equal(t, all[1:3], page)
	assert.Equal(t, 4, total, "the total ignores the page")
	page, total = list(store.EventFilter{Limit: 2, Offset: 4})
	assert.Empty(t, page)
	assert.Equal(t, 4, total)

	page, total = list(store.EventFilter{PaymentID: &p2})
	assert.Equal(t, []string{skipped + " skipped 0"}, page)
	assert.Equal(t, 1, total)
	for _, id := range []string{"10000000-0000-4000-8000-000000000009", "not-a-uuid", ""} {
		page, total = list(store.EventFilter{PaymentID: &id})
		assert.Empty(t, page, "payment %q", id)
		assert.Zero(t, total)
	}

	after := time.Date(2025, 3, 1, 12, 1, 0, 0, time.UTC)
	page, _ = list(store.EventFilter{CreatedAfter: &after})
	assert.Equal(t, all[:2], page, "strictly after")

	st := store.WebhookFailed
	page, total = list(store.EventFilter{State: &st})
	assert.Equal(t, []string{failed + " failed 5"}, page)
	assert.Equal(t, 1, total)
	st = store.WebhookSkipped
	page, _ = list(store.EventFilter{State: &st, PaymentID: &p1})
	assert.Empty(t, page, "filters combine")
}
