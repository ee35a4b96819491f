package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

const secret = "whsec_test_secret"

// receiver is a real HTTP webhook receiver that verifies signatures with
// the domain verifier and answers what the test scripts.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	bodies [][]byte
	// answer returns the status code of the n-th request (from 1); a
	// negative code sleeps that many milliseconds and then answers 200.
	answer func(n int) int
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{t: t, secret: secret, answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		sec := r.secret
		r.mu.Unlock()
		body, err := paywatch.VerifyWebhookRequest(sec, req, time.Now())
		if err != nil {
			http.Error(w, "bad signature: "+err.Error(), http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		n := len(r.bodies)
		r.mu.Unlock()
		code := r.answer(n)
		if code < 0 {
			time.Sleep(time.Duration(-code) * time.Millisecond)
			code = http.StatusOK
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "answer "+strconv.Itoa(code))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// fixture is a project (owned by an account) with one payment, inserted
// with SQL.
type fixture struct {
	pool      *pgxpool.Pool
	store     *store.Store
	accountID int64
	projectID int64
	paymentID string
}

func newFixture(t *testing.T, webhookURL, limits string) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{pool: storetest.NewPool(t)}
	f.store = store.New(f.pool)
	require.NoError(t, f.pool.QueryRow(ctx, `INSERT INTO accounts (email, plan, limits) VALUES ('owner@example.com', 'free', $1::jsonb) RETURNING id`, limits).Scan(&f.accountID))
	require.NoError(t, f.pool.QueryRow(ctx, `
		INSERT INTO projects (slug, name, owner_id, webhook_url, webhook_secret) VALUES ('shop', 'Shop', $1, $2, $3) RETURNING id`,
		f.accountID, webhookURL, secret).Scan(&f.projectID))
	require.NoError(t, f.pool.QueryRow(ctx, `
		INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, metadata, expires_at, created_at)
		VALUES (gen_random_uuid(), $1, 'per_payment', 'ERC20', 'USDT', '0x1111111111111111111111111111111111111111', 50000000, 6,
		        'customer-1', '{"cart": 7}'::jsonb, '2025-03-01T13:00:00Z', '2025-03-01T12:00:00Z')
		RETURNING id::text`, f.projectID).Scan(&f.paymentID))
	return f
}

func (f *fixture) state() workflows.PaymentState {
	paidAt := time.Date(2025, 3, 1, 12, 3, 0, 0, time.UTC)
	return workflows.PaymentState{
		PaymentID: f.paymentID, Status: paywatch.StatusPaid, Network: paywatch.ERC20, Token: paywatch.USDT,
		Address: "0x1111111111111111111111111111111111111111", Amount: paywatch.MustParseAmount("50", 6),
		PaidAmount: paywatch.MustParseAmount("50.5", 6), TxHash: "0xabc", PaidAt: &paidAt,
		ExpiresAt:    time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC),
		Transactions: []workflows.Transaction{{TxHash: "0xabc", From: "0xfrom", Amount: paywatch.MustParseAmount("50.5", 6), Confirmations: 12, Confirmed: true}},
	}
}

// deliverWorkflow runs the delivery activity with the payment workflow's
// own options and retry policy.
func deliverWorkflow(ctx workflow.Context, eventID string) error {
	ctx = workflow.WithActivityOptions(ctx, workflows.WebhookActivityOptions)
	return workflow.ExecuteActivity(ctx, workflows.ActivityDeliverWebhook, workflows.DeliverWebhookInput{EventID: eventID}).Get(ctx, nil)
}

type deliverRun struct {
	err     error
	elapsed time.Duration // on the test environment's clock
}

// queueAndDeliver queues an event through the real activity and delivers it
// in the SDK's test environment, whose clock skips the retry delays.
func queueAndDeliver(t *testing.T, f *fixture, acts *activities.Activities, ev paywatch.Event, seq int) (string, deliverRun) {
	t.Helper()
	eventID := workflows.EventID(f.paymentID, seq)
	res, err := acts.QueueWebhook(context.Background(), workflows.QueueWebhookInput{EventID: eventID, Sequence: seq, Event: ev, State: f.state()})
	require.NoError(t, err)
	require.False(t, res.Skipped)
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	workflows.Register(env, acts)
	env.RegisterWorkflowWithOptions(deliverWorkflow, workflow.RegisterOptions{Name: "deliver-test"})
	start := env.Now()
	env.ExecuteWorkflow("deliver-test", eventID)
	require.True(t, env.IsWorkflowCompleted())
	return eventID, deliverRun{err: env.GetWorkflowError(), elapsed: env.Now().Sub(start)}
}

func newActivities(f *fixture, allowPrivate bool, timeout time.Duration) *activities.Activities {
	return activities.New(activities.Deps{
		Store:        f.store,
		HTTPClient:   activities.NewWebhookClient(timeout, allowPrivate),
		AllowPrivate: allowPrivate,
	})
}

func attempts(t *testing.T, f *fixture, eventID string) []store.WebhookAttempt {
	as, err := f.store.WebhookAttempts(context.Background(), eventID)
	require.NoError(t, err)
	return as
}

func states(as []store.WebhookAttempt) []store.WebhookState {
	var out []store.WebhookState
	for _, a := range as {
		out = append(out, a.State)
	}
	return out
}

// A delivered webhook is signed with the project's secret (the receiver
// verifies it with paywatch.VerifyWebhookRequest) and carries exactly the
// payload fields of operations.md §3.
func TestWebhookSignedAndDelivered(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	f := newFixture(t, r.srv.URL+"/hooks", `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, true, time.Second), paywatch.EventOverpaid, 1)
	require.NoError(t, run.err)
	require.Equal(t, 1, r.count())

	var payload map[string]any
	require.NoError(t, json.Unmarshal(r.bodies[0], &payload))
	var keys []string
	for k := range payload {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{"address", "amount", "created_at", "event", "event_id", "expected_amount", "expires_at",
		"external_order_id", "external_ref", "late_payment", "metadata", "network", "paid_amount", "paid_at",
		"payment_id", "sequence", "status", "token", "transactions", "tx_hash"}, keys)
	assert.Equal(t, "payment.overpaid", payload["event"])
	assert.Equal(t, eventID, payload["event_id"])
	assert.EqualValues(t, 1, payload["sequence"])
	assert.Equal(t, "50.00", payload["amount"])
	assert.Equal(t, "50.00", payload["expected_amount"])
	assert.Equal(t, "50.50", payload["paid_amount"])
	assert.Nil(t, payload["external_order_id"])
	assert.Equal(t, map[string]any{"cart": float64(7)}, payload["metadata"])
	assert.Equal(t, false, payload["late_payment"])
	assert.Equal(t, "2025-03-01T12:00:00Z", payload["created_at"])
	assert.Equal(t, []any{map[string]any{"tx_hash": "0xabc", "amount": "50.50", "from": "0xfrom", "confirmed": true, "confirmations": float64(12)}},
		payload["transactions"])

	as := attempts(t, f, eventID)
	require.Len(t, as, 1)
	assert.Equal(t, store.WebhookDelivered, as[0].State)
	assert.Equal(t, 200, as[0].StatusCode)
	assert.Equal(t, "answer 200", as[0].ResponseBody)
}

// 5xx answers are retried on the schedule (attempts at 0 s, 10 s, 60 s)
// until one is delivered; the event id and body stay the same.
func TestWebhook5xxRetriedThenDelivered(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		if n < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	f := newFixture(t, r.srv.URL, `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, true, time.Second), paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookRetrying, store.WebhookDelivered}, states(attempts(t, f, eventID)))
	assert.Equal(t, 503, attempts(t, f, eventID)[0].StatusCode)
	assert.InDelta(t, time.Minute.Seconds(), run.elapsed.Seconds(), 1, "third attempt at 60 s")
	assert.Equal(t, r.bodies[0], r.bodies[2])
}

// Five failed attempts in all, at 0 s, 10 s, 60 s, 5 min and 30 min; the
// last one is marked failed.
func TestWebhookGivesUpAfterFiveAttempts(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusInternalServerError })
	f := newFixture(t, r.srv.URL, `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, true, time.Second), paywatch.EventCompleted, 1)
	var app *temporal.ApplicationError
	require.True(t, errors.As(run.err, &app))
	assert.Equal(t, 5, r.count())
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying, store.WebhookFailed},
		states(attempts(t, f, eventID)))
	assert.InDelta(t, (30 * time.Minute).Seconds(), run.elapsed.Seconds(), 1)
}

// A 4xx answer is a permanent failure: not retried.
func TestWebhook4xxNotRetried(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusGone })
	f := newFixture(t, r.srv.URL, `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, true, time.Second), paywatch.EventCompleted, 1)
	require.Error(t, run.err)
	assert.Equal(t, 1, r.count())
	as := attempts(t, f, eventID)
	require.Len(t, as, 1)
	assert.Equal(t, store.WebhookFailed, as[0].State)
	assert.Equal(t, 410, as[0].StatusCode)
}

// A receiver that does not answer in time is retried (the test injects a
// 200 ms timeout instead of 10 s).
func TestWebhookTimeoutRetried(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			return -600 // answers after 600 ms: too late
		}
		return http.StatusOK
	})
	f := newFixture(t, r.srv.URL, `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, true, 200*time.Millisecond), paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	as := attempts(t, f, eventID)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookDelivered}, states(as))
	assert.Equal(t, 0, as[0].StatusCode)
	assert.Contains(t, as[0].ResponseBody, "Timeout")
}

// A URL on a private address is refused before any request unless
// private addresses are allowed (httptest listens on 127.0.0.1).
func TestWebhookPrivateAddressRefused(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	f := newFixture(t, r.srv.URL, `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, false, time.Second), paywatch.EventCompleted, 1)
	require.Error(t, run.err)
	assert.Equal(t, 0, r.count())
	as := attempts(t, f, eventID)
	require.Len(t, as, 1)
	assert.Equal(t, store.WebhookFailed, as[0].State)
	assert.Contains(t, as[0].ResponseBody, "private or reserved")
}

// The secret is read at every attempt: after a regeneration the next
// attempt is signed with the new secret.
func TestWebhookUsesCurrentSecret(t *testing.T) {
	var f *fixture
	var r *receiver
	r = newReceiver(t, func(n int) int {
		if n == 1 {
			_, err := f.pool.Exec(context.Background(), `UPDATE projects SET webhook_secret = 'whsec_new'`)
			assert.NoError(t, err)
			r.mu.Lock()
			r.secret = "whsec_new" // the merchant updates the receiver too
			r.mu.Unlock()
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	f = newFixture(t, r.srv.URL, `{}`)
	_, run := queueAndDeliver(t, f, newActivities(f, true, time.Second), paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, 2, r.count(), "the second attempt verified with the new secret")
}

// Webhooks are never sent unsigned: without a secret nothing is sent.
func TestWebhookWithoutSecretIsNotSent(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	f := newFixture(t, r.srv.URL, `{}`)
	_, err := f.pool.Exec(context.Background(), `UPDATE projects SET webhook_secret = NULL`)
	require.NoError(t, err)
	eventID, run := queueAndDeliver(t, f, newActivities(f, true, time.Second), paywatch.EventCompleted, 1)
	require.Error(t, run.err)
	assert.Equal(t, 0, r.count())
	assert.Equal(t, []store.WebhookState{store.WebhookFailed}, states(attempts(t, f, eventID)))
}

// Over the daily quota, a payment.expired is skipped and never sent, while
// payment.completed still is.
func TestWebhookQuotaSkipping(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	f := newFixture(t, r.srv.URL, `{"webhooks_per_day": 1}`)
	acts := newActivities(f, true, time.Second)
	ctx := context.Background()
	_, run := queueAndDeliver(t, f, acts, paywatch.EventPartial, 1)
	require.NoError(t, run.err)

	st := f.state()
	st.Status = paywatch.StatusExpired
	skippedID := workflows.EventID(f.paymentID, 2)
	res, err := acts.QueueWebhook(ctx, workflows.QueueWebhookInput{EventID: skippedID, Sequence: 2, Event: paywatch.EventExpired, State: st})
	require.NoError(t, err)
	assert.True(t, res.Skipped)
	// Even if asked, a skipped event is not sent.
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	workflows.Register(env, acts)
	env.RegisterWorkflowWithOptions(deliverWorkflow, workflow.RegisterOptions{Name: "deliver-test"})
	env.ExecuteWorkflow("deliver-test", skippedID)
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, 1, r.count())
	assert.Equal(t, []store.WebhookState{store.WebhookSkipped}, states(attempts(t, f, skippedID)))

	_, run = queueAndDeliver(t, f, acts, paywatch.EventCompleted, 3)
	require.NoError(t, run.err)
	assert.Equal(t, 2, r.count(), "completed is exempt")
}

// The delivery URL check happens before every attempt: a URL changed to a
// private address after queueing is refused.
func TestWebhookURLCheckedBeforeEveryAttempt(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	u, _ := url.Parse(r.srv.URL)
	f := newFixture(t, "http://192.168.1.10:"+u.Port()+"/x", `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, false, time.Second), paywatch.EventCompleted, 1)
	require.Error(t, run.err)
	assert.Equal(t, []store.WebhookState{store.WebhookFailed}, states(attempts(t, f, eventID)))
}
