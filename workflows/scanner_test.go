package workflows_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/workflows"
)

// The scanner end to end: real Temporal server (temporaltest), real
// PostgreSQL, devnet chains over their real protocols, the real scanner
// activity, and either the real payment workflow with its real activities or
// a recorder registered under the payment workflow's name.

const (
	scanQueue = "scanners"
	payQueue  = "payments"
	// scanPoll is the scanners' poll interval in these tests.
	scanPoll = 100 * time.Millisecond
)

var everyNetwork = []paywatch.Network{paywatch.TRC20, paywatch.BEP20, paywatch.ERC20, paywatch.POLYGON, paywatch.ARBITRUM}

// scanEnv is one test's world.
type scanEnv struct {
	t         *testing.T
	ctx       context.Context
	pool      *pgxpool.Pool
	store     *store.Store
	dn        *devnet.Devnet
	set       *chains.Set
	ts        *temporaltest.TestServer
	c         client.Client
	scanner   *activities.Scanner
	projectID int64

	hooksMu sync.Mutex
	hooks   []map[string]any
}

// envOptions shape a scanEnv.
type envOptions struct {
	// urls returns the RPC URLs of network n given its devnet URL ("" when
	// n has no devnet chain); nil means the devnet's alone.
	urls func(n paywatch.Network, devnetURL string) []string
	// noDevnet lists networks offered without a devnet chain.
	noDevnet []paywatch.Network
}

func newScanEnv(t *testing.T, nets []paywatch.Network, opts envOptions) *scanEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal server, devnet chains and PostgreSQL databases")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	e := &scanEnv{t: t, ctx: ctx}

	var devnets []paywatch.Network
	for _, n := range nets {
		if !slices.Contains(opts.noDevnet, n) {
			devnets = append(devnets, n)
		}
	}
	if len(devnets) > 0 {
		d, err := devnet.Start(ctx, devnet.Config{Networks: devnets})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		e.dn = d
	}
	var cfgs []chains.Config
	for _, n := range nets {
		cfg := chains.Config{Network: n}
		devURL := ""
		if e.dn != nil {
			if st, ok := e.dn.Network(n); ok {
				devURL, cfg.Contracts = st.RPCURL, st.Tokens
			}
		}
		if opts.urls != nil {
			cfg.URLs = opts.urls(n, devURL)
		} else {
			cfg.URLs = []string{devURL}
		}
		cfgs = append(cfgs, cfg)
	}
	set, err := chains.DialSet(ctx, cfgs...)
	require.NoError(t, err)
	t.Cleanup(set.Close)
	e.set = set

	e.pool = storetest.NewPool(t)
	e.store = store.New(e.pool, store.WithNetworks(nets))
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		e.hooksMu.Lock()
		e.hooks = append(e.hooks, m)
		e.hooksMu.Unlock()
	}))
	t.Cleanup(hookSrv.Close)
	var accountID int64
	require.NoError(t, e.pool.QueryRow(ctx, `INSERT INTO accounts (email, plan) VALUES ('scan@example.com', 'pro') RETURNING id`).Scan(&accountID))
	require.NoError(t, e.pool.QueryRow(ctx, `INSERT INTO projects (slug, name, owner_id, webhook_url, webhook_secret) VALUES ('scan', 'Scan', $1, $2, 'whsec_scan') RETURNING id`,
		accountID, hookSrv.URL+"/hooks").Scan(&e.projectID))
	// A payment that waits on every network from the start, and never
	// gets a transfer: these tests follow the scanners at block pace,
	// where a network on which nothing waits would idle
	// chains.RecentBlocks behind its head (activities' idle tests).
	for _, n := range nets {
		_, err := e.pool.Exec(ctx, `
			INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at, start_block, workflow_started)
			VALUES (gen_random_uuid(), $1, 'per_payment', $2, 'USDT', $3, 1, 6, 'keeper', now() + interval '1 day', 0, true)`,
			e.projectID, string(n), newAddress(t, n))
		require.NoError(t, err)
	}

	e.ts = temporaltest.NewServer(temporaltest.WithT(t))
	e.c = e.ts.GetDefaultClient()
	poll := map[paywatch.Network]time.Duration{}
	for _, n := range nets {
		poll[n] = scanPoll
	}
	e.scanner = activities.NewScanner(activities.ScannerDeps{
		Store: e.store, Chains: e.set, Signaler: e.c, PollInterval: poll, RPCTimeout: 3 * time.Second,
	})
	return e
}

// scannerWorker starts a worker that runs the scanners.
func (e *scanEnv) scannerWorker() worker.Worker {
	return e.ts.NewWorker(scanQueue, func(r worker.Registry) { workflows.RegisterScanner(r, e.scanner) })
}

// ensureScanner starts network n's scanner with test timings.
func (e *scanEnv) ensureScanner(n paywatch.Network) {
	e.t.Helper()
	require.NoError(e.t, workflows.EnsureScanner(e.ctx, e.c, scanQueue, workflows.ScannerInput{
		Network: n, RunFor: 5 * time.Second, HeartbeatTimeout: 5 * time.Second,
	}))
}

// recorderWorker starts a worker whose "payment workflow" records its signals.
func (e *scanEnv) recorderWorker() worker.Worker {
	return e.ts.NewWorker(payQueue, func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(recorderWorkflow, workflow.RegisterOptions{Name: workflows.PaymentWorkflowName})
	})
}

// paymentWorker starts a worker with the real payment workflow and activities.
func (e *scanEnv) paymentWorker() worker.Worker {
	require.NoError(e.t, workflows.EnsureSearchAttributes(e.ctx, e.c, e.ts.GetDefaultNamespace()))
	acts := activities.New(activities.Deps{
		Store: e.store, Chains: e.set, HTTPClient: webhooks.NewClient(5*time.Second, true), AllowPrivate: true,
	})
	return e.ts.NewWorker(payQueue, func(r worker.Registry) { workflows.Register(r, acts) })
}

// cursor returns network n's stored cursor height (0 without one).
func (e *scanEnv) cursor(n paywatch.Network) (uint64, bool) {
	cur, ok, err := e.store.ChainCursor(e.ctx, n)
	require.NoError(e.t, err)
	return cur.Height, ok
}

// waitScanned waits until network n is scanned up to height h.
func (e *scanEnv) waitScanned(n paywatch.Network, h uint64) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		got, ok := e.cursor(n)
		return ok && got >= h
	}, 60*time.Second, 20*time.Millisecond, "%s scanned up to %d", n, h)
}

// head returns the devnet head of n.
func (e *scanEnv) head(n paywatch.Network) uint64 {
	st, ok := e.dn.Network(n)
	require.True(e.t, ok)
	return st.Head
}

// newAddress returns a fresh random address of n's family.
func newAddress(t *testing.T, n paywatch.Network) string {
	b := make([]byte, 20)
	_, err := rand.Read(b)
	require.NoError(t, err)
	if n == paywatch.TRC20 {
		return paywatch.TronAddressFromEVMBytes(b)
	}
	a, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, "0x"+hex.EncodeToString(b))
	require.NoError(t, err)
	return a
}

// scanPayment is a payments row for the tests.
type scanPayment struct {
	ID         string
	Network    paywatch.Network
	Token      paywatch.Token
	Address    string
	Amount     paywatch.Amount
	StartBlock uint64
}

// insertPayment writes a pending per_payment payment's row.
func (e *scanEnv) insertPayment(n paywatch.Network, tok paywatch.Token, amount string, startBlock uint64) scanPayment {
	e.t.Helper()
	p := scanPayment{Network: n, Token: tok, Address: newAddress(e.t, n), StartBlock: startBlock,
		Amount: paywatch.MustParseAmount(amount, paywatch.Decimals(n, tok))}
	require.NoError(e.t, e.pool.QueryRow(e.ctx, `
		INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at, start_block)
		VALUES (gen_random_uuid(), $1, 'per_payment', $2, $3, $4, $5::numeric, $6, 'cust', $7, $8)
		RETURNING id::text`, e.projectID, string(n), string(tok), p.Address, p.Amount.Units().String(), p.Amount.Decimals(),
		time.Now().Add(time.Hour), int64(startBlock)).Scan(&p.ID))
	return p
}

// startWorkflow starts the payment's workflow (the real one or the
// recorder, whichever the payment worker registered).
func (e *scanEnv) startWorkflow(p scanPayment) client.WorkflowRun {
	e.t.Helper()
	in := paywatch.PaymentInput{
		PaymentID: p.ID, ProjectID: e.projectID, ProjectSlug: "scan", Mode: paywatch.ModePerPayment,
		Network: p.Network, Token: p.Token, Address: p.Address, StartBlock: p.StartBlock, Amount: p.Amount,
		ExternalRef: "cust", CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().Add(time.Hour).UTC(), AddressAssignedAt: time.Now().UTC(),
	}
	run, err := e.c.ExecuteWorkflow(e.ctx, client.StartWorkflowOptions{ID: workflows.PaymentWorkflowID(p.ID), TaskQueue: payQueue},
		workflows.PaymentWorkflowName, in)
	require.NoError(e.t, err)
	return run
}

// send makes a devnet transfer to p's address.
func (e *scanEnv) send(p scanPayment, tok paywatch.Token, amount string) devnet.TransferResult {
	e.t.Helper()
	res, err := e.dn.Transfer(e.ctx, devnet.TransferRequest{Network: p.Network, Token: tok, To: p.Address, Amount: amount})
	require.NoError(e.t, err)
	return res
}

// state queries the real payment workflow.
func (e *scanEnv) state(p scanPayment) (paywatch.PaymentState, error) {
	v, err := e.c.QueryWorkflow(e.ctx, workflows.PaymentWorkflowID(p.ID), "", workflows.QueryState)
	if err != nil {
		return paywatch.PaymentState{}, err
	}
	var st paywatch.PaymentState
	err = v.Get(&st)
	return st, err
}

// waitState waits until the payment workflow's state satisfies ok.
func (e *scanEnv) waitState(p scanPayment, what string, ok func(paywatch.PaymentState) bool) paywatch.PaymentState {
	e.t.Helper()
	var last paywatch.PaymentState
	require.Eventually(e.t, func() bool {
		st, err := e.state(p)
		if err != nil {
			return false
		}
		last = st
		return ok(st)
	}, 60*time.Second, 20*time.Millisecond, "payment %s: %s", p.ID, what)
	return last
}

// transferRows counts the chain_transfers rows of a transaction.
func (e *scanEnv) transferRows(n paywatch.Network, txHash string) (rows int, removed bool) {
	require.NoError(e.t, e.pool.QueryRow(e.ctx, `
		SELECT count(*), COALESCE(bool_or(removed), false) FROM chain_transfers WHERE network = $1 AND tx_hash = $2`,
		string(n), txHash).Scan(&rows, &removed))
	return rows, removed
}

// recorded is what recorderWorkflow received.
type recorded struct {
	Seen    []paywatch.Transaction
	Removed []workflows.TransferRemoved
}

const queryRecorded = "recorded"

// recorderWorkflow stands in for the payment workflow: it records the
// scanner's signals and never ends.
func recorderWorkflow(ctx workflow.Context, _ paywatch.PaymentInput) error {
	var r recorded
	if err := workflow.SetQueryHandler(ctx, queryRecorded, func() (recorded, error) { return r, nil }); err != nil {
		return err
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, workflows.SignalTransferSeen), func(c workflow.ReceiveChannel, _ bool) {
		var t paywatch.Transaction
		c.Receive(ctx, &t)
		r.Seen = append(r.Seen, t)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, workflows.SignalTransferRemoved), func(c workflow.ReceiveChannel, _ bool) {
		var t workflows.TransferRemoved
		c.Receive(ctx, &t)
		r.Removed = append(r.Removed, t)
	})
	for {
		sel.Select(ctx)
	}
}

// recordedBy queries a recorder.
func (e *scanEnv) recordedBy(p scanPayment) recorded {
	v, err := e.c.QueryWorkflow(e.ctx, workflows.PaymentWorkflowID(p.ID), "", queryRecorded)
	if err != nil {
		return recorded{}
	}
	var r recorded
	require.NoError(e.t, v.Get(&r))
	return r
}

// waitSeen waits until a recorder got n transfer-seen signals.
func (e *scanEnv) waitSeen(p scanPayment, n int) recorded {
	e.t.Helper()
	var r recorded
	require.Eventually(e.t, func() bool {
		r = e.recordedBy(p)
		return len(r.Seen) >= n
	}, 60*time.Second, 20*time.Millisecond, "%s payment sees %d transfers", p.Network, n)
	return r
}

func TestScannerDetectsTransfersOnEveryNetwork(t *testing.T) {
	// Every network's first RPC URL is dead: the scanners fail over to the
	// second one.
	e := newScanEnv(t, everyNetwork, envOptions{urls: func(n paywatch.Network, devURL string) []string {
		if n == paywatch.TRC20 {
			return []string{deadAddr(t), devURL}
		}
		return []string{"http://" + deadAddr(t), devURL}
	}})
	e.recorderWorker()
	e.scannerWorker()

	require.NoError(t, workflows.EnsureScanners(e.ctx, e.c, scanQueue, everyNetwork))
	runs := map[paywatch.Network]string{}
	for _, n := range everyNetwork {
		d, err := e.c.DescribeWorkflowExecution(e.ctx, workflows.ScannerWorkflowID(n), "")
		require.NoError(t, err)
		runs[n] = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	require.NoError(t, workflows.EnsureScanners(e.ctx, e.c, scanQueue, everyNetwork), "a second start finds the running scanners")
	for _, n := range everyNetwork {
		d, err := e.c.DescribeWorkflowExecution(e.ctx, workflows.ScannerWorkflowID(n), "")
		require.NoError(t, err)
		assert.Equal(t, runs[n], d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "%s: one scanner", n)
		assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
	}
	for _, n := range everyNetwork {
		e.waitScanned(n, 0)
	}

	type sent struct {
		p   scanPayment
		res devnet.TransferResult
	}
	var all []sent
	for _, n := range everyNetwork {
		tok := paywatch.USDT
		if n == paywatch.BEP20 {
			tok = paywatch.USDC
		}
		h, _ := e.cursor(n)
		p := e.insertPayment(n, tok, "12.5", h)
		e.startWorkflow(p)
		if tok == paywatch.USDC {
			e.send(p, paywatch.USDT, "3") // another token to the same address: not this payment's
		}
		all = append(all, sent{p, e.send(p, tok, "12.5")})
	}
	for _, s := range all {
		r := e.waitSeen(s.p, 1)
		require.Len(t, r.Seen, 1, "%s: one transfer, one signal", s.p.Network)
		got := r.Seen[0]
		assert.Equal(t, s.res.TxHash, got.TxHash, s.p.Network)
		assert.Equal(t, s.res.BlockNumber, got.BlockNumber, s.p.Network)
		assert.Equal(t, s.res.From, got.From, s.p.Network)
		assert.NotEmpty(t, got.BlockHash)
		assert.True(t, s.p.Amount.Equal(got.Amount), "%s: amount %s, want %s", s.p.Network, got.Amount, s.p.Amount)
		assert.Equal(t, paywatch.Decimals(s.p.Network, s.p.Token), got.Amount.Decimals(), "at the token's decimals")
		// The scanner signals a transfer before the transaction that
		// records it commits (a signal that fails rolls the record back):
		// the row may come a moment after the signal.
		var rows int
		var removed bool
		require.Eventually(t, func() bool {
			rows, removed = e.transferRows(s.p.Network, s.res.TxHash)
			return rows > 0
		}, 10*time.Second, 20*time.Millisecond, "%s: recorded", s.p.Network)
		assert.Equal(t, 1, rows, "%s: recorded once", s.p.Network)
		assert.False(t, removed)
	}
	var other int
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT count(*) FROM chain_transfers WHERE token <> 'USDT' OR network <> 'BEP20'`).Scan(&other))
	assert.Equal(t, len(everyNetwork), other, "the BEP20 USDT transfer to a USDC payment is not recorded")

	st, err := e.store.ChainStatus(e.ctx)
	require.NoError(t, err)
	require.Len(t, st, len(everyNetwork))
	for i, s := range st {
		assert.Equal(t, everyNetwork[i], s.Network)
		assert.GreaterOrEqual(t, s.Scanned, all[i].res.BlockNumber, s.Network)
		assert.Equal(t, s.Head-s.Scanned, s.LagBlocks)
	}
}

// deadAddr returns a loopback host:port where nothing listens.
func deadAddr(t *testing.T) string {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestScannerOutageOfOneNetworkStallsNoOther(t *testing.T) {
	// POLYGON's only provider rate-limits every call; ARBITRUM works.
	var limited atomic.Int64
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limited.Add(1)
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
	}))
	t.Cleanup(provider.Close)
	e := newScanEnv(t, []paywatch.Network{paywatch.POLYGON, paywatch.ARBITRUM}, envOptions{
		noDevnet: []paywatch.Network{paywatch.POLYGON},
		urls: func(n paywatch.Network, devURL string) []string {
			if n == paywatch.POLYGON {
				return []string{provider.URL}
			}
			return []string{devURL}
		},
	})
	e.recorderWorker()
	e.scannerWorker()
	require.NoError(t, workflows.EnsureScanners(e.ctx, e.c, scanQueue, []paywatch.Network{paywatch.POLYGON, paywatch.ARBITRUM}))
	e.waitScanned(paywatch.ARBITRUM, 0)

	p := e.insertPayment(paywatch.ARBITRUM, paywatch.USDT, "5", 1)
	e.startWorkflow(p)
	res := e.send(p, paywatch.USDT, "5")
	r := e.waitSeen(p, 1)
	assert.Equal(t, res.TxHash, r.Seen[0].TxHash)

	// The rate-limited network backs off (5 s and more between attempts)
	// instead of hammering its provider, and shows no progress.
	time.Sleep(time.Second)
	assert.LessOrEqual(t, limited.Load(), int64(3), "calls to a rate-limiting provider")
	assert.Positive(t, limited.Load())
	st, err := e.store.ChainStatus(e.ctx)
	require.NoError(t, err)
	require.Len(t, st, 2)
	assert.Equal(t, paywatch.POLYGON, st[0].Network)
	assert.Zero(t, st[0].Scanned)
	assert.Positive(t, st[0].FailedPolls, "the failing polls are counted for /health")
	assert.Contains(t, st[0].LastError, "rate limited")
	assert.GreaterOrEqual(t, st[1].Scanned, res.BlockNumber)
	assert.Zero(t, st[1].FailedPolls)
}

func TestPaymentConfirmsAtExactlyTheFixedCount(t *testing.T) {
	n := paywatch.ARBITRUM // 40 confirmations, 250 ms block time: quick re-checks
	required := 40
	e := newScanEnv(t, []paywatch.Network{n}, envOptions{})
	e.paymentWorker()
	e.scannerWorker()

	// The payment exists before the scanner's first start, which therefore
	// begins at its start block. The transfer is 39 blocks deep when the
	// scanner finds it.
	p := e.insertPayment(n, paywatch.USDT, "12.50", e.head(n))
	run := e.startWorkflow(p)
	res := e.send(p, paywatch.USDT, "12.50")
	_, err := e.dn.Mine(e.ctx, n, required-2)
	require.NoError(t, err)
	e.ensureScanner(n)

	st := e.waitState(p, "confirming", func(st paywatch.PaymentState) bool {
		return st.Status == paywatch.StatusConfirming && len(st.Transactions) == 1
	})
	assert.Equal(t, res.TxHash, st.Transactions[0].TxHash)
	assert.False(t, st.Transactions[0].Confirmed)
	assert.True(t, st.PaidAmount.IsZero(), "unconfirmed funds are not paid")
	// The scanner keeps polling (every 20 ms) without counting early.
	e.waitScanned(n, res.BlockNumber+uint64(required)-2)
	time.Sleep(time.Second)
	st, err = e.state(p)
	require.NoError(t, err)
	assert.Equal(t, paywatch.StatusConfirming, st.Status, "one confirmation short")

	_, err = e.dn.Mine(e.ctx, n, 1)
	require.NoError(t, err)
	require.NoError(t, run.Get(e.ctx, nil), "paid, notified, done")
	var status, paid string
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT status, paid_amount::text FROM payments WHERE id = $1`, p.ID).Scan(&status, &paid))
	assert.Equal(t, "paid", status)
	assert.Equal(t, "12500000", paid)
	var txs []store.PaymentTransaction
	var raw []byte
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT transactions FROM payments WHERE id = $1`, p.ID).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &txs))
	require.Len(t, txs, 1)
	assert.Equal(t, required, txs[0].Confirmations, "counted at exactly the fixed count")
	assert.True(t, txs[0].Confirmed)
	e.hooksMu.Lock()
	defer e.hooksMu.Unlock()
	require.Len(t, e.hooks, 1)
	assert.Equal(t, "payment.completed", e.hooks[0]["event"])
}

func TestReorgRemovesACountedUnconfirmedTransfer(t *testing.T) {
	n := paywatch.ARBITRUM
	e := newScanEnv(t, []paywatch.Network{n}, envOptions{})
	e.paymentWorker()
	e.scannerWorker()
	e.ensureScanner(n)
	e.waitScanned(n, e.head(n))

	h, _ := e.cursor(n)
	p := e.insertPayment(n, paywatch.USDT, "12.50", h)
	e.startWorkflow(p)
	res := e.send(p, paywatch.USDT, "12.50")
	e.waitState(p, "confirming", func(st paywatch.PaymentState) bool {
		return st.Status == paywatch.StatusConfirming && len(st.Transactions) == 1
	})
	rows, removed := e.transferRows(n, res.TxHash)
	require.Equal(t, 1, rows)
	require.False(t, removed)

	head, dropped, err := e.dn.Reorg(e.ctx, n, int(e.head(n)-res.BlockNumber+1))
	require.NoError(t, err)
	require.Contains(t, dropped, res.TxHash)

	st := e.waitState(p, "back to pending", func(st paywatch.PaymentState) bool {
		return st.Status == paywatch.StatusPending && len(st.Transactions) == 0
	})
	assert.True(t, st.PaidAmount.IsZero())
	require.Eventually(t, func() bool {
		_, removed := e.transferRows(n, res.TxHash)
		return removed
	}, 30*time.Second, 20*time.Millisecond, "the scanner marks the recorded transfer removed")
	e.waitScanned(n, head)

	// A new transfer after the reorg counts as usual.
	res2 := e.send(p, paywatch.USDT, "12.50")
	st = e.waitState(p, "confirming again", func(st paywatch.PaymentState) bool {
		return st.Status == paywatch.StatusConfirming && len(st.Transactions) == 1
	})
	assert.Equal(t, res2.TxHash, st.Transactions[0].TxHash)
}

func TestScannerCatchesUpAfterAnOutage(t *testing.T) {
	nets := []paywatch.Network{paywatch.POLYGON, paywatch.TRC20}
	e := newScanEnv(t, nets, envOptions{})
	e.recorderWorker()
	w1 := e.scannerWorker()
	require.NoError(t, workflows.EnsureScanners(e.ctx, e.c, scanQueue, nets))
	payments := map[paywatch.Network]scanPayment{}
	for _, n := range nets {
		e.waitScanned(n, e.head(n))
		h, _ := e.cursor(n)
		payments[n] = e.insertPayment(n, paywatch.USDT, "1", h)
		e.startWorkflow(payments[n])
	}

	// The only worker stops; meanwhile 20 transfers and 600 blocks come on
	// each network.
	w1.Stop()
	const transfers, gap = 20, 29
	sent := map[paywatch.Network][]string{}
	for _, n := range nets {
		for range transfers {
			sent[n] = append(sent[n], e.send(payments[n], paywatch.USDT, "1").TxHash)
			_, err := e.dn.Mine(e.ctx, n, gap)
			require.NoError(t, err)
		}
	}
	calls := map[paywatch.Network]uint64{}
	from := map[paywatch.Network]uint64{}
	for _, n := range nets {
		c, err := e.set.Client(n)
		require.NoError(t, err)
		calls[n] = chains.Calls(c)
		from[n], _ = e.cursor(n)
	}

	began := time.Now()
	e.scannerWorker()
	for _, n := range nets {
		e.waitScanned(n, e.head(n))
	}
	took := time.Since(began)
	for _, n := range nets {
		r := e.waitSeen(payments[n], transfers)
		assert.Len(t, r.Seen, transfers, n)
		var hashes []string
		for _, s := range r.Seen {
			hashes = append(hashes, s.TxHash)
		}
		assert.ElementsMatch(t, sent[n], hashes, n)
		var rows int
		require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT count(*) FROM chain_transfers WHERE network = $1`, string(n)).Scan(&rows))
		assert.Equal(t, transfers, rows, n)

		c, _ := e.set.Client(n)
		blocks := e.head(n) - from[n]
		used := chains.Calls(c) - calls[n]
		t.Logf("%s: caught up %d blocks with %d RPC calls (%.3f per block)", n, blocks, used, float64(used)/float64(blocks))
		assert.GreaterOrEqual(t, blocks, uint64(transfers*(gap+1)))
		assert.Less(t, used, blocks/10, "%s: many blocks per call, not one call per block", n)
	}
	t.Logf("caught up in %v after the restart", took)

	v, err := e.c.QueryWorkflow(e.ctx, workflows.ScannerWorkflowID(paywatch.POLYGON), "", workflows.QueryScanProgress)
	require.NoError(t, err)
	var progress workflows.ScanProgress
	require.NoError(t, v.Get(&progress))
	assert.LessOrEqual(t, progress.Height, e.head(paywatch.POLYGON))
}

func TestSameTransferNeverCountedTwiceAcrossRestart(t *testing.T) {
	n := paywatch.ARBITRUM
	e := newScanEnv(t, []paywatch.Network{n}, envOptions{})
	e.paymentWorker()
	w1 := e.scannerWorker()
	e.ensureScanner(n)
	e.waitScanned(n, e.head(n))

	h, _ := e.cursor(n)
	p := e.insertPayment(n, paywatch.USDT, "20.00", h)
	e.startWorkflow(p)
	res := e.send(p, paywatch.USDT, "10.00")
	_, err := e.dn.Mine(e.ctx, n, 40)
	require.NoError(t, err)
	e.waitState(p, "partial with 10.00 confirmed", func(st paywatch.PaymentState) bool {
		return st.Status == paywatch.StatusPartial && st.PaidAmount.Equal(paywatch.MustParseAmount("10", 6))
	})

	// The scanner restarts from an older cursor and reads the transfer
	// again.
	w1.Stop()
	_, err = e.pool.Exec(e.ctx, `UPDATE chain_cursors SET height = $2, block_hash = '' WHERE network = $1`, string(n), int64(res.BlockNumber-3))
	require.NoError(t, err)
	e.scannerWorker()
	e.waitScanned(n, e.head(n))
	require.Eventually(t, func() bool {
		return seenSignals(t, e, p) == 2
	}, 30*time.Second, 50*time.Millisecond, "the transfer was signalled again")

	rows, _ := e.transferRows(n, res.TxHash)
	assert.Equal(t, 1, rows, "recorded once")
	st, err := e.state(p)
	require.NoError(t, err)
	assert.Equal(t, paywatch.StatusPartial, st.Status)
	assert.True(t, st.PaidAmount.Equal(paywatch.MustParseAmount("10", 6)), "paid %s", st.PaidAmount)
	assert.Len(t, st.Transactions, 1)
	var paid string
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT paid_amount::text FROM payments WHERE id = $1`, p.ID).Scan(&paid))
	assert.Equal(t, "10000000", paid)
}

// seenSignals counts the transfer-seen signals in a payment workflow's history.
func seenSignals(t *testing.T, e *scanEnv, p scanPayment) int {
	it := e.c.GetWorkflowHistory(e.ctx, workflows.PaymentWorkflowID(p.ID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	count := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == workflows.SignalTransferSeen {
			count++
		}
	}
	return count
}

// The scanner workflow itself, in the SDK's test environment: it runs the
// scan activity again and again with the run's settings, and continues as
// new after a dozen runs carrying the progress.
func TestScannerWorkflowContinuesAsNewWithItsProgress(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	workflows.RegisterScanner(env, activities.NewScanner(activities.ScannerDeps{}))
	var runs []workflows.ScanInput
	env.OnActivity(workflows.ActivityScanNetwork, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.ScanInput) (workflows.ScanProgress, error) {
			runs = append(runs, in)
			return workflows.ScanProgress{Height: uint64(100 * len(runs)), Head: uint64(100*len(runs) + 5)}, nil
		})
	env.ExecuteWorkflow(workflows.ScannerWorkflowName, workflows.ScannerInput{Network: paywatch.TRC20, RunFor: time.Minute})

	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	assert.Equal(t, workflows.ScannerWorkflowName, can.WorkflowType.Name)
	require.Len(t, runs, 12)
	for _, in := range runs {
		assert.Equal(t, workflows.ScanInput{Network: paywatch.TRC20, RunFor: time.Minute}, in)
	}
	var next workflows.ScannerInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	assert.Equal(t, workflows.ScannerInput{Network: paywatch.TRC20, RunFor: time.Minute,
		Progress: workflows.ScanProgress{Height: 1200, Head: 1205}}, next)
	assert.Equal(t, workflows.ScannerWorkflowID(paywatch.TRC20), "scanner/TRC20")
}
