package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

// whFixture is an account, its project and payments, inserted with SQL so
// these tests depend on the schema only.
type whFixture struct {
	pool      *pgxpool.Pool
	accountID int64
	projectID int64
	payments  int
}

func whSeed(t *testing.T, plan string, limits string) *whFixture {
	t.Helper()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	f := &whFixture{pool: pool}
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO accounts (email, plan, limits) VALUES ('owner@example.com', $1, $2::jsonb) RETURNING id`,
		plan, limits).Scan(&f.accountID))
	require.NoError(t, pool.QueryRow(ctx, `
		INSERT INTO projects (slug, name, owner_id, webhook_url, webhook_secret)
		VALUES ('shop', 'Shop', $1, 'https://hooks.example.com/pay', 'whsec_test') RETURNING id`, f.accountID).Scan(&f.projectID))
	return f
}

// payment inserts a payment: the first without external_order_id, the
// next ones with order-2, order-3 and so on.
func (f *whFixture) payment(t *testing.T) string {
	t.Helper()
	f.payments++
	var id string
	require.NoError(t, f.pool.QueryRow(context.Background(), `
		INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, external_order_id, metadata, expires_at)
		VALUES (gen_random_uuid(), $1, 'per_payment', 'ERC20', 'USDT', '0x1111111111111111111111111111111111111111', 50000000, 6,
		        'customer-1', NULLIF('order-' || $2::text, 'order-1'), '{"cart": 7}'::jsonb, now() + interval '1 hour')
		RETURNING id::text`, f.projectID, strconv.Itoa(f.payments)).Scan(&id))
	return id
}

func whEvent(paymentID string, seq int, ev paywatch.Event) store.WebhookEvent {
	return store.WebhookEvent{
		EventID:   fmt.Sprintf("00000000-0000-4000-8000-%012d", seq),
		PaymentID: paymentID,
		Event:     ev,
		Sequence:  seq,
		Payload:   json.RawMessage(fmt.Sprintf(`{"event": %q, "sequence": %d}`, ev, seq)),
	}
}

func (f *whFixture) usage(t *testing.T, day string) int64 {
	var n int64
	err := f.pool.QueryRow(context.Background(), `SELECT COALESCE(SUM(count), 0) FROM daily_usage WHERE account_id = $1 AND day = $2::date AND kind = 'webhooks'`,
		f.accountID, day).Scan(&n)
	require.NoError(t, err)
	return n
}

// Quota events count once when queued (a repeat of the same event id does
// not count), over quota they are skipped with a logged attempt,
// completed/overpaid are exempt, and counters are per UTC date.
func TestWebhookQuota(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "free", `{"webhooks_per_day": 2}`)
	now := time.Date(2025, 3, 1, 23, 59, 0, 0, time.UTC)
	s := store.New(f.pool, store.WithClock(func() time.Time { return now }))
	pay := f.payment(t)

	st, err := s.QueueWebhookEvent(ctx, whEvent(pay, 1, paywatch.EventPartial))
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, st)
	st, err = s.QueueWebhookEvent(ctx, whEvent(pay, 1, paywatch.EventPartial)) // retried queue
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, st)
	assert.EqualValues(t, 1, f.usage(t, "2025-03-01"), "a repeated queue does not count again")

	st, err = s.QueueWebhookEvent(ctx, whEvent(pay, 2, paywatch.EventPartial))
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, st)
	st, err = s.QueueWebhookEvent(ctx, whEvent(pay, 3, paywatch.EventExpired))
	require.NoError(t, err)
	assert.Equal(t, store.WebhookSkipped, st, "third quota event of the day")
	attempts, err := s.WebhookAttempts(ctx, whEvent(pay, 3, "").EventID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	assert.Equal(t, store.WebhookSkipped, attempts[0].State)

	st, err = s.QueueWebhookEvent(ctx, whEvent(pay, 4, paywatch.EventCompleted))
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, st, "completed is exempt")
	st, err = s.QueueWebhookEvent(ctx, whEvent(pay, 5, paywatch.EventOverpaid))
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, st, "overpaid is exempt")
	assert.EqualValues(t, 2, f.usage(t, "2025-03-01"))

	d, err := s.WebhookDelivery(ctx, whEvent(pay, 3, "").EventID)
	require.NoError(t, err)
	assert.Equal(t, store.WebhookSkipped, d.State)

	now = now.Add(2 * time.Minute) // 00:01 UTC: a new day
	st, err = s.QueueWebhookEvent(ctx, whEvent(pay, 6, paywatch.EventCancelled))
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, st)
	assert.EqualValues(t, 1, f.usage(t, "2025-03-02"))
}

// Concurrent quota events never exceed the limit.
func TestWebhookQuotaUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "free", `{}`) // free: 50 a day
	s := store.New(f.pool)
	pay := f.payment(t)
	var mu sync.Mutex
	counts := map[store.WebhookState]int{}
	var wg sync.WaitGroup
	for i := 1; i <= 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.QueueWebhookEvent(ctx, whEvent(pay, i, paywatch.EventPartial))
			assert.NoError(t, err)
			mu.Lock()
			counts[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, 50, counts[store.WebhookPending])
	assert.Equal(t, 10, counts[store.WebhookSkipped])
}

// Attempts are logged with status, cut body and state; the event follows.
func TestRecordWebhookAttempts(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	pay := f.payment(t)
	ev := whEvent(pay, 1, paywatch.EventCompleted)
	_, err := s.QueueWebhookEvent(ctx, ev)
	require.NoError(t, err)

	long := strings.Repeat("é", 300) + "\x00"
	require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: ev.EventID, Attempt: 1, StatusCode: 503, ResponseBody: long, State: store.WebhookRetrying}))
	require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: ev.EventID, Attempt: 1, StatusCode: 503, ResponseBody: long, State: store.WebhookRetrying})) // replayed
	require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: ev.EventID, Attempt: 2, StatusCode: 200, ResponseBody: "ok", State: store.WebhookDelivered}))

	as, err := s.WebhookAttempts(ctx, ev.EventID)
	require.NoError(t, err)
	require.Len(t, as, 2)
	assert.Equal(t, 503, as[0].StatusCode)
	assert.Equal(t, strings.Repeat("é", 256), as[0].ResponseBody)
	assert.Equal(t, store.WebhookDelivered, as[1].State)

	d, err := s.WebhookDelivery(ctx, ev.EventID)
	require.NoError(t, err)
	assert.Equal(t, store.WebhookDelivered, d.State)
	assert.Equal(t, "https://hooks.example.com/pay", d.URL)
	assert.Equal(t, "whsec_test", d.Secret)
	assert.JSONEq(t, string(ev.Payload), string(d.Payload))
}

func TestWebhookPaymentInfo(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	pay := f.payment(t)
	info, err := s.WebhookPaymentInfo(ctx, pay)
	require.NoError(t, err)
	assert.Equal(t, f.projectID, info.ProjectID)
	assert.Equal(t, "customer-1", info.ExternalRef)
	assert.Nil(t, info.ExternalOrderID)
	info2, err := s.WebhookPaymentInfo(ctx, f.payment(t))
	require.NoError(t, err)
	assert.Equal(t, "order-2", *info2.ExternalOrderID)
	assert.JSONEq(t, `{"cart": 7}`, string(info.Metadata))
	assert.False(t, info.CreatedAt.IsZero())
	assert.Nil(t, info.Link)
}

// A redelivery makes the event pending again and numbers its attempts
// after the earlier ones; a skipped event counts toward the quota then,
// even past the limit, and only once it is redelivered.
func TestPrepareRedelivery(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "free", `{"webhooks_per_day": 1}`)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := store.New(f.pool, store.WithClock(func() time.Time { return now }))
	pay := f.payment(t)

	sent := whEvent(pay, 1, paywatch.EventPartial)
	_, err := s.QueueWebhookEvent(ctx, sent)
	require.NoError(t, err)
	for n := 1; n <= 2; n++ {
		require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: sent.EventID, Attempt: n, StatusCode: 500, State: store.WebhookRetrying}))
	}
	require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: sent.EventID, Attempt: 3, StatusCode: 200, State: store.WebhookDelivered}))
	p, err := s.PrepareRedelivery(ctx, f.projectID, strings.ToUpper(sent.EventID))
	require.NoError(t, err)
	assert.Equal(t, store.PendingWebhook{EventID: sent.EventID, NextAttempt: 4, Generation: 1}, p, "canonical id, numbering continues, a new generation")
	d, err := s.WebhookDelivery(ctx, sent.EventID)
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, d.State)
	assert.EqualValues(t, 1, f.usage(t, "2025-03-01"), "a sent event does not count again")

	skipped := whEvent(pay, 2, paywatch.EventExpired)
	st, err := s.QueueWebhookEvent(ctx, skipped)
	require.NoError(t, err)
	require.Equal(t, store.WebhookSkipped, st)
	p, err = s.PrepareRedelivery(ctx, f.projectID, skipped.EventID)
	require.NoError(t, err)
	assert.Equal(t, 2, p.NextAttempt, "after the logged skip")
	assert.EqualValues(t, 2, f.usage(t, "2025-03-01"), "the skipped event counts now, past the limit")
	_, err = s.PrepareRedelivery(ctx, f.projectID, skipped.EventID)
	require.NoError(t, err)
	assert.EqualValues(t, 2, f.usage(t, "2025-03-01"), "once: it is no longer skipped")

	other := whSeed(t, "pro", `{}`)
	for _, id := range []string{"00000000-0000-4000-8000-000000000099", "not-a-uuid", "", sent.EventID + "x"} {
		_, err := s.PrepareRedelivery(ctx, f.projectID, id)
		requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgEventNotFound)
	}
	_, err = store.New(other.pool).PrepareRedelivery(ctx, other.projectID, sent.EventID)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgEventNotFound)
	_, err = s.PrepareRedelivery(ctx, f.projectID+1, sent.EventID)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgEventNotFound)
}

// A redelivery outlives the run it replaces: once accepted, the old run's
// late writes (its last attempt logged as failed after the redelivery was
// prepared, in either order and at once) never change the event's state,
// so the event stays pending, listed for the reconciler to start, until
// the redelivery's own run records. The old run's attempt is still logged
// when its number is free.
func TestRedeliveryOutlivesTheRunItReplaces(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	s := store.New(f.pool)
	pay := f.payment(t)

	// In order: the redelivery is prepared, then the old run's fifth and
	// last attempt lands as failed.
	ev := whEvent(pay, 1, paywatch.EventCompleted)
	_, err := s.QueueWebhookEvent(ctx, ev)
	require.NoError(t, err)
	for n := 1; n <= 4; n++ {
		require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: ev.EventID, Attempt: n, StatusCode: 500, State: store.WebhookRetrying}))
	}
	p, err := s.PrepareRedelivery(ctx, f.projectID, ev.EventID)
	require.NoError(t, err)
	require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: ev.EventID, Attempt: 5, StatusCode: 500, State: store.WebhookFailed}))
	d, err := s.WebhookDelivery(ctx, ev.EventID)
	require.NoError(t, err)
	assert.Equal(t, store.WebhookPending, d.State, "the redelivery is not undone by the run it replaced")
	list, err := s.PendingWebhooks(ctx, f.projectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 1, "the reconciler still starts the redelivery")
	assert.Equal(t, ev.EventID, list[0].EventID)
	assert.True(t, list[0].Replace, "never started: it replaces the old run, which may still hold the workflow ID")
	require.NoError(t, s.MarkWebhookStarted(ctx, ev.EventID, p.Generation))
	list, err = s.PendingWebhooks(ctx, f.projectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.False(t, list[0].Replace, "started: a run of its generation is kept")
	as, err := s.WebhookAttempts(ctx, ev.EventID)
	require.NoError(t, err)
	require.Len(t, as, 5, "the old run's last attempt is logged")
	assert.Equal(t, store.WebhookFailed, as[4].State)

	// The redelivery's run takes the number the old run's write could not:
	// its first attempt, numbered before that write landed, overwrites it.
	require.NoError(t, s.RecordWebhookAttempt(ctx, redeliveryAttempt(p, p.NextAttempt, 200, store.WebhookDelivered)))
	d, err = s.WebhookDelivery(ctx, ev.EventID)
	require.NoError(t, err)
	assert.Equal(t, store.WebhookDelivered, d.State)

	// At once, many times: whichever lands first, the event ends pending.
	for i := range 20 {
		ev := whEvent(pay, 100+i, paywatch.EventCompleted)
		_, err := s.QueueWebhookEvent(ctx, ev)
		require.NoError(t, err)
		require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: ev.EventID, Attempt: 1, StatusCode: 500, State: store.WebhookRetrying}))
		var wg sync.WaitGroup
		wg.Add(2)
		var prepErr, recErr error
		go func() {
			defer wg.Done()
			_, prepErr = s.PrepareRedelivery(ctx, f.projectID, ev.EventID)
		}()
		go func() {
			defer wg.Done()
			recErr = s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: ev.EventID, Attempt: 2, StatusCode: 410, State: store.WebhookFailed})
		}()
		wg.Wait()
		require.NoError(t, prepErr)
		require.NoError(t, recErr)
		d, err := s.WebhookDelivery(ctx, ev.EventID)
		require.NoError(t, err)
		assert.Equal(t, store.WebhookPending, d.State, "round %d", i)
	}
}

// Pending events are listed for delivery only while their project has a
// webhook URL, oldest first, leaving out those changed within minAge.
func TestPendingWebhooks(t *testing.T) {
	ctx := context.Background()
	f := whSeed(t, "pro", `{}`)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := store.New(f.pool, store.WithClock(func() time.Time { return now }))
	pay := f.payment(t)
	a, b, c := whEvent(pay, 1, paywatch.EventPartial), whEvent(pay, 2, paywatch.EventPartial), whEvent(pay, 3, paywatch.EventCompleted)
	for _, ev := range []store.WebhookEvent{a, b, c} {
		_, err := s.QueueWebhookEvent(ctx, ev)
		require.NoError(t, err)
		now = now.Add(time.Second)
	}
	require.NoError(t, s.RecordWebhookAttempt(ctx, store.WebhookAttempt{EventID: b.EventID, Attempt: 1, StatusCode: 200, State: store.WebhookDelivered}))

	list, err := s.PendingWebhooks(ctx, f.projectID, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []store.PendingWebhook{{EventID: a.EventID, NextAttempt: 1}, {EventID: c.EventID, NextAttempt: 1}}, list)
	list, err = s.PendingWebhooks(ctx, 0, 2*time.Second, 10)
	require.NoError(t, err)
	assert.Equal(t, []store.PendingWebhook{{EventID: a.EventID, NextAttempt: 1}}, list, "c changed a second ago")
	// The first delivery of a payment's event is left to its payment run
	// for paymentMinAge (a lean run makes the first attempt itself).
	list, err = s.PendingWebhooksAged(ctx, 0, 0, 3*time.Second, 10)
	require.NoError(t, err)
	assert.Equal(t, []store.PendingWebhook{{EventID: a.EventID, NextAttempt: 1}}, list, "c was queued 1 s ago, a 3 s ago")
	list, err = s.PendingWebhooksAged(ctx, 0, 0, time.Hour, 10)
	require.NoError(t, err)
	assert.Empty(t, list, "both younger than an hour")
	list, err = s.PendingWebhooks(ctx, f.projectID+1, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, list)

	_, err = f.pool.Exec(ctx, `UPDATE projects SET webhook_url = NULL`)
	require.NoError(t, err)
	list, err = s.PendingWebhooks(ctx, 0, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, list, "no URL: nothing to deliver yet")
}

// Migration 00009 puts back in the queue the events the earlier delivery
// code ended wrongly: one failed only for want of a webhook URL, and one
// left retrying long after its last attempt. A real failure, a recent
// retry and a delivered event stay as they are.
func TestWebhookRepairMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolAt(t, 8)
	ev := func(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", n) }
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (id, slug, name) VALUES (1, 'old', 'Old')`, nil},
		{`INSERT INTO payments (id, project_id, address_mode, amount, decimals, external_ref, expires_at)
		  VALUES ('10000000-0000-4000-8000-000000000001', 1, 'per_payment', 10, 6, 'r', now())`, nil},
		{`INSERT INTO webhook_events (event_id, project_id, payment_id, event, sequence, payload, state, created_at) VALUES
		  ($1, 1, '10000000-0000-4000-8000-000000000001', 'payment.cancelled', 1, '{}', 'failed', now() - interval '3 days'),
		  ($2, 1, '10000000-0000-4000-8000-000000000001', 'payment.expired', 2, '{}', 'failed', now() - interval '3 days'),
		  ($3, 1, '10000000-0000-4000-8000-000000000001', 'payment.partial', 3, '{}', 'retrying', now() - interval '3 hours'),
		  ($4, 1, '10000000-0000-4000-8000-000000000001', 'payment.partial', 4, '{}', 'retrying', now() - interval '3 hours'),
		  ($5, 1, '10000000-0000-4000-8000-000000000001', 'payment.completed', 5, '{}', 'delivered', now() - interval '3 hours')`,
			[]any{ev(1), ev(2), ev(3), ev(4), ev(5)}},
		{`INSERT INTO webhook_attempts (event_id, attempt, status_code, response_body, state, created_at) VALUES
		  ($1, 1, NULL, 'project has no webhook URL', 'failed', now() - interval '3 days'),
		  ($2, 1, 400, 'bad request', 'failed', now() - interval '3 days'),
		  ($3, 1, 503, 'busy', 'retrying', now() - interval '3 hours'),
		  ($4, 1, 503, 'busy', 'retrying', now() - interval '3 hours'),
		  ($4, 2, 503, 'busy', 'retrying', now() - interval '1 hour'),
		  ($5, 1, 200, 'ok', 'delivered', now() - interval '3 hours')`,
			[]any{ev(1), ev(2), ev(3), ev(4), ev(5)}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err)
	}
	_, err := store.Migrate(ctx, pool)
	require.NoError(t, err)

	var got []string
	rows, err := pool.Query(ctx, `SELECT state FROM webhook_events ORDER BY sequence`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		got = append(got, s)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"pending", "failed", "pending", "retrying", "delivered"}, got)

	// The reconciler's query picks the requeued events once the project
	// has a URL, each continuing its attempts' numbering.
	_, err = pool.Exec(ctx, `UPDATE projects SET webhook_url = 'https://merchant.example/hooks'`)
	require.NoError(t, err)
	pending, err := store.New(pool).PendingWebhooks(ctx, 0, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []store.PendingWebhook{{EventID: ev(1), NextAttempt: 2}, {EventID: ev(3), NextAttempt: 2}}, pending)
}

// redeliveryAttempt is attempt n of the run a redelivery p started.
func redeliveryAttempt(p store.PendingWebhook, n, code int, st store.WebhookState) store.WebhookAttempt {
	return store.WebhookAttempt{EventID: p.EventID, Attempt: n, StatusCode: code, State: st, Generation: p.Generation}
}
