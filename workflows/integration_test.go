package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/workflows"
)

// liveChain is a chains.Client whose head advances one block every 100 ms
// of real time.
type liveChain struct {
	network paywatch.Network
	start   time.Time
	base    uint64
}

func (c *liveChain) head() uint64                         { return c.base + uint64(time.Since(c.start)/(100*time.Millisecond)) }
func (c *liveChain) Network() paywatch.Network            { return c.network }
func (c *liveChain) Head(context.Context) (uint64, error) { return c.head(), nil }
func (c *liveChain) BlockHash(_ context.Context, n uint64) (string, error) {
	if n > c.head() {
		return "", chains.ErrBlockNotFound
	}
	return blockHash(n), nil
}
func (c *liveChain) Transfers(context.Context, uint64, uint64) ([]chains.Transfer, error) {
	return nil, nil
}
func (c *liveChain) TransactionTransfers(context.Context, string) ([]chains.Transfer, bool, error) {
	return nil, false, nil
}
func (c *liveChain) AddressTransfers(context.Context, string, uint64) ([]chains.Transfer, error) {
	return nil, nil
}
func (c *liveChain) Close() {}

type oneChain struct{ c chains.Client }

func (o oneChain) Client(n paywatch.Network) (chains.Client, error) {
	if n != o.c.Network() {
		return nil, errors.New("no such chain")
	}
	return o.c, nil
}

func blockHash(n uint64) string { return "0xblock" + time.Unix(int64(n), 0).UTC().Format("150405") }

// End to end on a real Temporal server with the real activities and
// PostgreSQL: a transfer signal makes the payment confirming, the
// confirmations come, it is paid and a signed payment.completed arrives.
// It runs for a payment that takes its shape from version markers and for
// a lean one (LeanLifecycle), whose webhook's first attempt is its own.
func TestPaymentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Run("markers", func(t *testing.T) { paymentEndToEnd(t, 0) })
	t.Run("lean", func(t *testing.T) { paymentEndToEnd(t, workflows.LeanLifecycle) })
}

func paymentEndToEnd(t *testing.T, lifecycle int) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// A webhook receiver that verifies signatures.
	const secret = "whsec_e2e"
	var mu sync.Mutex
	var received []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := paywatch.VerifyWebhookRequest(secret, r, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		received = append(received, m)
		mu.Unlock()
	}))
	defer srv.Close()

	// PostgreSQL rows: account, project, payment on ARBITRUM (40 confirmations).
	pool := storetest.NewPool(t)
	var accountID, projectID int64
	var paymentID string
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO accounts (email, plan) VALUES ('e2e@example.com', 'pro') RETURNING id`).Scan(&accountID))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO projects (slug, name, owner_id, webhook_url, webhook_secret) VALUES ('e2e', 'E2E', $1, $2, $3) RETURNING id`,
		accountID, srv.URL+"/webhooks", secret).Scan(&projectID))
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	require.NoError(t, pool.QueryRow(ctx, `
		INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, external_order_id, expires_at, start_block)
		VALUES (gen_random_uuid(), $1, 'per_payment', 'ARBITRUM', 'USDT', $2, 12500000, 6, 'cust-9', 'order-9', $3, 1000)
		RETURNING id::text`, projectID, address, expires).Scan(&paymentID))

	chain := &liveChain{network: paywatch.ARBITRUM, start: time.Now(), base: 1000}
	acts := activities.New(activities.Deps{
		Store:        store.New(pool),
		Chains:       oneChain{chain},
		HTTPClient:   webhooks.NewClient(5*time.Second, true),
		AllowPrivate: true,
	})

	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()), "idempotent")
	const taskQueue = "payments"
	ts.NewWorker(taskQueue, func(r worker.Registry) { workflows.Register(r, acts) })

	orderID := "order-9"
	in := paywatch.PaymentInput{
		PaymentID: paymentID, ProjectID: projectID, ProjectSlug: "e2e", Mode: paywatch.ModePerPayment,
		Network: paywatch.ARBITRUM, Token: paywatch.USDT, Address: address, StartBlock: 1000,
		Amount: paywatch.MustParseAmount("12.50", 6), ExternalRef: "cust-9", ExternalOrderID: &orderID,
		CreatedAt: time.Now().UTC(), ExpiresAt: expires, AddressAssignedAt: time.Now().UTC(),
		Lifecycle: lifecycle,
	}
	// Started as the API starts it (payments.TemporalWorkflows.Start).
	attrs, memo := workflows.StartAttributes(in)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.PaymentWorkflowID(paymentID), TaskQueue: taskQueue,
		TypedSearchAttributes: attrs, Memo: memo}, workflows.PaymentWorkflowType(lifecycle), in)
	require.NoError(t, err)

	// The transfer was mined 30 blocks ago: 31 confirmations of 40, so the
	// payment shows confirming for about 9 × 250 ms, until the scanner (the
	// test plays it here) signals the block that gives the 40th.
	h := chain.head() - 30
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", workflows.SignalTransferSeen, paywatch.Transaction{
		TxHash: "0xe2e", BlockNumber: h, BlockHash: blockHash(h), From: "0xpayer", Amount: paywatch.MustParseAmount("12.50", 6),
	}))
	sawConfirming := false
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryState)
		if err != nil {
			return false
		}
		var st paywatch.PaymentState
		if v.Get(&st) != nil {
			return false
		}
		sawConfirming = sawConfirming || st.Status == paywatch.StatusConfirming
		return st.Status == paywatch.StatusConfirming || st.Status == paywatch.StatusPaid
	}, 15*time.Second, 50*time.Millisecond)
	assert.True(t, sawConfirming, "the payment is confirming while confirmations come")

	// The saved state made the transfer an awaited confirmation, which is
	// what the network's scanner reads.
	require.Eventually(t, func() bool {
		var block int64
		err := pool.QueryRow(ctx, `SELECT block_number FROM awaited_confirmations WHERE payment_id = $1 AND tx_hash = '0xe2e'`, paymentID).Scan(&block)
		return err == nil && uint64(block) == h
	}, 15*time.Second, 20*time.Millisecond, "the transfer awaits its confirmations")
	require.Eventually(t, func() bool { return chain.head() >= h+39 }, 15*time.Second, 20*time.Millisecond)
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", workflows.SignalTransfersConfirmed, workflows.TransfersConfirmed{
		Transfers: []workflows.TransferConfirmed{{TxHash: "0xe2e", BlockNumber: h, BlockHash: blockHash(h), Confirmations: int(chain.head() - h + 1), Canonical: true}},
	}))

	require.NoError(t, run.Get(ctx, nil), "the workflow ends once paid and notified")

	mu.Lock()
	require.Len(t, received, 1)
	hook := received[0]
	mu.Unlock()
	assert.Equal(t, "payment.completed", hook["event"])
	assert.Equal(t, paymentID, hook["payment_id"])
	assert.Equal(t, "paid", hook["status"])
	assert.Equal(t, "12.50", hook["paid_amount"])
	assert.Equal(t, "order-9", hook["external_order_id"])
	assert.Equal(t, workflows.EventID(paymentID, 1), hook["event_id"])

	var status, paid string
	var version int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT status, paid_amount::text, state_version FROM payments WHERE id = $1`, paymentID).Scan(&status, &paid, &version))
	assert.Equal(t, "paid", status)
	assert.Equal(t, "12500000", paid)
	assert.Positive(t, version)
	var awaited int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM awaited_confirmations WHERE payment_id = $1`, paymentID).Scan(&awaited))
	assert.Zero(t, awaited, "a confirmed transfer is awaited no more")
	var state string
	require.NoError(t, pool.QueryRow(ctx, `SELECT state FROM webhook_events WHERE payment_id = $1`, paymentID).Scan(&state))
	assert.Equal(t, "delivered", state)

	desc, err := c.DescribeWorkflowExecution(ctx, run.GetID(), "")
	require.NoError(t, err)
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	assert.Contains(t, string(sa["PaymentStatus"].GetData()), "paid")
	assert.Contains(t, string(sa["ProjectSlug"].GetData()), "e2e")
	assert.Contains(t, string(desc.GetWorkflowExecutionInfo().GetMemo().GetFields()["address"].GetData()), address)

	// It started with its search attributes, so the first upsert is the
	// first status change's (confirming), after the transfer's signal: the
	// start saved one.
	events := history(ctx, t, c, run.GetID())
	upsert := slices.IndexFunc(events, publishes)
	signal := slices.IndexFunc(events, func(ev *historypb.HistoryEvent) bool {
		return ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
	})
	require.NotEqual(t, -1, upsert)
	assert.Greater(t, upsert, signal, "no upsert before the first status change")
	if lifecycle >= workflows.LeanLifecycle {
		for _, ev := range events {
			assert.NotEqual(t, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, ev.GetEventType(), "writes are local activities")
			assert.NotEqual(t, enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, ev.GetEventType(),
				"a delivered first attempt needs no webhook workflow")
			if m := ev.GetMarkerRecordedEventAttributes(); m != nil {
				assert.Equal(t, "LocalActivity", m.GetMarkerName(), "no version marker")
			}
		}
	}

	// The history of this paid lifecycle, recorded by today's code
	// (changeCurrent), replays with it.
	r := worker.NewWorkflowReplayer()
	workflows.Register(replayRegistry{replayer: r}, &activities.Activities{})
	require.NoError(t, r.ReplayWorkflowHistory(nil, &historypb.History{Events: events}))
}

// history returns the events of a workflow's current run.
func history(ctx context.Context, t *testing.T, c client.Client, id string) []*historypb.HistoryEvent {
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	return events
}

// publishes reports whether ev upserts the payment's own search attributes
// (not the SDK's TemporalChangeVersion, which comes with a version marker).
func publishes(ev *historypb.HistoryEvent) bool {
	_, ok := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()["PaymentStatus"]
	return ok
}

// A payment workflow started without search attributes (by a client older
// than StartAttributes) publishes them itself when it starts, and one started
// with them shows them at once; both show what the Web UI filters on.
func TestPaymentStartAttributes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chain := &liveChain{network: paywatch.ARBITRUM, start: time.Now(), base: 1000}
	acts := activities.New(activities.Deps{Store: store.New(storetest.NewPool(t)), Chains: oneChain{chain}})
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))
	ts.NewWorker("payments", func(r worker.Registry) { workflows.Register(r, acts) })

	orderID := "order-sa"
	in := paywatch.PaymentInput{
		ProjectSlug: "shop", Mode: paywatch.ModePerPayment,
		Network: paywatch.ARBITRUM, Token: paywatch.USDC, Address: address, StartBlock: 1000,
		Amount: paywatch.MustParseAmount("7.25", 6), ExternalRef: "cust-sa", ExternalOrderID: &orderID,
		CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().Add(time.Hour), AddressAssignedAt: time.Now().UTC(),
	}
	for _, withAttrs := range []bool{false, true} {
		in.PaymentID = uuid.NewString()
		opts := client.StartWorkflowOptions{ID: workflows.PaymentWorkflowID(in.PaymentID), TaskQueue: "payments"}
		if withAttrs {
			opts.TypedSearchAttributes, opts.Memo = workflows.StartAttributes(in)
		}
		run, err := c.ExecuteWorkflow(ctx, opts, workflows.PaymentWorkflowName, in)
		require.NoError(t, err)
		// The first workflow task has completed once the state query answers.
		require.Eventually(t, func() bool {
			_, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryState)
			return err == nil
		}, 20*time.Second, 20*time.Millisecond)
		upserts, markers := 0, 0
		for _, ev := range history(ctx, t, c, run.GetID()) {
			if publishes(ev) {
				upserts++
			}
			if ev.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
				markers++
			}
		}
		if withAttrs {
			assert.Zero(t, upserts, "started with its attributes: nothing to upsert")
		} else {
			assert.Equal(t, 1, upserts, "started without: published in setup")
		}
		assert.Equal(t, 3, markers, "the version markers of setup, and no further one for the start attributes")
		desc, err := c.DescribeWorkflowExecution(ctx, run.GetID(), "")
		require.NoError(t, err)
		info := desc.GetWorkflowExecutionInfo()
		sa := info.GetSearchAttributes().GetIndexedFields()
		for name, want := range map[string]string{"PaymentStatus": "pending", "ProjectSlug": "shop", "Network": "ARBITRUM",
			"Token": "USDC", "ExternalRef": "cust-sa", "ExternalOrderId": "order-sa"} {
			assert.Equal(t, `"`+want+`"`, string(sa[name].GetData()), "withAttrs %v: %s", withAttrs, name)
		}
		memo := info.GetMemo().GetFields()
		assert.Equal(t, `"7.25"`, string(memo["amount"].GetData()), "withAttrs %v", withAttrs)
		assert.Equal(t, `"`+address+`"`, string(memo["address"].GetData()), "withAttrs %v", withAttrs)
		require.NoError(t, c.TerminateWorkflow(ctx, run.GetID(), "", "test done"))
	}
}

// downChain is a liveChain whose RPC endpoints are down (every address
// lookup fails) until up is set, and which then has paid holds one
// transfer to the payment's address.
type downChain struct {
	*liveChain
	up   atomic.Bool
	fail atomic.Int32 // lookups that failed
	paid chains.Transfer
}

func (c *downChain) AddressTransfers(_ context.Context, to string, from uint64) ([]chains.Transfer, error) {
	if !c.up.Load() {
		c.fail.Add(1)
		return nil, errors.New("dial tcp: connection refused")
	}
	if c.paid.BlockNumber < from || !strings.EqualFold(c.paid.To, to) {
		return nil, nil
	}
	return []chains.Transfer{c.paid}, nil
}

// Issue 24, item 1, end to end on a real Temporal server: no worker runs
// from before the payment's deadline until 40 minutes after it (the
// payment starts with its window long over and no worker polling), the
// customer paid on time, and the first on-chain check after the worker
// starts fails. The payment waits and is paid on time, not expired.
func TestPaymentSurvivesAnOutagePastTheDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool := storetest.NewPool(t)
	var projectID int64
	var paymentID string
	require.NoError(t, pool.QueryRow(ctx, `WITH a AS (INSERT INTO accounts (email, plan) VALUES ('outage@example.com', 'pro') RETURNING id)
		INSERT INTO projects (slug, name, owner_id) SELECT 'outage', 'Outage', id FROM a RETURNING id`).Scan(&projectID))
	expires := time.Now().Add(-40 * time.Minute).UTC().Truncate(time.Second)
	require.NoError(t, pool.QueryRow(ctx, `
		INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at, start_block)
		VALUES (gen_random_uuid(), $1, 'per_user', 'ARBITRUM', 'USDT', $2, 12500000, 6, 'cust-o', $3, 1000)
		RETURNING id::text`, projectID, address, expires).Scan(&paymentID))

	live := &liveChain{network: paywatch.ARBITRUM, start: time.Now(), base: 1100}
	chain := &downChain{liveChain: live, paid: chains.Transfer{
		Network: paywatch.ARBITRUM, Token: paywatch.USDT, TxHash: "0xontime", BlockNumber: 1001, BlockHash: blockHash(1001),
		From: "0xpayer", To: address, Amount: big.NewInt(12_500_000),
	}}
	acts := activities.New(activities.Deps{Store: store.New(pool), Chains: oneChain{chain}})
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))

	in := paywatch.PaymentInput{
		PaymentID: paymentID, ProjectID: projectID, ProjectSlug: "outage", Mode: paywatch.ModePerUser,
		Network: paywatch.ARBITRUM, Token: paywatch.USDT, Address: address, StartBlock: 1000,
		Amount: paywatch.MustParseAmount("12.50", 6), ExternalRef: "cust-o",
		CreatedAt: expires.Add(-time.Hour), ExpiresAt: expires, AddressAssignedAt: expires.Add(-time.Hour),
	}
	attrs, memo := workflows.StartAttributes(in)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.PaymentWorkflowID(paymentID), TaskQueue: "outage",
		TypedSearchAttributes: attrs, Memo: memo}, workflows.PaymentWorkflowName, in)
	require.NoError(t, err)

	// The worker comes back; the chain is still unreachable for its first
	// check (the activity's 4 attempts), then answers.
	ts.NewWorker("outage", func(r worker.Registry) { workflows.Register(r, acts) })
	require.Eventually(t, func() bool { return chain.fail.Load() >= 4 }, 2*time.Minute, 50*time.Millisecond, "the first check fails")
	chain.up.Store(true)
	state := func() paywatch.PaymentState {
		var st paywatch.PaymentState
		v, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryState)
		if err == nil {
			_ = v.Get(&st)
		}
		return st
	}
	assert.Equal(t, paywatch.StatusPending, state().Status, "a failed check after the outage does not expire the payment")
	// The next check, a minute later, finds the on-time transfer; its
	// confirming grace is long over too, so the chain is asked at once how
	// deep it is, and it is paid.
	require.NoError(t, run.Get(ctx, nil))
	var status string
	var late bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT status, late_payment FROM payments WHERE id = $1`, paymentID).Scan(&status, &late))
	assert.Equal(t, "paid", status)
	assert.False(t, late, "paid on time")
}
