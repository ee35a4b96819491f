package workflows_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/workflows"
)

// TestRecordReplayHistories records the histories TestReplayRecordedHistories
// replays: the real PaymentWorkflow on an in-process Temporal server, with
// the real activities over PostgreSQL, a scripted chain and a webhook
// receiver, driven through each lifecycle path the way the API and the
// scanners drive it (start input from the store's payment row, signals,
// updates). It runs only with PAYWATCH_RECORD_HISTORIES=1, so `make test`
// never rewrites the files:
//
//	PAYWATCH_RECORD_HISTORIES=1 go test ./workflows -run TestRecordReplayHistories
//
// Real time cannot be skipped on a real server, so the time-dependent paths
// are driven by their inputs: a payment created with its window already
// over (expires_at more than PendingShownExpiredAfter ago) reaches its
// deadline at once. The chain makes a block every 100 ms and the
// confirmation waits use that block time, so a transfer mined a few blocks
// short of its confirmations counts within a second.
//
// A change that breaks the replay of a recorded history needs a
// workflow.GetVersion helper (versions.go), not a re-recording. Re-record
// to show the paths of a new version; the recording overwrites the files
// of its paths and leaves any other, so rename the old ones first (for
// example paid-v1.json) while runs of the old version may still be open.
//
// PAYWATCH_RECORD_HISTORIES=lean records the same paths for lean payments
// (LeanLifecycle), each as its name with "-lean".
func TestRecordReplayHistories(t *testing.T) {
	mode := os.Getenv("PAYWATCH_RECORD_HISTORIES")
	if mode != "1" && mode != "lean" {
		t.Skip("set PAYWATCH_RECORD_HISTORIES=1 (or lean) to record the replay histories into " + replayHistoryDir)
	}
	e := newRecorder(t)
	if mode == "lean" {
		e.lifecycle, e.suffix = workflows.LeanLifecycle, leanSuffix
	}

	// The paths are independent payments: record them side by side.
	t.Run("lifecycle", func(t *testing.T) {
		for _, p := range []struct {
			name string
			run  func(*testing.T, *recorder)
		}{
			{"paid", recordPaid},
			{"partial-topped-up", recordPartialToppedUp},
			{"overpaid", recordOverpaid},
			{"expired", recordExpired},
			{"late-paid", recordLatePaid},
			{"cancelled", recordCancelled},
			{"pool-txid", recordPoolTxID},
			{"reorg", recordReorg},
			{"select-network", recordSelectNetwork},
		} {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				p.run(t, e)
			})
		}
	})
	// Continue-as-new lowers the server's history limit, so it runs alone.
	t.Run("continue-as-new", func(t *testing.T) { recordContinueAsNew(t, e) })

	if t.Failed() {
		t.Fatal("not all paths recorded; " + replayHistoryDir + " is left unchanged")
	}
	e.save(t)
}

// recordPaid: a transfer of the full amount is seen, confirms, and the
// payment is paid (payment.completed). Its webhook delivery is recorded
// too, where a webhook workflow makes it (a lean run makes it itself).
func recordPaid(t *testing.T, e *recorder) {
	p := e.create(t, e.perPayment, e.newPayment("paid", "12.50", paywatch.ARBITRUM), time.Now())
	run := e.start(t, p)
	e.seen(t, p, e.transfer(p, "paid", 0, "12.50", 35))
	e.finish(t, run, p, "paid", paywatch.StatusPaid)
	if e.lifecycle < workflows.LeanLifecycle { // a lean run delivered it itself
		e.take(t, "webhook-delivered", workflows.WebhookWorkflowID(workflows.EventID(p.ID, 1)), "")
	}
}

// recordPartialToppedUp: a first transfer confirms short of the amount
// (partial), a second one tops it up (paid).
func recordPartialToppedUp(t *testing.T, e *recorder) {
	p := e.create(t, e.perPayment, e.newPayment("partial-topped-up", "30.00", paywatch.ARBITRUM), time.Now())
	run := e.start(t, p)
	e.seen(t, p, e.transfer(p, "first", 0, "10.00", 39))
	e.waitStatus(t, p, paywatch.StatusPartial)
	e.seen(t, p, e.transfer(p, "top-up", 0, "20.00", 35))
	e.finish(t, run, p, "partial-topped-up", paywatch.StatusPaid)
}

// recordOverpaid: one transfer above the amount.
func recordOverpaid(t *testing.T, e *recorder) {
	p := e.create(t, e.perPayment, e.newPayment("overpaid", "20.00", paywatch.ARBITRUM), time.Now())
	run := e.start(t, p)
	e.seen(t, p, e.transfer(p, "overpaid", 0, "25.00", 37))
	e.finish(t, run, p, "overpaid", paywatch.StatusOverpaid)
}

// recordExpired: a pool + micro_amount payment (no late window) whose
// window is over when its workflow starts: the final on-chain check finds
// nothing, it expires (payment.expired), its micro offset is released and
// the workflow ends.
func recordExpired(t *testing.T, e *recorder) {
	np := e.newPayment("expired", "25.00", paywatch.ARBITRUM)
	np.ExpiresIn = 5 * time.Minute
	p := e.create(t, e.microPool, np, time.Now().Add(-10*time.Minute))
	run := e.start(t, p)
	e.finish(t, run, p, "expired", paywatch.StatusExpired)
}

// recordLatePaid: a per_payment payment expires (final check, then
// payment.expired), waits in its late window, and a full transfer then
// pays it late (payment.completed with late_payment).
func recordLatePaid(t *testing.T, e *recorder) {
	np := e.newPayment("late-paid", "15.00", paywatch.ARBITRUM)
	np.ExpiresIn = 5 * time.Minute
	p := e.create(t, e.perPayment, np, time.Now().Add(-10*time.Minute))
	run := e.start(t, p)
	e.waitStatus(t, p, paywatch.StatusExpired)
	e.seen(t, p, e.transfer(p, "late", 0, "15.00", 36))
	e.finish(t, run, p, "late-paid", paywatch.StatusPaid)
	got, err := e.store.PaymentByID(e.ctx, p.ID)
	require.NoError(t, err)
	assert.True(t, got.LatePayment, "late_payment")
}

// recordCancelled: the cancel update of a pending payment
// (payment.cancelled). The receiver fails the webhook's first attempt, so
// its delivery, a retry after 10 s, is recorded too.
func recordCancelled(t *testing.T, e *recorder) {
	p := e.create(t, e.perPayment, e.newPayment("cancelled", "15.00", paywatch.ARBITRUM), time.Now())
	e.failFirstAttempt(p.ID)
	run := e.start(t, p)
	var st paywatch.PaymentState
	e.update(t, p, workflows.UpdateCancel, workflows.CancelRequest{}, &st)
	assert.Equal(t, paywatch.StatusCancelled, st.Status)
	e.finish(t, run, p, "cancelled", paywatch.StatusCancelled)
	e.take(t, "webhook-retried", workflows.WebhookWorkflowID(workflows.EventID(p.ID, 1)), "")
}

// recordPoolTxID: a pool + txid payment gets a hash that is not on chain
// yet (recorded for a re-check), then one that is: verified, claimed,
// confirming, paid.
func recordPoolTxID(t *testing.T, e *recorder) {
	p := e.create(t, e.txidPool, e.newPayment("pool-txid", "40.00", paywatch.ARBITRUM), time.Now())
	run := e.start(t, p)
	var res workflows.SubmitTxHashResult
	e.update(t, p, workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: recTxHash(p.ID, "not-mined-yet")}, &res)
	assert.False(t, res.Verified, "a hash not on chain is recorded for a re-check")
	ts := e.transfer(p, "submitted", 0, "40.00", 35)
	e.chain.mine(p, ts)
	e.update(t, p, workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: ts.TxHash}, &res)
	assert.True(t, res.Verified, "a hash on chain is verified at once")
	e.confirmWhenDue(p, ts)
	e.finish(t, run, p, "pool-txid", paywatch.StatusPaid)
}

// recordReorg: a counted transfer is removed by a reorg before it confirms
// (pending again); the same transaction mined again in another block pays.
func recordReorg(t *testing.T, e *recorder) {
	p := e.create(t, e.perPayment, e.newPayment("reorg", "18.00", paywatch.ARBITRUM), time.Now())
	run := e.start(t, p)
	first := e.transfer(p, "reorged", 0, "18.00", 3)
	e.signal(t, p, workflows.SignalTransferSeen, first) // removed before it confirms
	e.waitStatus(t, p, paywatch.StatusConfirming)
	e.signal(t, p, workflows.SignalTransferRemoved, workflows.TransferRemoved{
		TxHash: first.TxHash, LogIndex: first.LogIndex, BlockNumber: first.BlockNumber, BlockHash: first.BlockHash,
	})
	e.waitStatus(t, p, paywatch.StatusPending)
	e.seen(t, p, e.transfer(p, "reorged", 0, "18.00", 36))
	e.finish(t, run, p, "reorg", paywatch.StatusPaid)
}

// recordSelectNetwork: a payment created without a network gets one from
// the hosted page's select-network update, then is paid on it.
func recordSelectNetwork(t *testing.T, e *recorder) {
	p := e.create(t, e.perPayment, e.newPayment("select-network", "20.00", ""), time.Now())
	require.True(t, p.AwaitingNetwork())
	run := e.start(t, p)
	var a paywatch.Assignment
	e.update(t, p, workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ARBITRUM, Token: paywatch.USDT}, &a)
	require.NotEmpty(t, a.Address)
	p.Network, p.Token, p.Address = a.Network, a.Token, a.Address
	e.seen(t, p, e.transfer(p, "selected", 0, "20.00", 35))
	e.finish(t, run, p, "select-network", paywatch.StatusPaid)
}

// recordContinueAsNew: a partial payment whose history grew past the
// server's limit continues as new with its state, and the new run is paid.
// The limit (limit.historyCount.suggestContinueAsNew, 4096 events by
// default) is lowered to the first run's length only while that run
// decides, so the suggestion arrives the way a long history gets it, after
// a few events rather than thousands. Both runs are recorded:
// continue-as-new (ending in ContinuedAsNew) and continue-as-new-carried
// (starting from the carried state).
func recordContinueAsNew(t *testing.T, e *recorder) {
	p := e.create(t, e.perPayment, e.newPayment("continue-as-new", "50.00", paywatch.ARBITRUM), time.Now())
	run := e.start(t, p)
	id, first := workflows.PaymentWorkflowID(p.ID), run.GetRunID() // run follows the chain of runs
	e.seen(t, p, e.transfer(p, "small-1", 0, "10.00", 39))
	e.waitStatus(t, p, paywatch.StatusPartial)
	e.waitIdle(t, id, first)

	desc, err := e.client.DescribeWorkflowExecution(e.ctx, id, first)
	require.NoError(t, err)
	limit := int(desc.GetWorkflowExecutionInfo().GetHistoryLength())
	restore := e.dc.OverrideSetting(dynamicconfig.HistoryCountSuggestContinueAsNew,
		[]dynamicconfig.ConstrainedValue{{Constraints: dynamicconfig.Constraints{Namespace: e.namespace}, Value: limit}})
	e.seen(t, p, e.transfer(p, "small-2", 0, "10.00", 39))
	require.Eventually(t, func() bool {
		d, err := e.client.DescribeWorkflowExecution(e.ctx, id, first)
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
	}, 20*time.Second, 10*time.Millisecond, "the first run continues as new")
	restore()

	desc, err = e.client.DescribeWorkflowExecution(e.ctx, id, "")
	require.NoError(t, err)
	next := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	require.NotEqual(t, first, next)
	e.waitStatus(t, p, paywatch.StatusPartial)
	e.seen(t, p, e.transfer(p, "rest", 0, "30.00", 38))
	require.NoError(t, run.Get(e.ctx, nil), "the carried run ends paid")
	desc, err = e.client.DescribeWorkflowExecution(e.ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, next, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(),
		"the carried run continued as new again; record once more")
	e.assertStatus(t, p, paywatch.StatusPaid)
	e.take(t, "continue-as-new", id, first)
	e.take(t, "continue-as-new-carried", id, next)
}

// recorder is the environment the paths share.
type recorder struct {
	ctx       context.Context
	pool      *pgxpool.Pool
	store     *store.Store
	chain     *recChain
	client    client.Client
	dc        *dynamicconfig.MemoryClient
	namespace string
	taskQueue string

	perPayment, txidPool, microPool *store.Project
	// refKey, when set, hashes the reference search attributes payments
	// start with, as the API does (recordSealed).
	refKey []byte
	// lifecycle is the Lifecycle of the payments start starts, and suffix
	// is added to the name of each history take keeps.
	lifecycle int
	suffix    string

	mu       sync.Mutex
	failOnce map[string]bool // payment ids whose webhooks fail their first attempt
	attempts map[string]int  // delivery attempts per event id
	recorded map[string][]byte
}

// Static pool addresses of the recorder's wallets (ARBITRUM).
const (
	recTxIDAddress  = "0x7a16ff8270133f063aab6c9977183d9e72835428"
	recMicroAddress = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
)

// recorderOption configures newRecorder.
type recorderOption func(*recorderOptions)

type recorderOptions struct {
	timeout time.Duration
	codec   *workflows.PayloadCodec
	refKey  []byte
}

// recordFor bounds the recorder's context (3 minutes unless told).
func recordFor(d time.Duration) recorderOption {
	return func(o *recorderOptions) { o.timeout = d }
}

// recordSealed seals every payload as a production service does: the
// client and the worker's registration use workflows.NewDataConverter
// with codec, and payments start with their reference search attributes
// hashed under refKey (payments.TemporalWorkflows).
func recordSealed(codec *workflows.PayloadCodec, refKey []byte) recorderOption {
	return func(o *recorderOptions) { o.codec, o.refKey = codec, refKey }
}

func newRecorder(t testing.TB, opts ...recorderOption) *recorder {
	o := recorderOptions{timeout: 3 * time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	t.Cleanup(cancel)
	e := &recorder{
		ctx: ctx, taskQueue: "payments",
		failOnce: map[string]bool{}, attempts: map[string]int{}, recorded: map[string][]byte{},
	}

	// The webhook receiver answers 200, except a first attempt of the
	// events of a failOnce payment, which gets 500.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var hook struct {
			EventID   string `json:"event_id"`
			PaymentID string `json:"payment_id"`
		}
		_ = json.Unmarshal(body, &hook)
		e.mu.Lock()
		e.attempts[hook.EventID]++
		fail := e.failOnce[hook.PaymentID] && e.attempts[hook.EventID] == 1
		e.mu.Unlock()
		if fail {
			http.Error(w, "try again", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)

	pool := storetest.NewPool(t)
	e.pool = pool
	e.store = store.New(pool)
	e.chain = &recChain{start: time.Now(), base: 5_000, txs: map[string][]chains.Transfer{}}

	email := "recorder@example.com"
	_, err := e.store.CreateAccount(ctx, email, paywatch.PlanPro)
	require.NoError(t, err)
	hook := srv.URL + "/webhooks"
	project := func(slug string, mode paywatch.AddressMode, matching paywatch.PoolMatching, w store.WalletUpdate) *store.Project {
		ps := store.ProjectSettings{OwnerEmail: &email, WebhookURL: &hook, AddressMode: &mode}
		if matching != "" {
			ps.PoolMatching = &matching
		}
		_, _, err := e.store.CreateProject(ctx, store.NewProject{Slug: slug, Settings: ps})
		require.NoError(t, err)
		_, prj, err := e.store.PutWallet(ctx, slug, w)
		require.NoError(t, err)
		return prj
	}
	// The BIP39 test mnemonic's account xpub m/44'/60'/0'.
	xpub := "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt"
	e.perPayment = project("rec-per-payment", paywatch.ModePerPayment, "", store.WalletUpdate{XPubs: map[string]*string{"evm": &xpub}})
	e.txidPool = project("rec-txid", paywatch.ModePool, paywatch.MatchTxID,
		store.WalletUpdate{Addresses: map[string][]string{string(paywatch.ARBITRUM): {recTxIDAddress}}})
	e.microPool = project("rec-micro", paywatch.ModePool, paywatch.MatchMicroAmount,
		store.WalletUpdate{Addresses: map[string][]string{string(paywatch.ARBITRUM): {recMicroAddress}}})

	acts := activities.New(activities.Deps{
		Store:        e.store,
		Chains:       e.chain,
		HTTPClient:   webhooks.NewClient(5*time.Second, true),
		AllowPrivate: true,
		BlockTimes:   map[paywatch.Network]time.Duration{paywatch.ARBITRUM: recBlockTime},
	})

	// A memory dynamic config, so continue-as-new can lower the history
	// limit for a moment; it keeps temporaltest's own setting.
	e.dc = dynamicconfig.NewMemoryClient()
	e.dc.OverrideSetting(dynamicconfig.ForceSearchAttributesCacheRefreshOnRead, true)
	// A fixed identity, so the files name no host.
	copts := client.Options{Identity: "paywatch-history-recorder"}
	var ropts []workflows.RegisterOption
	if o.codec != nil {
		copts.DataConverter = workflows.NewDataConverter(o.codec)
		copts.FailureConverter = workflows.NewFailureConverter(copts.DataConverter)
		ropts = append(ropts, workflows.WithDataConverter(copts.DataConverter))
		e.refKey = o.refKey
	}
	sopts := []temporaltest.TestServerOption{
		temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(e.dc)),
		temporaltest.WithBaseClientOptions(copts),
	}
	tt, isT := t.(*testing.T)
	if isT {
		sopts = append(sopts, temporaltest.WithT(tt))
	}
	ts := temporaltest.NewServer(sopts...)
	if !isT {
		t.Cleanup(ts.Stop) // WithT, which would, takes a *testing.T only
	}
	e.client = ts.GetDefaultClient()
	e.namespace = ts.GetDefaultNamespace()
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, e.client, e.namespace))
	ts.NewWorker(e.taskQueue, func(r worker.Registry) { workflows.Register(r, acts, ropts...) })
	return e
}

// newPayment is a creation request of amount USDT on network ("" for the
// hosted page's selection).
func (e *recorder) newPayment(ref, amount string, network paywatch.Network) store.NewPayment {
	decimals := 6 // a network-less amount has the fewest decimals of any token
	if network != "" {
		decimals = paywatch.Decimals(network, paywatch.USDT)
	}
	return store.NewPayment{
		Amount: paywatch.MustParseAmount(amount, decimals), ExternalRef: "cust-" + ref,
		Network: network, Token: paywatch.USDT,
	}
}

// create writes the payment row as POST /v1/payments does, as of time at.
func (e *recorder) create(t testing.TB, prj *store.Project, np store.NewPayment, at time.Time) *store.Payment {
	t.Helper()
	np.ProjectID = prj.ID
	p, existing, err := store.New(e.pool, store.WithClock(func() time.Time { return at })).CreatePayment(e.ctx, np)
	require.NoError(t, err)
	require.False(t, existing)
	return p
}

// start starts the payment's workflow with the options and input the API
// uses (payments.TemporalWorkflows.Start).
func (e *recorder) start(t testing.TB, p *store.Payment) client.WorkflowRun {
	t.Helper()
	return e.startLifecycle(t, p, e.lifecycle)
}

// startLifecycle is start with the input's Lifecycle set to lifecycle.
func (e *recorder) startLifecycle(t testing.TB, p *store.Payment, lifecycle int) client.WorkflowRun {
	t.Helper()
	in := p.WorkflowInput()
	in.Lifecycle = lifecycle
	if e.refKey != nil {
		refs := &paywatch.SearchRefs{ExternalRef: workflows.SearchRef(e.refKey, in.ExternalRef)}
		if in.ExternalOrderID != nil {
			refs.ExternalOrderID = workflows.SearchRef(e.refKey, *in.ExternalOrderID)
		}
		in.SearchRefs = refs
	}
	attrs, memo := workflows.StartAttributes(in)
	run, err := e.client.ExecuteWorkflow(e.ctx, client.StartWorkflowOptions{
		ID:                       workflows.PaymentWorkflowID(p.ID),
		TaskQueue:                e.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    attrs,
		Memo:                     memo,
	}, workflows.PaymentWorkflowType(in.Lifecycle), in)
	require.NoError(t, err)
	require.NoError(t, e.store.MarkWorkflowStarted(e.ctx, p.ID))
	return run
}

// transfer is a USDT transfer to the payment's address, mined so that it
// has confs confirmations now.
func (e *recorder) transfer(p *store.Payment, label string, logIndex uint32, amount string, confs int) paywatch.Transaction {
	block := e.chain.head() - uint64(confs) + 1
	return paywatch.Transaction{
		TxHash: recTxHash(p.ID, label), LogIndex: logIndex, BlockNumber: block, BlockHash: recBlockHash(block),
		From: "0x90f79bf6eb2c4f870365e785982e1f101e93b906", Amount: paywatch.MustParseAmount(amount, paywatch.Decimals(paywatch.ARBITRUM, paywatch.USDT)),
	}
}

// seen signals a transfer as the scanner does, and then, once its block
// has the network's confirmations, the scanner's transfers-confirmed.
func (e *recorder) seen(t testing.TB, p *store.Payment, ts paywatch.Transaction) {
	t.Helper()
	e.signal(t, p, workflows.SignalTransferSeen, ts)
	e.confirmWhenDue(p, ts)
}

// confirmWhenDue plays the network's scanner for one transfer of p: once
// the head gives its block the network's confirmations, it signals
// transfers-confirmed for that block (the scanner reads the due rows after
// each poll). A payment that has ended by then is no longer signalled.
func (e *recorder) confirmWhenDue(p *store.Payment, ts paywatch.Transaction) {
	info, _ := paywatch.LookupNetwork(paywatch.ARBITRUM)
	need := uint64(info.Confirmations)
	go func() {
		for e.chain.head() < ts.BlockNumber+need-1 {
			if e.ctx.Err() != nil {
				return
			}
			time.Sleep(recBlockTime / 2)
		}
		_ = e.client.SignalWorkflow(e.ctx, workflows.PaymentWorkflowID(p.ID), "", workflows.SignalTransfersConfirmed,
			workflows.TransfersConfirmed{Transfers: []workflows.TransferConfirmed{{
				TxHash: ts.TxHash, LogIndex: ts.LogIndex, BlockNumber: ts.BlockNumber, BlockHash: ts.BlockHash,
				Confirmations: int(e.chain.head() - ts.BlockNumber + 1), Canonical: true,
			}}})
	}()
}

func (e *recorder) signal(t testing.TB, p *store.Payment, name string, arg any) {
	t.Helper()
	require.NoError(t, e.client.SignalWorkflow(e.ctx, workflows.PaymentWorkflowID(p.ID), "", name, arg))
}

// update sends an update and waits for its result, as the API does.
func (e *recorder) update(t testing.TB, p *store.Payment, name string, arg, result any) {
	t.Helper()
	h, err := e.client.UpdateWorkflow(e.ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflows.PaymentWorkflowID(p.ID),
		UpdateName:   name,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(t, err)
	require.NoError(t, h.Get(e.ctx, result), "update %s", name)
}

// waitStatus waits until the workflow's state has status s.
func (e *recorder) waitStatus(t testing.TB, p *store.Payment, s paywatch.Status) {
	t.Helper()
	require.Eventually(t, func() bool {
		v, err := e.client.QueryWorkflow(e.ctx, workflows.PaymentWorkflowID(p.ID), "", workflows.QueryState)
		if err != nil {
			return false
		}
		var st paywatch.PaymentState
		return v.Get(&st) == nil && st.Status == s
	}, 20*time.Second, 25*time.Millisecond, "payment %s never became %s", p.ID, s)
}

// waitIdle waits until a run has nothing in flight: no workflow task, no
// activity, no child workflow.
func (e *recorder) waitIdle(t testing.TB, id, runID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		d, err := e.client.DescribeWorkflowExecution(e.ctx, id, runID)
		return err == nil && d.GetPendingWorkflowTask() == nil && len(d.GetPendingActivities()) == 0 && len(d.GetPendingChildren()) == 0
	}, 20*time.Second, 25*time.Millisecond, "workflow %s never idle", id)
}

// finish waits for the workflow to end, checks the payment's final status
// and takes its history as name.
func (e *recorder) finish(t testing.TB, run client.WorkflowRun, p *store.Payment, name string, want paywatch.Status) {
	t.Helper()
	runID := run.GetRunID()
	require.NoError(t, run.Get(e.ctx, nil), "workflow of %s", name)
	e.assertStatus(t, p, want)
	e.take(t, name, run.GetID(), runID)
}

func (e *recorder) assertStatus(t testing.TB, p *store.Payment, want paywatch.Status) {
	t.Helper()
	got, err := e.store.PaymentByID(e.ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, want, got.Status, "stored status of %s", p.ID)
}

func (e *recorder) failFirstAttempt(paymentID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failOnce[paymentID] = true
}

// take reads the closed run's whole history and keeps it as name.json.
func (e *recorder) take(t testing.TB, name, workflowID, runID string) {
	t.Helper()
	name += e.suffix
	events := e.closedHistory(t, workflowID, runID)
	switch last := events[len(events)-1].GetEventType(); last {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
	default:
		t.Fatalf("history of %s ends with %s", name, last)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	require.NoError(t, err)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recorded[name] = append(data, '\n')
	t.Logf("%s: %d events", name, len(events))
}

// closedHistory waits for the run to close and reads its whole history.
func (e *recorder) closedHistory(t testing.TB, workflowID, runID string) []*historypb.HistoryEvent {
	t.Helper()
	require.Eventually(t, func() bool {
		d, err := e.client.DescribeWorkflowExecution(e.ctx, workflowID, runID)
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 25*time.Millisecond, "workflow %s still running", workflowID)
	return e.readHistory(t, workflowID, runID)
}

// readHistory reads the run's history as it stands, open or closed.
func (e *recorder) readHistory(t testing.TB, workflowID, runID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := e.client.GetWorkflowHistory(e.ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	require.NotEmpty(t, events)
	return events
}

// save writes the recorded histories, each over the file of its name, and
// replays each. Other files stay: a history recorded by an older release,
// kept under its own name, goes on proving that its runs still replay.
func (e *recorder) save(t *testing.T) {
	require.NoError(t, os.MkdirAll(replayHistoryDir, 0o755))
	for name, data := range e.recorded {
		f := filepath.Join(replayHistoryDir, name+".json")
		require.NoError(t, os.WriteFile(f, data, 0o644))
		t.Run("replay/"+name, func(t *testing.T) { replayHistoryFile(t, f) })
	}
}

// recBlockTime is the scripted chain's block interval.
const recBlockTime = 100 * time.Millisecond

// recChain is a scripted ARBITRUM chain: its head advances one block every
// recBlockTime of real time, every block is canonical, and transactions
// mined with mine are found by hash (pool + txid). The scanners' other
// reads find nothing.
type recChain struct {
	start time.Time
	base  uint64

	mu  sync.Mutex
	txs map[string][]chains.Transfer
}

func (c *recChain) Client(n paywatch.Network) (chains.Client, error) {
	if n != paywatch.ARBITRUM {
		return nil, fmt.Errorf("no %s chain in the recorder", n)
	}
	return c, nil
}

func (c *recChain) head() uint64                         { return c.base + uint64(time.Since(c.start)/recBlockTime) }
func (c *recChain) Network() paywatch.Network            { return paywatch.ARBITRUM }
func (c *recChain) Head(context.Context) (uint64, error) { return c.head(), nil }
func (c *recChain) BlockHash(_ context.Context, n uint64) (string, error) {
	if n > c.head() {
		return "", chains.ErrBlockNotFound
	}
	return recBlockHash(n), nil
}
func (c *recChain) Transfers(context.Context, uint64, uint64) ([]chains.Transfer, error) {
	return nil, nil
}
func (c *recChain) TransactionTransfers(_ context.Context, txHash string) ([]chains.Transfer, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts, ok := c.txs[txHash]
	return ts, ok, nil
}

// BlockTime is when block n was mined: one block every recBlockTime,
// block base at the chain's start. The close of a late window reads it.
func (c *recChain) BlockTime(_ context.Context, n uint64) (time.Time, error) {
	if n > c.head() {
		return time.Time{}, chains.ErrBlockNotFound
	}
	return c.start.Add(time.Duration(int64(n)-int64(c.base)) * recBlockTime), nil
}
func (c *recChain) AddressTransfers(context.Context, string, uint64) ([]chains.Transfer, error) {
	return nil, nil
}
func (c *recChain) Close() {}

// mine puts the transfer on chain as a USDT transfer to p's address.
func (c *recChain) mine(p *store.Payment, ts paywatch.Transaction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.txs[ts.TxHash] = append(c.txs[ts.TxHash], chains.Transfer{
		Network: paywatch.ARBITRUM, Token: paywatch.USDT, TxHash: ts.TxHash, LogIndex: ts.LogIndex,
		BlockNumber: ts.BlockNumber, BlockHash: ts.BlockHash, From: ts.From, To: p.Address,
		Amount: new(big.Int).Set(ts.Amount.Units()),
	})
}

// recTxHash is a transaction hash of the payment's, distinct per label.
func recTxHash(paymentID, label string) string {
	h := sha256.Sum256([]byte(paymentID + "/" + label))
	return "0x" + hex.EncodeToString(h[:])
}

// recBlockHash is the hash of block n.
func recBlockHash(n uint64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "block %d", n))
	return "0x" + hex.EncodeToString(h[:])
}
