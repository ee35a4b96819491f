package activities_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

// deliveryStarts is the reconciler's Temporal: it keeps the delivery runs
// the reconciler starts, for the test to run in the SDK's test
// environment. Nothing else of payments.Workflows is called.
type deliveryStarts struct {
	payments.Workflows
	mu     sync.Mutex
	inputs []workflows.WebhookInput
}

func (d *deliveryStarts) DeliverWebhook(_ context.Context, in workflows.WebhookInput) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inputs = append(d.inputs, in)
	return nil
}

// A transfer.unmatched webhook goes the way it does in production: the
// reconciler tells the transfer (payments.Reconciler.Unmatched, which
// writes the event), its webhook pass starts the event's delivery, and the
// real WebhookWorkflow and activities send it. A receiver that answers 500
// twice gets it again on the schedule (0 s, 10 s, 60 s) until its 200, every
// attempt signed with the project's secret and carrying the same body and
// event_id; the deliveries log and the event log show the three attempts;
// and nothing is told or started again (issue 27, item 5).
func TestUnmatchedWebhookRetriedThenDelivered(t *testing.T) {
	ctx := context.Background()
	r := newReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	pool := storetest.NewPool(t)
	st := store.New(pool, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	email := "owner@unmatched.test"
	_, err := st.CreateAccount(ctx, email, paywatch.PlanPro)
	require.NoError(t, err)
	mode, on, url := paywatch.ModeDedicated, true, r.srv.URL+"/hooks"
	prj, creds, err := st.CreateProject(ctx, store.NewProject{Slug: "shop", Settings: store.ProjectSettings{
		OwnerEmail: &email, AddressMode: &mode, UnmatchedWebhooks: &on, WebhookURL: &url,
	}})
	require.NoError(t, err)
	r.mu.Lock()
	r.secret = creds.WebhookSecret
	r.mu.Unlock()
	const addr = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
	_, _, err = st.PutWallet(ctx, "shop", store.WalletUpdate{Addresses: map[string][]string{"TRC20": {addr}}})
	require.NoError(t, err)

	// 3 USDT to the static address with nothing open, confirmed long since.
	hash := strings.Repeat("7e", 32)
	x := paywatch.Transfer{Network: paywatch.TRC20, Token: paywatch.USDT, TxHash: hash, BlockNumber: 10, BlockHash: "b10",
		From: "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", To: addr, Amount: paywatch.MustParseAmount("3", 6).Units()}
	_, err = st.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: 100, BlockHash: "h100", Head: 100,
		Transfers: []paywatch.Transfer{x}}, nil)
	require.NoError(t, err)

	starts := &deliveryStarts{}
	rec := &payments.Reconciler{Store: st, Workflows: starts, MinAge: time.Millisecond}
	told, err := rec.Unmatched(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, told)
	time.Sleep(10 * time.Millisecond) // past MinAge
	started, err := rec.Webhooks(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, started)
	eventID := payments.UnmatchedEventID(paywatch.TRC20, hash, 0)
	require.Len(t, starts.inputs, 1)
	in := starts.inputs[0]
	assert.Equal(t, eventID, in.EventID)

	acts := newActivities(&fixture{pool: pool, store: st, projectID: prj.ID}, true, time.Second)
	run := deliverInput(t, acts, in, nil)
	require.NoError(t, run.err)
	assert.InDelta(t, time.Minute.Seconds(), run.elapsed.Seconds(), 1, "third attempt at 60 s")

	// The receiver verified each signature (it answers 401 to a bad one,
	// which would end the delivery as failed).
	require.Equal(t, 3, r.count())
	r.mu.Lock()
	bodies := r.bodies
	r.mu.Unlock()
	for i, body := range bodies {
		assert.Equal(t, string(bodies[0]), string(body), "attempt %d sends the same body", i+1)
		var p map[string]any
		require.NoError(t, json.Unmarshal(body, &p))
		assert.Equal(t, "transfer.unmatched", p["event"])
		assert.Equal(t, eventID, p["event_id"], "attempt %d", i+1)
		assert.Equal(t, hash, p["tx_hash"])
		assert.Equal(t, "3.00", p["amount"])
		assert.Equal(t, store.ReasonNoPayment, p["reason"])
	}

	as := attempts(t, &fixture{store: st}, eventID)
	assert.Equal(t, []store.WebhookState{store.WebhookRetrying, store.WebhookRetrying, store.WebhookDelivered}, states(as))
	var codes []int
	for i, a := range as {
		assert.Equal(t, i+1, a.Attempt)
		codes = append(codes, a.StatusCode)
	}
	assert.Equal(t, []int{500, 500, 200}, codes)
	evs, total, err := st.ListEvents(ctx, prj.ID, store.EventFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	assert.Equal(t, eventID, evs[0].EventID)
	assert.Equal(t, store.EventTransferUnmatched, evs[0].Event)
	assert.Empty(t, evs[0].PaymentID)
	assert.Equal(t, store.WebhookDelivered, evs[0].State)
	assert.Equal(t, 3, evs[0].Attempts)
	assert.JSONEq(t, string(bodies[0]), string(evs[0].Payload), "the log shows the body that was sent")

	// Told once, delivered once: the next pass has nothing to do.
	time.Sleep(10 * time.Millisecond)
	told, err = rec.Unmatched(ctx)
	require.NoError(t, err)
	assert.Zero(t, told)
	started, err = rec.Webhooks(ctx)
	require.NoError(t, err)
	assert.Zero(t, started)
}
