package activities_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

// The scanner's batch path without Temporal: real PostgreSQL, real chain
// clients, and a Signaler that records what a workflow would receive.

// sentSignal is one signal the scanner sent.
type sentSignal struct {
	WorkflowID string
	Name       string
	Arg        any
}

// signalLog is a Signaler that records signals; workflows listed in ended
// answer NotFound, as a finished workflow, or one not started yet, does.
type signalLog struct {
	mu    sync.Mutex
	got   []sentSignal
	ended map[string]bool
	// failures makes the next calls fail, as when Temporal is unreachable.
	failures int
	calls    int
	// onNotFound runs (unlocked) after a call answered NotFound.
	onNotFound func(workflowID string)
	// onSeen runs (unlocked) after a transfer-seen signal was taken.
	onSeen func(paywatch.Transaction)
	// failConfirms makes the next transfers-confirmed signals fail.
	failConfirms int
}

func (l *signalLog) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	l.mu.Lock()
	l.calls++
	if l.failures > 0 || (l.failConfirms > 0 && name == workflows.SignalTransfersConfirmed) {
		if name == workflows.SignalTransfersConfirmed && l.failConfirms > 0 {
			l.failConfirms--
		} else {
			l.failures--
		}
		l.mu.Unlock()
		return errors.New("temporal unavailable")
	}
	if l.ended[id] {
		hook := l.onNotFound
		l.mu.Unlock()
		if hook != nil {
			hook(id)
		}
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	l.got = append(l.got, sentSignal{id, name, arg})
	hook := l.onSeen
	l.mu.Unlock()
	if tx, ok := arg.(paywatch.Transaction); ok && hook != nil && name == workflows.SignalTransferSeen {
		hook(tx)
	}
	return nil
}

// start makes a workflow listed in ended exist.
func (l *signalLog) start(workflowID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ended, workflowID)
}

func (l *signalLog) signals() []sentSignal {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sentSignal(nil), l.got...)
}

// scanDB is a fresh database with an account and a project to hang
// payments on.
type scanDB struct {
	pool      *pgxpool.Pool
	store     *store.Store
	projectID int64
}

func newScanDB(t testing.TB) *scanDB {
	t.Helper()
	ctx := context.Background()
	db := &scanDB{pool: storetest.NewPool(t)}
	db.store = store.New(db.pool)
	var accountID int64
	require.NoError(t, db.pool.QueryRow(ctx, `INSERT INTO accounts (email, plan) VALUES ('scan@example.com', 'pro') RETURNING id`).Scan(&accountID))
	require.NoError(t, db.pool.QueryRow(ctx, `INSERT INTO projects (slug, name, owner_id) VALUES ('scan', 'Scan', $1) RETURNING id`,
		accountID).Scan(&db.projectID))
	return db
}

// watch inserts a pending per_payment payment of amount tok on n at addr,
// with its workflow recorded as started, and returns its id.
func (db *scanDB) watch(t testing.TB, n paywatch.Network, tok paywatch.Token, addr string, startBlock uint64) string {
	t.Helper()
	var id string
	d := paywatch.Decimals(n, tok)
	require.NoError(t, db.pool.QueryRow(context.Background(), `
		INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at, start_block, workflow_started)
		VALUES (gen_random_uuid(), $1, 'per_payment', $2, $3, $4, $5::numeric, $6, 'cust', now() + interval '1 hour', $7, true)
		RETURNING id::text`, db.projectID, string(n), string(tok), addr, paywatch.MustParseAmount("10", d).Units().String(), d,
		int64(startBlock)).Scan(&id))
	return id
}

// setStarted sets whether a payment's workflow is recorded as started, as
// the API and the reconciler do, and when its row was created.
func (db *scanDB) setStarted(t testing.TB, id string, started bool, createdAgo time.Duration) {
	t.Helper()
	_, err := db.pool.Exec(context.Background(),
		`UPDATE payments SET workflow_started = $2, created_at = now() - $3::interval WHERE id = $1`,
		id, started, createdAgo.String())
	require.NoError(t, err)
}

// randomAddress returns a fresh address of n's family.
func randomAddress(t testing.TB, n paywatch.Network) string {
	b := make([]byte, 20)
	_, err := rand.Read(b)
	require.NoError(t, err)
	switch n.Family() {
	case paywatch.FamilyTron:
		return paywatch.TronAddressFromEVMBytes(b)
	case paywatch.FamilySolana:
		return sol.NewWallet().PublicKey().String()
	case paywatch.FamilyTON:
		k := make([]byte, 32)
		_, err := rand.Read(k)
		require.NoError(t, err)
		a, err := paywatch.NormalizeTONWallet("0:" + hex.EncodeToString(k))
		require.NoError(t, err)
		return a
	}
	a, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, "0x"+hex.EncodeToString(b))
	require.NoError(t, err)
	return a
}

// repoRoot is the module's root directory.
func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test")
		dir = parent
	}
}

// The TRC20 scanner reads its node over gRPC or over the FullNode HTTP
// API alike.
func TestScannerRunRecordsSignalsAndHandlesReorgs(t *testing.T) {
	for transport, url := range map[string]func(devnet.NetworkStatus) string{
		"grpc": func(st devnet.NetworkStatus) string { return st.RPCURL },
		"http": func(st devnet.NetworkStatus) string { return st.HTTPURL },
	} {
		t.Run(transport, func(t *testing.T) { testScannerRunRecordsSignalsAndHandlesReorgs(t, url) })
	}
}

func testScannerRunRecordsSignalsAndHandlesReorgs(t *testing.T, url func(devnet.NetworkStatus) string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := paywatch.TRC20
	d, set := devnetChainVia(ctx, t, n, url)
	db := newScanDB(t)
	_, err := d.Mine(ctx, n, 10)
	require.NoError(t, err)

	// Two watched payments: one whose workflow already ended.
	addr, doneAddr := randomAddress(t, n), randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, 5)
	doneID := db.watch(t, n, paywatch.USDT, doneAddr, 5)
	sig := &signalLog{ended: map[string]bool{workflows.PaymentWorkflowID(doneID): true}}
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond},
	})
	assert.Equal(t, uint64(activities.DefaultTronBatch), s.BatchBlocks(n))
	assert.Equal(t, activities.MinPollInterval, s.PollInterval(n), "raised to the minimum")
	assert.Equal(t, 12*time.Second, s.PollInterval(paywatch.ERC20), "the block time by default")

	a, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "7"})
	require.NoError(t, err)
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: doneAddr, Amount: "8"})
	require.NoError(t, err)

	// The first run starts at the earliest watched payment's start block.
	var beats int
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 500 * time.Millisecond}, func(workflows.ScanProgress) { beats++ })
	require.NoError(t, err)
	assert.Positive(t, beats)
	head, _ := d.Network(n)
	assert.Equal(t, head.Head, p.Height)
	assert.Equal(t, 2, p.Transfers)
	got := sig.signals()
	require.Len(t, got, 1, "a finished workflow's NotFound is not an error")
	assert.Equal(t, workflows.PaymentWorkflowID(id), got[0].WorkflowID)
	assert.Equal(t, workflows.SignalTransferSeen, got[0].Name)
	seen := got[0].Arg.(paywatch.Transaction)
	assert.Equal(t, a.TxHash, seen.TxHash)
	assert.Equal(t, "7.00", seen.Amount.String())

	// A reorg drops the transfer: the next run notices the changed block at
	// its cursor, tells the workflow and marks the record removed.
	_, dropped, err := d.Reorg(ctx, n, int(head.Head-a.BlockNumber+1))
	require.NoError(t, err)
	require.Contains(t, dropped, a.TxHash)
	p, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 500 * time.Millisecond}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, p.Reorgs)
	got = sig.signals()
	require.Len(t, got, 2)
	assert.Equal(t, workflows.SignalTransferRemoved, got[1].Name)
	assert.Equal(t, workflows.TransferRemoved{TxHash: a.TxHash, LogIndex: seen.LogIndex, BlockNumber: seen.BlockNumber, BlockHash: seen.BlockHash}, got[1].Arg, "the removal names the block it removes")
	rec, ok, err := db.store.ChainTransferByKey(ctx, n, paywatch.TransferKey{TxHash: a.TxHash, LogIndex: seen.LogIndex})
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, rec.Removed)
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	now, _ := d.Network(n)
	assert.Equal(t, now.Head, cur.Height, "scanned the new branch")

	// A cancelled context ends a run with its error.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	_, err = s.Run(cctx, workflows.ScanInput{Network: n}, nil)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Run(ctx, workflows.ScanInput{Network: "DOGE"}, nil)
	assert.Error(t, err)
}

func TestScanRangeMatchesOnlyWatchedPayments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.BEP20
	d, set := devnetChain(ctx, t, n)
	st, _ := d.Network(n)
	db := newScanDB(t)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig,
		BatchBlocks: map[paywatch.Network]uint64{n: 3}})

	usdt, usdc, late := randomAddress(t, n), randomAddress(t, n), randomAddress(t, n)
	db.watch(t, n, paywatch.USDT, usdt, 0)
	db.watch(t, n, paywatch.USDC, usdc, 0)
	lateID := db.watch(t, n, paywatch.USDT, late, 0)
	first := st.Head + 1
	var reqs []devnet.TransferRequest
	for _, r := range []struct {
		to  string
		tok paywatch.Token
	}{{usdt, paywatch.USDT}, {usdt, paywatch.USDC}, {usdc, paywatch.USDC}, {usdc, paywatch.USDT}, {randomAddress(t, n), paywatch.USDT}, {late, paywatch.USDT}} {
		reqs = append(reqs, devnet.TransferRequest{Network: n, Token: r.tok, To: r.to, Amount: "1.5"})
	}
	_, err := d.TransferBatch(ctx, reqs[:5])
	require.NoError(t, err)
	_, err = d.Mine(ctx, n, 5)
	require.NoError(t, err)
	// The last payment's address was assigned after its transfer's block.
	res, err := d.Transfer(ctx, reqs[5])
	require.NoError(t, err)
	_, err = db.pool.Exec(ctx, `UPDATE payments SET start_block = $2 WHERE id = $1`, lateID, int64(res.BlockNumber+1))
	require.NoError(t, err)
	last, _ := d.Network(n)

	b, err := s.ScanRange(ctx, n, first, last.Head)
	require.NoError(t, err)
	assert.Equal(t, activities.ScanStats{Transfers: 6, Matched: 2, Signals: 2}, b,
		"another token, an unwatched address and a transfer before the start block do not match")
	for _, sg := range sig.signals() {
		ts := sg.Arg.(paywatch.Transaction)
		assert.Equal(t, 18, ts.Amount.Decimals())
		assert.Equal(t, "1.50", ts.Amount.String())
	}
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Equal(t, last.Head, cur.Height)
	var rows int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
	assert.Equal(t, 2, rows)
}

// A batch whose signal fails is neither recorded nor passed: the cursor
// stays, and the next attempt records it and signals again. So every
// recorded transfer has been signalled, whatever fails when.
func TestScannerSignalsBeforeTheBatchCommits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.TRC20
	d, set := devnetChain(ctx, t, n)
	db := newScanDB(t)
	_, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)
	addr := randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, 2)
	res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "4"})
	require.NoError(t, err)

	sig := &signalLog{failures: 1}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig})
	_, err = s.ScanRange(ctx, n, 3, res.BlockNumber)
	require.ErrorContains(t, err, "temporal unavailable")
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Less(t, cur.Height, res.BlockNumber, "the cursor did not pass the unsignalled transfer")
	var rows int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
	assert.Zero(t, rows, "nothing recorded")

	// The scan fails the same way once more, backs off and gets through.
	sig.mu.Lock()
	sig.failures = 1
	sig.mu.Unlock()
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 2500 * time.Millisecond}, nil)
	require.NoError(t, err)
	assert.Equal(t, res.BlockNumber, p.Height)
	got := sig.signals()
	require.Len(t, got, 1)
	assert.Equal(t, workflows.PaymentWorkflowID(id), got[0].WorkflowID)
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
	assert.Equal(t, 1, rows)
	assert.Equal(t, 3, sig.calls)
}

// The API writes a payment's row before it starts the workflow, and the
// reconciler starts it if that failed. A transfer that arrives in between
// must reach the workflow once it runs: the signal's NotFound fails the
// batch, the cursor stays before the transfer, and the re-scan after the
// backoff signals it. A workflow that ended (its row says started) or a row
// that has waited longer than any start takes does not hold the scan up.
func TestScannerWaitsForAWorkflowNotStartedYet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.TRC20
	d, set := devnetChain(ctx, t, n)
	db := newScanDB(t)
	_, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)

	addr, endedAddr, stuckAddr := randomAddress(t, n), randomAddress(t, n), randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, 2)
	db.setStarted(t, id, false, 0) // its workflow is yet to start
	endedID := db.watch(t, n, paywatch.USDT, endedAddr, 2)
	stuckID := db.watch(t, n, paywatch.USDT, stuckAddr, 2)
	db.setStarted(t, stuckID, false, time.Hour) // never started: a stuck row
	sent, err := d.TransferBatch(ctx, []devnet.TransferRequest{
		{Network: n, Token: paywatch.USDT, To: addr, Amount: "4"},
		{Network: n, Token: paywatch.USDT, To: endedAddr, Amount: "5"},
		{Network: n, Token: paywatch.USDT, To: stuckAddr, Amount: "6"},
	})
	require.NoError(t, err)
	block := sent[0].BlockNumber
	wf := workflows.PaymentWorkflowID
	sig := &signalLog{ended: map[string]bool{wf(id): true, wf(endedID): true, wf(stuckID): true}}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig})

	_, err = s.ScanRange(ctx, n, 3, block)
	require.ErrorContains(t, err, "payment workflow not started yet")
	assert.ErrorContains(t, err, id)
	assert.NotContains(t, err.Error(), endedID, "an ended workflow's NotFound is no error")
	assert.NotContains(t, err.Error(), stuckID, "nor is a row that never got a workflow")
	_, ok, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.False(t, ok, "the cursor did not pass the transfer")
	var rows int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
	assert.Zero(t, rows)

	// The scan keeps failing and backing off until the reconciler starts
	// the workflow; then it signals the transfer and moves on.
	type result struct {
		p   workflows.ScanProgress
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 3 * time.Second}, nil)
		done <- result{p, err}
	}()
	require.Eventually(t, func() bool {
		sig.mu.Lock()
		defer sig.mu.Unlock()
		return sig.calls >= 6 // the failed ScanRange's three, and the scan's first try
	}, 10*time.Second, 10*time.Millisecond)
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Less(t, cur.Height, block, "still before the transfer")
	sig.start(wf(id))
	db.setStarted(t, id, true, 0)

	r := <-done
	require.NoError(t, r.err)
	head, _ := d.Network(n)
	assert.Equal(t, head.Head, r.p.Height)
	got := sig.signals()
	require.Len(t, got, 1)
	assert.Equal(t, wf(id), got[0].WorkflowID)
	assert.Equal(t, workflows.SignalTransferSeen, got[0].Name)
	assert.Equal(t, sent[0].TxHash, got[0].Arg.(paywatch.Transaction).TxHash)
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
	assert.Equal(t, 3, rows, "every matching transfer recorded, for the final checks")
}

// The race the cluster test found: the scanner's signal finds no workflow,
// and before it reads the payment's row the reconciler (or the API) starts
// the workflow and marks the row started. The row now reads "ended", but
// the workflow runs: the scanner signals it once more, and it hears of the
// transfer instead of showing pending until its expiry check.
func TestScannerResignalsAWorkflowStartedMeanwhile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.TRC20
	d, set := devnetChain(ctx, t, n)
	db := newScanDB(t)
	_, err := d.Mine(ctx, n, 3)
	require.NoError(t, err)

	addr, endedAddr := randomAddress(t, n), randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, 2)
	db.setStarted(t, id, false, 0) // its start timed out
	endedID := db.watch(t, n, paywatch.USDT, endedAddr, 2)
	sent, err := d.TransferBatch(ctx, []devnet.TransferRequest{
		{Network: n, Token: paywatch.USDT, To: addr, Amount: "4"},
		{Network: n, Token: paywatch.USDT, To: endedAddr, Amount: "5"},
	})
	require.NoError(t, err)
	wf := workflows.PaymentWorkflowID
	sig := &signalLog{ended: map[string]bool{wf(id): true, wf(endedID): true}}
	var once sync.Once
	sig.onNotFound = func(w string) {
		if w != wf(id) {
			return
		}
		once.Do(func() { // the reconciler's start and mark, in the window
			sig.start(w)
			db.setStarted(t, id, true, 0)
		})
	}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig})
	_, err = s.ScanRange(ctx, n, 3, sent[0].BlockNumber)
	require.NoError(t, err)
	got := sig.signals()
	require.Len(t, got, 1, "the started workflow got the transfer; the ended one was not held up")
	assert.Equal(t, wf(id), got[0].WorkflowID)
	assert.Equal(t, workflows.SignalTransferSeen, got[0].Name)
	assert.Equal(t, sent[0].TxHash, got[0].Arg.(paywatch.Transaction).TxHash)
}

// devnetChain starts a devnet serving network n and dials it, both closed
// when t ends (the clients first).
func devnetChain(ctx context.Context, t testing.TB, n paywatch.Network) (*devnet.Devnet, *chains.Set) {
	return devnetChainVia(ctx, t, n, func(st devnet.NetworkStatus) string { return st.RPCURL })
}

// devnetChainVia is devnetChain dialling the endpoint url picks.
func devnetChainVia(ctx context.Context, t testing.TB, n paywatch.Network, url func(devnet.NetworkStatus) string) (*devnet.Devnet, *chains.Set) {
	t.Helper()
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	st, _ := d.Network(n)
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{url(st)}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(set.Close)
	return d, set
}
