package activities_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/webhooks/webhookstest"
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

func (f *fixture) state() paywatch.PaymentState {
	paidAt := time.Date(2025, 3, 1, 12, 3, 0, 0, time.UTC)
	return paywatch.PaymentState{
		PaymentID: f.paymentID, Status: paywatch.StatusPaid, Network: paywatch.ERC20, Token: paywatch.USDT,
		Address: "0x1111111111111111111111111111111111111111", Amount: paywatch.MustParseAmount("50", 6),
		PaidAmount: paywatch.MustParseAmount("50.5", 6), TxHash: "0xabc", PaidAt: &paidAt,
		ExpiresAt:    time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC),
		Transactions: []paywatch.Transaction{{TxHash: "0xabc", From: "0xfrom", Amount: paywatch.MustParseAmount("50.5", 6), Confirmations: 12, Confirmed: true}},
	}
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
	return eventID, deliver(t, acts, eventID, nil)
}

// deliver runs the real WebhookWorkflow of a queued event in the SDK's test
// environment; prepare, if set, may install listeners first.
func deliver(t *testing.T, acts *activities.Activities, eventID string, prepare func(env *testsuite.TestWorkflowEnvironment)) deliverRun {
	t.Helper()
	return deliverInput(t, acts, workflows.WebhookInput{EventID: eventID, FirstAttempt: 1}, prepare)
}

// deliverInput is deliver with the run's input, as a redelivery or the
// reconciler starts it.
func deliverInput(t *testing.T, acts *activities.Activities, in workflows.WebhookInput, prepare func(env *testsuite.TestWorkflowEnvironment)) deliverRun {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	workflows.Register(env, acts)
	if prepare != nil {
		prepare(env)
	}
	start := env.Now()
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, in)
	require.True(t, env.IsWorkflowCompleted())
	return deliverRun{err: env.GetWorkflowError(), elapsed: env.Now().Sub(start)}
}

func newActivities(f *fixture, allowPrivate bool, timeout time.Duration) *activities.Activities {
	return activities.New(activities.Deps{
		Store:        f.store,
		HTTPClient:   webhooks.NewClient(timeout, allowPrivate),
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
		"external_order_id", "external_ref", "late_payment", "memo", "metadata", "network", "paid_amount", "paid_at",
		"payment_id", "sequence", "status", "token", "transactions", "tx_hash"}, keys)
	assert.Nil(t, payload["memo"], "memo: null but on a memo payment (operations.md §9)")
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
	require.NoError(t, run.err, "a delivery that fails is an outcome, not a workflow failure")
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
	require.NoError(t, run.err)
	assert.Equal(t, 1, r.count())
	as := attempts(t, f, eventID)
	require.Len(t, as, 1)
	assert.Equal(t, store.WebhookFailed, as[0].State)
	assert.Equal(t, 410, as[0].StatusCode)
}

// A 3xx answer is not followed and not final: the receiver may answer
// otherwise next time, so payment.completed is retried and delivered
// rather than failed for good. Only a 4xx is permanent.
func TestWebhook3xxRetriedThenDelivered(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusFound
		}
		return http.StatusOK
	})
	f := newFixture(t, r.srv.URL, `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, true, time.Second), paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, 2, r.count(), "the receiver got the event again")
	as := attempts(t, f, eventID)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookDelivered}, states(as))
	assert.Equal(t, 302, as[0].StatusCode)
	assert.Equal(t, store.WebhookDelivered, f.eventState(t, eventID))
}

// A host name whose DNS answer names a private address is refused, with
// nothing sent, but retried: the next answer is public again and the
// event is delivered. The first lookup (a real DNS server on loopback,
// scripted) answers 10.0.0.7, the later ones a public address; the test's
// HTTP client takes every request to the receiver on loopback, so no
// packet goes to either address.
func TestWebhookPrivateDNSAnswerRetriedThenDelivered(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	dns := webhookstest.NewDNS(t, func(n int) []netip.Addr {
		if n == 1 {
			return []netip.Addr{netip.MustParseAddr("10.0.0.7")}
		}
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}
	})
	f := newFixture(t, "http://hooks.example.com/pay", `{}`)
	client := webhooks.NewClient(time.Second, true)
	receiverAddr := r.srv.Listener.Addr().String()
	dialer := &net.Dialer{Timeout: time.Second}
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, receiverAddr)
	}
	acts := activities.New(activities.Deps{Store: f.store, HTTPClient: client, Resolver: dns.Resolver()})

	eventID, run := queueAndDeliver(t, f, acts, paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, 1, r.count(), "delivered once the answer was public")
	as := attempts(t, f, eventID)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookDelivered}, states(as))
	require.Len(t, as, 2)
	assert.Equal(t, 0, as[0].StatusCode)
	assert.Equal(t, webhooks.ErrPrivateAddress.Error(), as[0].ResponseBody, "the log names no address")
	assert.Equal(t, store.WebhookDelivered, f.eventState(t, eventID))
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
	assert.Equal(t, "timeout", as[0].ResponseBody)
}

// A network failure is logged for the project as a fixed description,
// never as Go's error text, which names addresses of the network paywatch
// runs in: the resolver ("lookup x on 10.0.0.2:53") or the sockets
// ("dial tcp 127.0.0.1:5555"). The lookup fails before the attempt when
// private addresses are refused (the URL check resolves the name) and at
// dial time when they are allowed.
func TestWebhookNetworkFailureLogNamesNoAddress(t *testing.T) {
	require.True(t, containsIP("lookup x.invalid on 10.0.0.2:53: no such host"), "the check sees a resolver")
	require.True(t, containsIP("read tcp [fd00::1]:5555->[2001:db8::2]:443: reset"), "the check sees IPv6 sockets")
	require.False(t, containsIP("connection refused at 12:30"))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String() + "/hooks"
	require.NoError(t, l.Close())
	for _, c := range []struct {
		name, url    string
		allowPrivate bool
		want         string
	}{
		{"connection refused", closed, true, "connection refused"},
		{"lookup before the attempt", "https://nowhere.paywatch.invalid/hooks", false, "DNS lookup failed"},
		{"lookup at dial time", "https://nowhere.paywatch.invalid/hooks", true, "DNS lookup failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.url, `{}`)
			eventID, run := queueAndDeliver(t, f, newActivities(f, c.allowPrivate, time.Second), paywatch.EventCompleted, 1)
			require.NoError(t, run.err)
			as := attempts(t, f, eventID)
			require.Len(t, as, workflows.WebhookMaxAttempts, "retried like any network failure")
			for _, a := range as {
				assert.False(t, containsIP(a.ResponseBody), "attempt %d names an address: %q", a.Attempt, a.ResponseBody)
				assert.Equal(t, c.want, a.ResponseBody)
			}
		})
	}
}

// containsIP reports whether s names an IPv4 or IPv6 address, alone or
// with a port.
func containsIP(s string) bool {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || strings.ContainsRune(".:[]", r))
	})
	for _, f := range fields {
		f = strings.TrimRight(f, ".:")
		if _, err := netip.ParseAddr(strings.Trim(f, "[]")); err == nil {
			return true
		}
		if _, err := netip.ParseAddrPort(f); err == nil {
			return true
		}
	}
	return false
}

// A URL on a private address is refused before any request unless
// private addresses are allowed (httptest listens on 127.0.0.1).
func TestWebhookPrivateAddressRefused(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	f := newFixture(t, r.srv.URL, `{}`)
	eventID, run := queueAndDeliver(t, f, newActivities(f, false, time.Second), paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, 0, r.count())
	as := attempts(t, f, eventID)
	require.Len(t, as, 1)
	assert.Equal(t, store.WebhookFailed, as[0].State)
	assert.Contains(t, as[0].ResponseBody, "private or reserved")
}

// Outside paywatch dev an http:// URL is refused before the attempt, as
// when it is saved, and nothing is sent in clear text; it is not retried.
func TestWebhookPlainHTTPRefusedWhenHTTPSIsRequired(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	f := newFixture(t, r.srv.URL+"/hooks", `{}`)
	acts := activities.New(activities.Deps{
		Store:        f.store,
		HTTPClient:   webhooks.NewClient(time.Second, true),
		AllowPrivate: true,
		RequireHTTPS: true,
	})
	eventID, run := queueAndDeliver(t, f, acts, paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, 0, r.count())
	as := attempts(t, f, eventID)
	require.Len(t, as, 1)
	assert.Equal(t, store.WebhookFailed, as[0].State)
	assert.Contains(t, as[0].ResponseBody, "must use https")
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
	require.NoError(t, run.err)
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
	require.NoError(t, deliver(t, acts, skippedID, nil).err)
	assert.Equal(t, 1, r.count())
	assert.Equal(t, []store.WebhookState{store.WebhookSkipped}, states(attempts(t, f, skippedID)))

	_, run = queueAndDeliver(t, f, acts, paywatch.EventCompleted, 3)
	require.NoError(t, run.err)
	assert.Equal(t, 2, r.count(), "completed is exempt")
}

// The delivery URL check happens before every attempt, not only when the
// URL is saved or the event queued. The event is queued while the
// project's URL is a public address and its first attempt gets a 503;
// then the URL changes to the receiver's own loopback address (the API
// refuses that at save time; a hand-edited row or a setting changed later
// gets here all the same). The second attempt is refused before any
// request, and the event fails for good. The test's HTTP client delivers
// every request to the receiver whatever the URL, with no guard at dial
// time, so only the check before the attempt stands between the payload
// and the private address.
func TestWebhookURLCheckedBeforeEveryAttempt(t *testing.T) {
	const publicURL = "http://93.184.215.14/hooks" // public; the client below delivers it to the receiver
	var f *fixture
	var private string // the receiver's loopback URL
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			_, err := f.store.UpdateProject(context.Background(), "shop", store.ProjectSettings{WebhookURL: &private})
			assert.NoError(t, err)
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	f = newFixture(t, publicURL, `{}`)
	private = r.srv.URL + "/hooks"
	client := webhooks.NewClient(time.Second, true)
	receiverAddr := r.srv.Listener.Addr().String()
	dialer := &net.Dialer{Timeout: time.Second}
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, receiverAddr)
	}
	acts := activities.New(activities.Deps{Store: f.store, HTTPClient: client, AllowPrivate: false})

	eventID, run := queueAndDeliver(t, f, acts, paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, 1, r.count(), "the attempt to the private URL never reached the receiver")
	as := attempts(t, f, eventID)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookFailed}, states(as))
	require.Len(t, as, 2)
	assert.Equal(t, 503, as[0].StatusCode)
	assert.Equal(t, 0, as[1].StatusCode)
	assert.Contains(t, as[1].ResponseBody, "private or reserved")
	assert.Equal(t, store.WebhookFailed, f.eventState(t, eventID))
}

// startCounter counts the activity starts of a delivery by activity name
// and runs a step at a given start, for breaking and mending the database
// at exact points of a delivery.
type startCounter struct {
	n     map[string]int
	steps map[string]map[int]func()
}

func (c *startCounter) at(activityName string, start int, step func()) {
	if c.steps[activityName] == nil {
		c.steps[activityName] = map[int]func(){}
	}
	c.steps[activityName][start] = step
}

func (c *startCounter) install(env *testsuite.TestWorkflowEnvironment) {
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		name := info.ActivityType.Name
		c.n[name]++
		if step := c.steps[name][c.n[name]]; step != nil {
			step()
		}
	})
}

func newStartCounter() *startCounter {
	return &startCounter{n: map[string]int{}, steps: map[string]map[int]func(){}}
}

// rename renames a table: the store's queries on it then fail for real
// (relation does not exist) until it is renamed back.
func (f *fixture) rename(t *testing.T, from, to string) {
	_, err := f.pool.Exec(context.Background(), `ALTER TABLE `+from+` RENAME TO `+to)
	assert.NoError(t, err)
}

func (f *fixture) eventState(t *testing.T, eventID string) store.WebhookState {
	var st store.WebhookState
	require.NoError(t, f.pool.QueryRow(context.Background(), `SELECT state FROM webhook_events WHERE event_id = $1`, eventID).Scan(&st))
	return st
}

// A database error, reading the event before an attempt or logging it
// after, never uses up one of the receiver's attempts: the receiver still
// gets five, on the schedule measured from the first, and each is logged
// once under its own number. The database really fails: the table is
// renamed away and back.
func TestWebhookDatabaseErrorsDoNotUseAttempts(t *testing.T) {
	var f *fixture
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			f.rename(t, "webhook_attempts", "webhook_attempts_away") // the first attempt cannot be logged
		}
		return http.StatusInternalServerError
	})
	f = newFixture(t, r.srv.URL, `{}`)
	acts := newActivities(f, true, time.Second)
	eventID := workflows.EventID(f.paymentID, 1)
	_, err := acts.QueueWebhook(context.Background(), workflows.QueueWebhookInput{EventID: eventID, Sequence: 1, Event: paywatch.EventCompleted, State: f.state()})
	require.NoError(t, err)

	f.rename(t, "webhook_events", "webhook_events_away") // the first read of the event fails
	c := newStartCounter()
	c.at(workflows.ActivitySendWebhook, 2, func() { f.rename(t, "webhook_events_away", "webhook_events") })
	c.at(workflows.ActivityRecordWebhookAttempt, 2, func() { f.rename(t, "webhook_attempts_away", "webhook_attempts") })
	run := deliver(t, acts, eventID, c.install)
	require.NoError(t, run.err)

	assert.Equal(t, 6, c.n[workflows.ActivitySendWebhook], "one read failed")
	assert.Equal(t, 6, c.n[workflows.ActivityRecordWebhookAttempt], "one log write failed")
	assert.Equal(t, 5, r.count(), "the receiver got all five attempts, none twice")
	as := attempts(t, f, eventID)
	var nums []int
	for _, a := range as {
		nums = append(nums, a.Attempt)
		assert.Equal(t, 500, a.StatusCode)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5}, nums)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying, store.WebhookFailed}, states(as))
	assert.Equal(t, store.WebhookFailed, f.eventState(t, eventID))
	assert.InDelta(t, (30 * time.Minute).Seconds(), run.elapsed.Seconds(), 1, "the fifth attempt 30 min after the first")
}

// A database outage that outlasts the activity's own retries (here the
// event cannot be read through nine starts of the fifth attempt, over two
// minutes) still uses up none of the receiver's attempts: the fifth goes
// out once the database is back, and the event then ends failed on the
// receiver's own answer, never on the outage.
func TestWebhookLongOutageUsesNoAttempt(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusBadGateway })
	f := newFixture(t, r.srv.URL, `{}`)
	acts := newActivities(f, true, time.Second)
	eventID := workflows.EventID(f.paymentID, 1)
	_, err := acts.QueueWebhook(context.Background(), workflows.QueueWebhookInput{EventID: eventID, Sequence: 1, Event: paywatch.EventCompleted, State: f.state()})
	require.NoError(t, err)

	c := newStartCounter()
	c.at(workflows.ActivitySendWebhook, 5, func() { f.rename(t, "webhook_events", "webhook_events_away") })
	c.at(workflows.ActivitySendWebhook, 14, func() { f.rename(t, "webhook_events_away", "webhook_events") })
	run := deliver(t, acts, eventID, c.install)
	require.NoError(t, run.err)

	assert.Equal(t, 14, c.n[workflows.ActivitySendWebhook], "the fifth attempt was read nine times")
	assert.Equal(t, 5, r.count(), "the receiver got all five attempts")
	as := attempts(t, f, eventID)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying, store.WebhookFailed}, states(as))
	assert.Equal(t, 5, as[4].Attempt)
	assert.Equal(t, http.StatusBadGateway, as[4].StatusCode)
	assert.Equal(t, store.WebhookFailed, f.eventState(t, eventID))
}

// A redelivery accepted while the old run's attempt is in flight, whose own
// run could not be started then (Temporal did not answer; the API still
// answered 202), is not lost to the old run: that run's late log entry
// leaves the event pending, it sends nothing more, and the run the
// reconciler then starts delivers the event, numbered after the old
// attempts.
func TestWebhookRedeliveryOutlivesTheRunItReplaces(t *testing.T) {
	var f *fixture
	var eventID string
	var mu sync.Mutex
	var redelivery store.PendingWebhook
	up := false // the receiver answers 500 until the test mends it
	r := newReceiver(t, func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		if n == 3 {
			p, err := f.store.PrepareRedelivery(context.Background(), f.projectID, eventID)
			assert.NoError(t, err)
			redelivery = p
		}
		if up {
			return http.StatusOK
		}
		return http.StatusInternalServerError
	})
	f = newFixture(t, r.srv.URL, `{}`)
	acts := newActivities(f, true, time.Second)
	eventID = workflows.EventID(f.paymentID, 1)
	_, err := acts.QueueWebhook(context.Background(), workflows.QueueWebhookInput{EventID: eventID, Sequence: 1, Event: paywatch.EventCompleted, State: f.state()})
	require.NoError(t, err)

	require.NoError(t, deliver(t, acts, eventID, nil).err) // the old run
	assert.Equal(t, 3, r.count(), "the old run sent nothing after the redelivery was accepted")
	assert.Equal(t, store.WebhookPending, f.eventState(t, eventID), "the redelivery is still to be made")
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying}, states(attempts(t, f, eventID)),
		"the old run's last attempt is logged")

	pending, err := f.store.PendingWebhooks(context.Background(), f.projectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1, "the reconciler finds the redelivery")
	mu.Lock()
	assert.Equal(t, redelivery.Generation, pending[0].Generation, "the redelivery's generation")
	assert.Equal(t, redelivery.NextAttempt+1, pending[0].NextAttempt, "numbered after the old run's late entry")
	up = true
	mu.Unlock()
	p := pending[0]
	require.NoError(t, deliverInput(t, acts, workflows.WebhookInput{EventID: p.EventID, FirstAttempt: p.NextAttempt, Generation: p.Generation}, nil).err)
	assert.Equal(t, 4, r.count())
	as := attempts(t, f, eventID)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookRetrying, store.WebhookRetrying, store.WebhookDelivered}, states(as))
	assert.Equal(t, store.WebhookDelivered, f.eventState(t, eventID))
}

// An event raised while the project has no webhook URL is kept pending,
// with nothing sent or logged, and is delivered by the next run once a URL
// is set.
func TestWebhookWithoutURLStaysPending(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusOK })
	f := newFixture(t, r.srv.URL, `{}`)
	_, err := f.pool.Exec(context.Background(), `UPDATE projects SET webhook_url = NULL`)
	require.NoError(t, err)
	acts := newActivities(f, true, time.Second)
	eventID, run := queueAndDeliver(t, f, acts, paywatch.EventCompleted, 1)
	require.NoError(t, run.err)
	assert.Equal(t, 0, r.count())
	assert.Empty(t, attempts(t, f, eventID))
	assert.Equal(t, store.WebhookPending, f.eventState(t, eventID))

	_, err = f.pool.Exec(context.Background(), `UPDATE projects SET webhook_url = $1`, r.srv.URL)
	require.NoError(t, err)
	require.NoError(t, deliver(t, acts, eventID, nil).err)
	assert.Equal(t, 1, r.count())
	assert.Equal(t, store.WebhookDelivered, f.eventState(t, eventID))
}
