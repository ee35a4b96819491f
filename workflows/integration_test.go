package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
func TestPaymentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
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
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.PaymentWorkflowID(paymentID), TaskQueue: taskQueue},
		workflows.PaymentWorkflowName, in)
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
}
