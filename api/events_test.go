package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
)

// The package's Temporal server runs real timers, and a receiver down for
// the whole retry schedule (0 s, 10 s, 1 min, 5 min, 30 min) would keep a
// test waiting for more than half an hour. This test binary runs the
// webhook workflow on the same schedule at 1/1800 of its length (the last
// attempt 1 s after the first). It is set before TestMain starts any
// worker, so no workflow sees it change; no other test of the package
// depends on the gaps between attempts.
func init() {
	for i := range workflows.WebhookSchedule {
		workflows.WebhookSchedule[i] /= 1800
	}
}

// listEvents calls GET /v1/events with the query and requires a 200.
func (e *env) listEvents(key, query string) response {
	e.t.Helper()
	r := e.call(key, "GET", "/v1/events"+query, nil)
	require.Equal(e.t, http.StatusOK, r.Code, r.Raw)
	require.Equal(e.t, true, r.Body["success"], r.Raw)
	return r
}

// events returns the items of a GET /v1/events answer.
func (r response) events() []map[string]any {
	var out []map[string]any
	for _, item := range r.Body["events"].([]any) {
		out = append(out, item.(map[string]any))
	}
	return out
}

// eventIDs returns the event_id of each item, in order.
func (r response) eventIDs() []string {
	out := []string{}
	for _, ev := range r.events() {
		out = append(out, ev["event_id"].(string))
	}
	return out
}

// pagination returns the pagination object of a GET /v1/events answer.
func (r response) pagination() map[string]any {
	return r.Body["pagination"].(map[string]any)
}

func requirePagination(t *testing.T, r response, limit, offset, total int, more bool) {
	t.Helper()
	assert.Equal(t, map[string]any{
		"limit": num(limit), "offset": num(offset), "total": num(total), "has_more": more,
	}, r.pagination(), r.Raw)
}

// num is n as a decoded body holds it.
func num(n int) jsonNumber { return jsonNumber(strconv.Itoa(n)) }

// payloadJSON is an item's payload as JSON text.
func payloadJSON(t *testing.T, ev map[string]any) string {
	t.Helper()
	p, ok := ev["payload"].(map[string]any)
	require.True(t, ok, "payload is a JSON object, not %T", ev["payload"])
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	return string(raw)
}

// waitEventStates waits until n of project slug's events are in state,
// with at least attempts attempts each, then returns GET
// /v1/events?state=state. It polls the database: polling the API would use
// up the key's burst limit, whose window stands still on the test clock.
func (e *env) waitEventStates(key, slug, state string, n, attempts int) response {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		var got int
		err := e.store.Pool().QueryRow(context.Background(), `
			SELECT count(*) FROM webhook_events e JOIN projects p ON p.id = e.project_id
			WHERE p.slug = $1 AND e.state = $2
			  AND (SELECT count(*) FROM webhook_attempts a WHERE a.event_id = e.event_id) >= $3`, slug, state, attempts).Scan(&got)
		return err == nil && got == n
	}, 30*time.Second, 50*time.Millisecond, "%d events %s", n, state)
	r := e.listEvents(key, "?state="+state)
	require.Len(e.t, r.events(), n, r.Raw)
	return r
}

// GET /v1/events lists the project's events newest first with their
// delivery state, attempts and the payload exactly as delivered, and
// takes limit, offset, payment_id, created_after and state, refusing bad
// values with GET /v1/payments' messages.
func TestEventsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newHookReceiver(t)
	key, secret := e.hookMerchant("shop", map[string]any{}, map[string]any{"webhook_url": recv.srv.URL})
	recv.setSecret(secret)
	otherKey, _ := e.hookMerchant("other", map[string]any{}, nil)

	// Three events a second apart, each delivered.
	start := e.clock.Now()
	var payments, at []string
	for i := range 3 {
		if i > 0 {
			e.clock.Add(time.Second)
		}
		at = append(at, e.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
		payments = append(payments, e.cancelledPayment(key))
	}
	otherPayment := e.cancelledPayment(otherKey)
	bodies := recv.waitBodies(t, 3)
	r := e.waitEventStates(key, "shop", "delivered", 3, 1)

	r = e.listEvents(key, "")
	requirePagination(t, r, 20, 0, 3, false)
	evs := r.events()
	require.Len(t, evs, 3)
	delivered := map[string]string{} // event_id → the delivered body
	for _, b := range bodies {
		var p map[string]any
		require.NoError(t, json.Unmarshal(b, &p))
		delivered[p["event_id"].(string)] = string(b)
	}
	for i, ev := range evs {
		n := 2 - i // newest first
		eventID, _ := e.event(payments[n])
		assert.Equal(t, eventID, ev["event_id"])
		assert.Equal(t, "payment.cancelled", ev["event"])
		assert.Equal(t, payments[n], ev["payment_id"])
		assert.Equal(t, jsonNumber("1"), ev["sequence"])
		assert.Equal(t, at[n], ev["created_at"])
		assert.Equal(t, "delivered", ev["state"])
		assert.Equal(t, jsonNumber("1"), ev["attempts"])
		require.Contains(t, delivered, eventID)
		assert.JSONEq(t, delivered[eventID], payloadJSON(t, ev), "the payload as delivered")
		assert.Len(t, ev, 8, "the fields of operations.md §8: %v", ev)
	}
	all := r.eventIDs()

	// Pagination.
	r = e.listEvents(key, "?limit=2")
	requirePagination(t, r, 2, 0, 3, true)
	assert.Equal(t, all[:2], r.eventIDs())
	r = e.listEvents(key, "?limit=2&offset=2")
	requirePagination(t, r, 2, 2, 3, false)
	assert.Equal(t, all[2:], r.eventIDs())
	r = e.listEvents(key, "?offset=3")
	requirePagination(t, r, 20, 3, 3, false)
	assert.Empty(t, r.eventIDs())
	r = e.listEvents(key, "?limit=100")
	requirePagination(t, r, 100, 0, 3, false)

	// payment_id: one payment's events; another project's payment, an
	// unknown or a malformed id has none.
	r = e.listEvents(key, "?payment_id="+payments[1])
	requirePagination(t, r, 20, 0, 1, false)
	assert.Equal(t, all[1:2], r.eventIDs())
	for _, id := range []string{otherPayment, "00000000-0000-4000-8000-000000000001", "nope", ""} {
		r = e.listEvents(key, "?payment_id="+url.QueryEscape(id))
		assert.Empty(t, r.eventIDs(), "payment_id %q", id)
		requirePagination(t, r, 20, 0, 0, false)
	}

	// created_after, in GET /v1/payments' formats: strictly after.
	r = e.listEvents(key, "?created_after="+url.QueryEscape(at[0]))
	assert.Equal(t, all[:2], r.eventIDs())
	requirePagination(t, r, 20, 0, 2, false)
	r = e.listEvents(key, "?created_after="+start.Add(-24*time.Hour).Format("2006-01-02"))
	assert.Equal(t, all, r.eventIDs())
	r = e.listEvents(key, "?created_after="+url.QueryEscape(start.Add(time.Hour).Format(time.RFC3339)))
	assert.Empty(t, r.eventIDs())

	// state, and filters together.
	r = e.listEvents(key, "?state=failed")
	assert.Empty(t, r.eventIDs())
	r = e.listEvents(key, "?state=delivered&payment_id="+payments[0]+"&created_after="+url.QueryEscape(at[0]))
	assert.Empty(t, r.eventIDs())
	r = e.listEvents(key, "?state=delivered&limit=1&offset=1&created_after="+url.QueryEscape(at[0]))
	assert.Equal(t, all[1:2], r.eventIDs())
	requirePagination(t, r, 1, 1, 2, false)

	// The other project sees only its own event; /api/v1 is the same list.
	r = e.listEvents(otherKey, "")
	otherEvent, _ := e.event(otherPayment)
	assert.Equal(t, []string{otherEvent}, r.eventIDs())
	assert.Equal(t, "pending", r.events()[0]["state"], "no webhook_url: kept, nothing tried")
	assert.Equal(t, jsonNumber("0"), r.events()[0]["attempts"])
	a := e.call(key, "GET", "/api/v1/events", nil)
	require.Equal(t, http.StatusOK, a.Code, a.Raw)
	assert.Equal(t, all, a.eventIDs())

	// Bad filters get GET /v1/payments' messages.
	for q, msg := range map[string]string{
		"?limit=0":                  "Invalid limit or offset",
		"?limit=101":                "Invalid limit or offset",
		"?limit=x":                  "Invalid limit or offset",
		"?limit=":                   "Invalid limit or offset",
		"?offset=-1":                "Invalid limit or offset",
		"?offset=1.5":               "Invalid limit or offset",
		"?created_after=yesterday":  "Invalid created_after",
		"?created_after=":           "Invalid created_after",
		"?created_after=2025-13-01": "Invalid created_after",
		"?state=lost":               "Invalid state filter",
		"?state=Failed":             "Invalid state filter",
	} {
		requireError(t, e.call(key, "GET", "/v1/events"+q, nil), http.StatusBadRequest, msg)
	}
	requireError(t, e.do(request{method: "GET", path: "/v1/events"}), http.StatusUnauthorized, "Missing x-api-key header")
	requireError(t, e.call("pk_live_nope", "GET", "/v1/events", nil), http.StatusUnauthorized, "Invalid API key")
	requireError(t, e.do(request{method: "GET", path: "/v1/events", masterKey: testMasterKey}), http.StatusUnauthorized, "Missing x-api-key header")
}

// Both endpoints are scoped to the key's project: another project's event
// is "Event not found", as are unknown and malformed ids, and nothing is
// sent for them.
func TestEventsRedeliverProjectScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newHookReceiver(t)
	key, secret := e.hookMerchant("shop", map[string]any{}, map[string]any{"webhook_url": recv.srv.URL})
	recv.setSecret(secret)
	otherRecv := newHookReceiver(t)
	otherKey, otherSecret := e.hookMerchant("other", map[string]any{}, map[string]any{"webhook_url": otherRecv.srv.URL})
	otherRecv.setSecret(otherSecret)

	own, _ := e.event(e.cancelledPayment(key))
	theirs, _ := e.event(e.cancelledPayment(otherKey))
	recv.waitBodies(t, 1)
	otherRecv.waitBodies(t, 1)

	assert.Equal(t, []string{own}, e.listEvents(key, "").eventIDs())
	assert.Equal(t, []string{theirs}, e.listEvents(otherKey, "").eventIDs())
	for _, id := range []string{theirs, "00000000-0000-4000-8000-000000000001", "not-an-id", "1", strings.ToUpper(theirs), "%20"} {
		r := e.call(key, "POST", "/v1/events/"+id+"/redeliver", nil)
		requireError(t, r, http.StatusNotFound, "Event not found")
	}
	requireError(t, e.call(key, "POST", "/v1/events/"+url.PathEscape("a\x00b")+"/redeliver", nil), http.StatusBadRequest, "Invalid request body")
	requireError(t, e.do(request{method: "POST", path: "/v1/events/" + own + "/redeliver"}), http.StatusUnauthorized, "Missing x-api-key header")
	requireError(t, e.do(request{method: "POST", path: "/v1/events/" + own + "/redeliver", masterKey: testMasterKey}),
		http.StatusUnauthorized, "Missing x-api-key header")

	// Its own event is sent again, to its own endpoint only.
	r := e.call(key, "POST", "/v1/events/"+own+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	assert.Equal(t, map[string]any{"success": true}, r.Body)
	recv.waitBodies(t, 2)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, 2, recv.count())
	assert.Equal(t, 1, otherRecv.count(), "refused redeliveries send nothing")
}

// apiCalls is the owner's count of API calls today.
func (e *env) apiCalls(email string) int64 {
	e.t.Helper()
	var n int64
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(), `
		SELECT COALESCE(SUM(u.count), 0) FROM daily_usage u JOIN accounts a ON a.id = u.account_id
		WHERE a.email = $1 AND u.kind = 'api_calls'`, email).Scan(&n))
	return n
}

// Every call of both endpoints counts toward the owner's daily API calls,
// refused ones included, and over the limit both answer the daily 429.
func TestEventsCountTowardDailyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newHookReceiver(t)
	key, secret := e.hookMerchant("shop", map[string]any{}, map[string]any{"webhook_url": recv.srv.URL})
	recv.setSecret(secret)
	eventID, _ := e.event(e.cancelledPayment(key))
	recv.waitBodies(t, 1)

	const email = "shop@example.com"
	used := e.apiCalls(email)
	e.listEvents(key, "")
	assert.Equal(t, used+1, e.apiCalls(email), "GET /v1/events counts")
	requireError(t, e.call(key, "GET", "/v1/events?limit=0", nil), http.StatusBadRequest, "Invalid limit or offset")
	assert.Equal(t, used+2, e.apiCalls(email), "a refused list counts")
	r := e.call(key, "POST", "/v1/events/"+eventID+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	assert.Equal(t, used+3, e.apiCalls(email), "POST redeliver counts")
	requireError(t, e.call(key, "POST", "/v1/events/00000000-0000-4000-8000-000000000001/redeliver", nil), http.StatusNotFound, "Event not found")
	assert.Equal(t, used+4, e.apiCalls(email), "a refused redelivery counts")
	recv.waitBodies(t, 2)

	// The limit is reached with the next call; the one after is refused.
	r = e.op("PATCH", "/v1/accounts/"+email, map[string]any{"limits": map[string]any{"api_calls_per_day": used + 5}})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	e.listEvents(key, "")
	for _, call := range []struct{ method, path string }{{"GET", "/v1/events"}, {"POST", "/v1/events/" + eventID + "/redeliver"}} {
		r = e.call(key, call.method, call.path, nil)
		requireError(t, r, http.StatusTooManyRequests, "Daily API call limit exceeded. Upgrade your plan for unlimited access.")
		assert.Equal(t, "true", r.Header.Get("X-RateLimit-Daily"))
		assert.Equal(t, num(int(used+5)), r.Body["limit"])
	}
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, 2, recv.count(), "a redelivery over the daily limit sends nothing")
}

// webhookUsage is the owner's count of quota webhooks today.
func (e *env) webhookUsage() int64 {
	e.t.Helper()
	var n int64
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(),
		`SELECT COALESCE(SUM(count), 0) FROM daily_usage WHERE kind = 'webhooks'`).Scan(&n))
	return n
}

// A skipped event is listed as skipped with no attempt; redelivered, it is
// sent with its event_id and payload and counts toward the daily webhook
// quota then, past the limit. Sending a delivered event again is allowed
// and does not count a second time.
func TestEventsRedeliverSkippedCountsTowardQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newHookReceiver(t)
	key, secret := e.hookMerchant("shop", map[string]any{"webhooks_per_day": 0}, map[string]any{"webhook_url": recv.srv.URL})
	recv.setSecret(secret)

	eventID, _ := e.event(e.cancelledPayment(key))
	r := e.listEvents(key, "?state=skipped")
	require.Equal(t, []string{eventID}, r.eventIDs())
	assert.Equal(t, jsonNumber("0"), r.events()[0]["attempts"], "a quota skip sends nothing")
	listed := payloadJSON(t, r.events()[0])
	assert.Zero(t, e.webhookUsage())
	assert.Zero(t, recv.count())

	r = e.call(key, "POST", "/v1/events/"+eventID+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	assert.Equal(t, map[string]any{"success": true}, r.Body)
	body := recv.waitBodies(t, 1)[0]
	assert.JSONEq(t, listed, string(body), "same event_id and payload")
	assert.EqualValues(t, 1, e.webhookUsage(), "counted when sent again, though the quota is 0")
	r = e.waitEventStates(key, "shop", "delivered", 1, 2)
	assert.Equal(t, jsonNumber("1"), r.events()[0]["attempts"])
	assert.Empty(t, e.listEvents(key, "?state=skipped").eventIDs())

	// A delivered event may be sent again; it does not count again.
	r = e.call(key, "POST", "/v1/events/"+eventID+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	again := recv.waitBodies(t, 2)[1]
	assert.Equal(t, string(body), string(again))
	assert.EqualValues(t, 1, e.webhookUsage())
	r = e.waitEventStates(key, "shop", "delivered", 1, 3)
	assert.Equal(t, jsonNumber("2"), r.events()[0]["attempts"])
}

// A redelivery the merchant asked for is durable: a replica without
// Temporal accepts it and leaves the event pending, and the reconciler
// sends it with the same event_id.
func TestEventsRedeliverDurable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newHookReceiver(t)
	key, secret := e.hookMerchant("shop", map[string]any{}, map[string]any{"webhook_url": recv.srv.URL})
	recv.setSecret(secret)
	eventID, _ := e.event(e.cancelledPayment(key))
	first := recv.waitBodies(t, 1)[0]
	e.waitEventStates(key, "shop", "delivered", 1, 1)

	blind := newEnvSharing(t, e)
	r := blind.call(key, "POST", "/v1/events/"+eventID+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	assert.Equal(t, []string{eventID}, e.listEvents(key, "?state=pending").eventIDs(), "accepted, waiting")

	rec := e.server.Reconciler()
	rec.MinAge = time.Second
	e.clock.Add(2 * time.Second)
	require.Eventually(t, func() bool {
		_, err := rec.Webhooks(context.Background())
		return err == nil && recv.count() >= 2
	}, 20*time.Second, 200*time.Millisecond)
	assert.Equal(t, string(first), string(recv.waitBodies(t, 2)[1]), "same event_id and payload")
	e.waitEventStates(key, "shop", "delivered", 1, 2)
}

// outageReceiver is a merchant's endpoint that is down (503) until the
// test brings it back; once up it keeps every request it gets, headers and
// body, and accepts those that verify with the secret it holds.
type outageReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	down   bool
	secret string
	// refused holds the bodies answered 503, by event_id.
	refused map[string][][]byte
	got     []received
}

// received is one request the receiver took while up.
type received struct {
	body                 []byte
	signature, timestamp string
	verified             bool
}

func newOutageReceiver(t *testing.T) *outageReceiver {
	r := &outageReceiver{down: true, refused: map[string][][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.down {
			var p struct {
				EventID string `json:"event_id"`
			}
			_ = json.Unmarshal(body, &p)
			r.refused[p.EventID] = append(r.refused[p.EventID], body)
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		sig, ts := req.Header.Get(paywatch.HeaderSignature), req.Header.Get(paywatch.HeaderTimestamp)
		ok := paywatch.VerifyWebhook(r.secret, sig, ts, body, time.Now()) == nil
		r.got = append(r.got, received{body: body, signature: sig, timestamp: ts, verified: ok})
		if !ok {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *outageReceiver) recover(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down, r.secret = false, secret
}

func (r *outageReceiver) refusedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, bs := range r.refused {
		n += len(bs)
	}
	return n
}

// A merchant whose endpoint was down for the whole retry schedule
// recovers every event: the events end failed after 5 attempts each; the
// merchant rotates the webhook secret, brings the endpoint back, lists the
// failed events page by page and sends each again. Every delivery that
// arrives is signed with the current secret (checked here with HMAC-SHA256
// itself and with paywatch's verifier), carries the original event_id and
// the byte-identical body of the attempts that failed, and each event
// arrives once and ends delivered.
func TestEventsRecoverAfterOutage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	recv := newOutageReceiver(t)
	key, oldSecret := e.hookMerchant("shop", map[string]any{}, map[string]any{"webhook_url": recv.srv.URL})
	const n = 3
	var want []string
	for range n {
		eventID, _ := e.event(e.cancelledPayment(key))
		want = append(want, eventID)
		e.clock.Add(time.Second)
	}
	sort.Strings(want)

	// The whole schedule runs out: 5 attempts each, every one refused.
	failed := e.waitEventStates(key, "shop", "failed", n, workflows.WebhookMaxAttempts)
	for _, ev := range failed.events() {
		assert.Equal(t, jsonNumber("5"), ev["attempts"], "event %s", ev["event_id"])
	}
	assert.Equal(t, n*workflows.WebhookMaxAttempts, recv.refusedCount())
	assert.Empty(t, e.listEvents(key, "?state=retrying").eventIDs())

	// The merchant rotates the keys while fixing the endpoint.
	r := e.op("POST", "/v1/projects/shop/regenerate-keys", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	key, secret := r.str("api_key"), r.str("webhook_secret")
	require.NotEqual(t, oldSecret, secret)
	recv.recover(secret)

	// List the failed events, two a page, and send each again.
	payloads := map[string]string{}
	for offset := 0; ; offset += 2 {
		page := e.listEvents(key, "?state=failed&limit=2&offset="+strconv.Itoa(offset))
		assert.Equal(t, num(n), page.pagination()["total"])
		for _, ev := range page.events() {
			payloads[ev["event_id"].(string)] = payloadJSON(t, ev)
		}
		if page.pagination()["has_more"] != true {
			break
		}
	}
	var listed []string
	for id := range payloads {
		listed = append(listed, id)
	}
	sort.Strings(listed)
	require.Equal(t, want, listed, "every failed event is listed once")
	for _, id := range listed {
		r := e.call(key, "POST", "/v1/events/"+id+"/redeliver", nil)
		require.Equal(t, http.StatusAccepted, r.Code, r.Raw)
	}

	// Verify what arrived.
	done := e.waitEventStates(key, "shop", "delivered", n, workflows.WebhookMaxAttempts+1)
	for _, ev := range done.events() {
		assert.Equal(t, jsonNumber("6"), ev["attempts"], "5 failed, then the redelivery")
	}
	assert.Empty(t, e.listEvents(key, "?state=failed").eventIDs())
	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.Len(t, recv.got, n, "each event once")
	seen := map[string]bool{}
	for _, d := range recv.got {
		assert.True(t, d.verified, "paywatch.VerifyWebhook with the current secret")
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(d.timestamp + "."))
		mac.Write(d.body)
		assert.Equal(t, hex.EncodeToString(mac.Sum(nil)), d.signature, "HMAC-SHA256(current secret, timestamp.body)")
		old := hmac.New(sha256.New, []byte(oldSecret))
		old.Write([]byte(d.timestamp + "."))
		old.Write(d.body)
		assert.NotEqual(t, hex.EncodeToString(old.Sum(nil)), d.signature, "not the old secret")
		sent, err := time.Parse(time.RFC3339, d.timestamp)
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now(), sent, time.Minute)

		var p map[string]any
		require.NoError(t, json.Unmarshal(d.body, &p))
		id, _ := p["event_id"].(string)
		require.Contains(t, payloads, id)
		assert.False(t, seen[id], "event %s delivered twice", id)
		seen[id] = true
		require.Len(t, recv.refused[id], workflows.WebhookMaxAttempts)
		assert.Equal(t, string(recv.refused[id][0]), string(d.body), "the payload that failed, byte for byte")
		assert.JSONEq(t, payloads[id], string(d.body), "the payload the event log showed")
		assert.Equal(t, "payment.cancelled", p["event"])
	}
}
