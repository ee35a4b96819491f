package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// hookReceiver is a merchant's webhook endpoint: it verifies every
// delivery with the secret it currently holds, as a receiver must, and
// keeps the bodies it accepted.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	bodies [][]byte
	denied int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		body, err := paywatch.VerifyWebhookRequest(r.secret, req, time.Now())
		if err != nil {
			r.denied++
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		r.bodies = append(r.bodies, body)
		checkWebhookPayload(t, body)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) setSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = s
}

// waitBodies waits until n deliveries were accepted and returns them.
func (r *hookReceiver) waitBodies(t *testing.T, n int) [][]byte {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.bodies) >= n
	}, 20*time.Second, 50*time.Millisecond, "%d deliveries", n)
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Zero(t, r.denied, "every delivery verified")
	return append([][]byte(nil), r.bodies...)
}

func (r *hookReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// hookMerchant creates an owner account (with the given limit overrides),
// a project with an HD wallet and settings, and returns its API key and
// webhook secret.
func (e *env) hookMerchant(slug string, limits map[string]any, settings map[string]any) (key, secret string) {
	e.t.Helper()
	email := slug + "@example.com"
	r := e.op("POST", "/v1/accounts", map[string]any{"email": email, "plan": "pro", "limits": limits})
	require.Equal(e.t, http.StatusCreated, r.Code, r.Raw)
	body := map[string]any{"name": "Shop " + slug, "slug": slug, "owner_email": email}
	for k, v := range settings {
		body[k] = v
	}
	r = e.op("POST", "/v1/projects", body)
	require.Equal(e.t, http.StatusCreated, r.Code, r.Raw)
	key, secret = r.str("api_key"), r.str("webhook_secret")
	wallet := hdWallet()
	if slug != "shop" {
		wallet = otherHDWallet()
	}
	require.Equal(e.t, http.StatusOK, e.op("PUT", "/v1/projects/"+slug+"/wallet", wallet).Code)
	return key, secret
}

// cancelledPayment creates a payment and cancels it, which raises a
// payment.cancelled event, and waits for its workflow to end.
func (e *env) cancelledPayment(key string) string {
	e.t.Helper()
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	require.Equal(e.t, http.StatusCreated, r.Code, r.Raw)
	id := r.str("payment.id")
	c := e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"})
	require.Equal(e.t, http.StatusOK, c.Code, c.Raw)
	require.Eventually(e.t, func() bool { return workflowClosedNow(e.t, id) }, 20*time.Second, 50*time.Millisecond)
	return id
}

// event returns the payment's one webhook event and its state.
func (e *env) event(paymentID string) (eventID, state string) {
	e.t.Helper()
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(),
		`SELECT event_id::text, state FROM webhook_events WHERE payment_id = $1`, paymentID).Scan(&eventID, &state))
	return eventID, state
}

func (e *env) eventState(t *testing.T, eventID string) string {
	var state string
	require.NoError(t, e.store.Pool().QueryRow(context.Background(),
		`SELECT state FROM webhook_events WHERE event_id = $1`, eventID).Scan(&state))
	return state
}

// An event raised while the project has no webhook URL waits, pending,
// after its payment's workflow has ended, and is delivered once an
// operator saves a URL.
func TestWebhookPendingUntilURLIsSet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	key, secret := e.hookMerchant("shop", nil, nil)
	recv := newHookReceiver(t)
	recv.setSecret(secret)

	id := e.cancelledPayment(key)
	eventID, state := e.event(id)
	assert.Equal(t, "pending", state, "kept, not failed")
	assert.Zero(t, recv.count())
	d := e.op("GET", "/v1/projects/shop/webhook-deliveries", nil)
	require.Equal(t, http.StatusOK, d.Code, d.Raw)
	assert.Empty(t, d.Body["deliveries"], "nothing was tried: not shown as retrying while no URL is set")

	r := e.op("PATCH", "/v1/projects/shop", map[string]any{"webhook_url": recv.srv.URL + "/hooks"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	bodies := recv.waitBodies(t, 1)
	var payload map[string]any
	require.NoError(t, json.Unmarshal(bodies[0], &payload))
	assert.Equal(t, "payment.cancelled", payload["event"])
	assert.Equal(t, eventID, payload["event_id"])
	assert.Equal(t, id, payload["payment_id"])
	require.Eventually(t, func() bool { return e.eventState(t, eventID) == "delivered" }, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, 1, recv.count())
}

// An operator sends an event again: same event_id and payload, signed with
// the current secret, logged as the next attempt; another project's event
// and unknown ones are "Event not found".
func TestRedeliverWebhookEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newHookReceiver(t)
	key, secret := e.hookMerchant("shop", nil, map[string]any{"webhook_url": recv.srv.URL})
	recv.setSecret(secret)
	e.hookMerchant("other", nil, nil)

	id := e.cancelledPayment(key)
	first := recv.waitBodies(t, 1)[0]
	eventID, _ := e.event(id)
	require.Eventually(t, func() bool { return e.eventState(t, eventID) == "delivered" }, 10*time.Second, 50*time.Millisecond)

	// The keys are regenerated: the redelivery is signed with the new secret.
	r := e.op("POST", "/v1/projects/shop/regenerate-keys", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	recv.setSecret(r.str("webhook_secret"))

	path := "/v1/projects/shop/webhook-events/" + eventID + "/redeliver"
	r = e.op("POST", path, nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	assert.Equal(t, map[string]any{"success": true}, r.Body)
	again := recv.waitBodies(t, 2)[1]
	assert.Equal(t, string(first), string(again), "same event_id and payload")

	// Both deliveries are in the log, the redelivery as attempt 2.
	require.Eventually(t, func() bool {
		d := e.op("GET", "/v1/projects/shop/webhook-deliveries", nil)
		list, _ := d.Body["deliveries"].([]any)
		return len(list) == 2
	}, 10*time.Second, 50*time.Millisecond)
	d := e.op("GET", "/v1/projects/shop/webhook-deliveries", nil)
	var got []string
	for _, item := range d.Body["deliveries"].([]any) {
		m := item.(map[string]any)
		assert.Equal(t, eventID, m["event_id"])
		got = append(got, m["attempt"].(jsonNumber).String()+" "+m["state"].(string))
	}
	assert.Equal(t, []string{"2 delivered", "1 delivered"}, got)

	requireError(t, e.op("POST", "/v1/projects/other/webhook-events/"+eventID+"/redeliver", nil), http.StatusNotFound, "Event not found")
	requireError(t, e.op("POST", "/v1/projects/shop/webhook-events/00000000-0000-4000-8000-000000000001/redeliver", nil), http.StatusNotFound, "Event not found")
	requireError(t, e.op("POST", "/v1/projects/shop/webhook-events/not-an-id/redeliver", nil), http.StatusNotFound, "Event not found")
	requireError(t, e.op("POST", "/v1/projects/nope/webhook-events/"+eventID+"/redeliver", nil), http.StatusNotFound, "Project not found")
	requireError(t, e.do(request{method: "POST", path: path}), http.StatusUnauthorized, "Invalid master key")
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, 2, recv.count(), "refused redeliveries send nothing")
}

// A skipped event (daily quota) is sent when redelivered, and counts toward
// the quota then.
func TestRedeliverSkippedEventCountsTowardQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newHookReceiver(t)
	key, secret := e.hookMerchant("shop", map[string]any{"webhooks_per_day": 0}, map[string]any{"webhook_url": recv.srv.URL})
	recv.setSecret(secret)

	id := e.cancelledPayment(key)
	eventID, state := e.event(id)
	require.Equal(t, "skipped", state)
	usage := func() int64 {
		var n int64
		require.NoError(t, e.store.Pool().QueryRow(context.Background(),
			`SELECT COALESCE(SUM(count), 0) FROM daily_usage WHERE kind = 'webhooks'`).Scan(&n))
		return n
	}
	assert.Zero(t, usage())

	r := e.op("POST", "/v1/projects/shop/webhook-events/"+eventID+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	var payload map[string]any
	require.NoError(t, json.Unmarshal(recv.waitBodies(t, 1)[0], &payload))
	assert.Equal(t, eventID, payload["event_id"])
	assert.EqualValues(t, 1, usage())
	require.Eventually(t, func() bool { return e.eventState(t, eventID) == "delivered" }, 10*time.Second, 50*time.Millisecond)
}

// Pending events whose delivery no process started (the URL was saved, or
// a redelivery asked for, by a process that died or had no Temporal) are
// started by the reconciler.
func TestReconcilerDeliversPendingWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	key, secret := e.hookMerchant("shop", nil, nil)
	recv := newHookReceiver(t)
	recv.setSecret(secret)
	id := e.cancelledPayment(key)
	eventID, _ := e.event(id)
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE projects SET webhook_url = $1`, recv.srv.URL)
	require.NoError(t, err)

	rec := e.server.Reconciler()
	rec.MinAge = time.Second
	n, err := rec.Webhooks(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "too fresh: its own workflow may still deliver it")
	e.clock.Add(2 * time.Second)
	n, err = rec.Webhooks(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	recv.waitBodies(t, 1)
	require.Eventually(t, func() bool { return e.eventState(t, eventID) == "delivered" }, 10*time.Second, 50*time.Millisecond)

	// A replica without a workflow client accepts a redelivery and leaves
	// it pending; the reconciler sends it.
	blind := newEnvSharing(t, e)
	r := blind.op("POST", "/v1/projects/shop/webhook-events/"+eventID+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	assert.Equal(t, "pending", e.eventState(t, eventID))
	e.clock.Add(2 * time.Second)
	n, err = rec.Webhooks(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	// The first delivery's run may still be closing when this pass starts
	// the event: it is then kept, and the event stays pending for the next
	// pass, as the reconciler runs every few seconds.
	require.Eventually(t, func() bool {
		if recv.count() >= 2 {
			return true
		}
		_, err := rec.Webhooks(context.Background())
		return err == nil && recv.count() >= 2
	}, 20*time.Second, 500*time.Millisecond)
	recv.waitBodies(t, 2)
	require.Eventually(t, func() bool { return e.eventState(t, eventID) == "delivered" }, 10*time.Second, 50*time.Millisecond)
	var attempts []int
	rows, err := e.store.Pool().Query(context.Background(), `SELECT attempt FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`, eventID)
	require.NoError(t, err)
	for rows.Next() {
		var a int
		require.NoError(t, rows.Scan(&a))
		attempts = append(attempts, a)
	}
	assert.Equal(t, []int{1, 2}, attempts)
}
