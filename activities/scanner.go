package activities

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// Signaler signals workflows; client.Client implements it.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// ScannerDeps are the Scanner's dependencies. Store, Chains and Signaler
// are required.
type ScannerDeps struct {
	Store    ScannerStore
	Chains   Chains
	Signaler Signaler
	// Clock is the time source of RunFor; nil means time.Now.
	Clock func() time.Time
	// Logger logs the scanners' progress and trouble; nil means
	// slog.Default().
	Logger *slog.Logger
	// PollInterval overrides a network's poll interval, which is otherwise
	// its block time (paywatch.NetworkInfo.BlockTime). `paywatch dev` sets
	// the devnet block interval for its devnet chains. Values below
	// MinPollInterval are raised to it.
	PollInterval map[paywatch.Network]time.Duration
	// IdlePollInterval overrides a network's idle poll interval
	// (IdlePollInterval): how often it polls while nothing on it waits.
	IdlePollInterval map[paywatch.Network]time.Duration
	// WakeCheck is how often an idle scanner asks PostgreSQL whether
	// something now waits on its network; 0 means DefaultWakeCheck.
	WakeCheck time.Duration
	// BatchBlocks overrides the most blocks one batch reads, which is
	// otherwise DefaultEVMBatch or DefaultTronBatch: one eth_getLogs, or
	// one GetBlockByLimitNext, per batch.
	BatchBlocks map[paywatch.Network]uint64
	// DailyBudget is PAYWATCH_<NETWORK>_DAILY_BUDGET: the requests a
	// network's chain client may make in a UTC day, spread evenly over it
	// (scanner_budget.go); a network without one has no limit.
	DailyBudget map[paywatch.Network]uint64
	// OverBudgetPoll overrides OverBudgetPoll, the slowest pace of a
	// network past its budget while a payment waits on it (tests).
	OverBudgetPoll time.Duration
	// RPCTimeout bounds each poll's chain reads; 0 means DefaultRPCTimeout.
	// Keep it below the scan activity's heartbeat timeout.
	RPCTimeout time.Duration
}

// ErrTypeScanSuperseded is the error type of a scan activity that stopped
// because a newer attempt took the network's scan lease.
const ErrTypeScanSuperseded = "ScanSuperseded"

// Scanner is the chain scanners' activity (workflows.ActivityScanNetwork):
// one long poll per network that reads every token transfer of each new
// batch of blocks, matches the recipients against the watched payments with
// one query, records the matches with the cursor in one transaction and
// signals the payment workflows.
//
// Decisions where the specification is silent:
//
//   - A network without a cursor starts at the current head, or earlier at
//     the start block of the earliest watched payment.
//   - Watched are payments with an address on the network that are pending,
//     confirming or partial, and per_payment and pool + txid payments expired
//     less than 24 h ago (late funds count for them). Every payment on a
//     shared pool address is signalled; a pool + txid payment only for a
//     transaction it has claimed (it counts nothing else). Transfers of
//     another token or from before the payment's start block are not its.
//     Cancelled, paid and overpaid payments are not watched.
//   - Signals are sent inside the transaction that records the batch and
//     moves the cursor, before its commit: a crash or failure before the
//     commit re-scans and re-signals the batch (the workflows ignore
//     repeats), and after the commit every recorded transfer was signalled.
//   - A signal that finds no workflow (NotFound) is dropped when the
//     workflow has ended: its payment's row says the workflow started.
//     A row whose workflow has not started yet (the API writes the row
//     first; the reconciler starts the workflow if the API's start failed)
//     fails the batch instead, so it is scanned and signalled again after
//     the backoff, once the workflow runs. A row still without a workflow
//     after workflowStartGrace is taken to be stuck: its signal is dropped
//     with an error log rather than stalling the network.
//   - Reorgs: the cursor keeps the hash of its block; before a batch counts,
//     the block at the cursor's height must still have that hash. If not,
//     the recorded transfers of the last Confirmations blocks whose block
//     hash changed are marked removed and their workflows get
//     TransferRemoved, and the scan goes back Confirmations blocks, so a
//     transfer re-mined in the new branch is recorded and signalled with its
//     new block. The payment workflow checks canonicity before counting
//     anyway; this tells it sooner.
//   - Confirmations are pushed: after every poll, the transfers payments
//     await (store.DueConfirmations) whose block has the network's
//     confirmations at the head just seen are checked for canonicity, one
//     block-hash call per block, and signalled once to their payment
//     (SignalTransferConfirmed), so a payment turns paid at the poll that
//     sees its confirming block, whatever the block time. A transfer a
//     batch reads already confirmed (a burst of blocks) is signalled seen
//     with its depth, which the payment takes as its confirmation: one
//     signal instead of two (record).
//   - A batch is recorded only if it was read fully: on EVM networks a
//     recent block whose logsBloom says it holds a Transfer of a token
//     contract, but for which eth_getLogs returned nothing, is asked for
//     again by block hash, and a provider whose log index lags its head
//     (chains.ErrIncompleteRead) leaves the cursor where it is until the
//     next poll.
//   - Each run takes the network's scan lease (store.AcquireScanLease)
//     before it reads the cursor, and records every batch under it: in a
//     cluster, a retried activity can start while the attempt it replaces
//     still runs (a worker cut off from Temporal but not from PostgreSQL).
//     The older attempt's next batch is then refused before it records or
//     signals anything (store.ErrScanLeaseLost), and it stops; the newer
//     one resumes from the cursor, which the older can no longer move.
//   - A failed poll (RPC error, rate limit, database) is retried inside the
//     activity with backoff, heartbeating meanwhile; it never fails the
//     activity, and each network has its own activity, so one network's
//     outage never holds up another. Each failed poll is counted in
//     PostgreSQL (store.RecordScanFailure) and the first poll that works
//     clears the count, so /health, in whichever process serves it, names
//     a network whose scanner keeps failing.
type Scanner struct {
	store      ScannerStore
	chains     Chains
	signals    Signaler
	now        func() time.Time
	log        *slog.Logger
	poll       map[paywatch.Network]time.Duration
	idle       map[paywatch.Network]time.Duration
	wakeCheck  time.Duration
	batch      map[paywatch.Network]uint64
	budget     map[paywatch.Network]uint64
	overPoll   time.Duration
	rpcTimeout time.Duration
	// usage counts each network's RPC requests for the day's count.
	usageMu sync.Mutex
	usage   map[paywatch.Network]*netUsage
}

var _ workflows.ScannerActivities = (*Scanner)(nil)

// NewScanner returns a Scanner over deps.
func NewScanner(deps ScannerDeps) *Scanner {
	s := &Scanner{
		store:      deps.Store,
		chains:     deps.Chains,
		signals:    deps.Signaler,
		now:        deps.Clock,
		log:        deps.Logger,
		poll:       deps.PollInterval,
		idle:       deps.IdlePollInterval,
		wakeCheck:  deps.WakeCheck,
		batch:      deps.BatchBlocks,
		budget:     deps.DailyBudget,
		overPoll:   cmp.Or(deps.OverBudgetPoll, OverBudgetPoll),
		usage:      map[paywatch.Network]*netUsage{},
		rpcTimeout: deps.RPCTimeout,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.rpcTimeout <= 0 {
		s.rpcTimeout = DefaultRPCTimeout
	}
	if s.wakeCheck <= 0 {
		s.wakeCheck = DefaultWakeCheck
	}
	return s
}

// PollInterval returns how often the scanner of network n asks for new
// blocks once it has caught up.
func (s *Scanner) PollInterval(n paywatch.Network) time.Duration {
	d, ok := s.poll[n]
	if !ok || d <= 0 {
		info, _ := paywatch.LookupNetwork(n)
		d = cmp.Or(info.PollInterval, info.BlockTime)
	}
	return max(d, MinPollInterval)
}

// BatchBlocks returns the most blocks one batch of network n reads: the
// override, or its family's default (defaultBatch).
func (s *Scanner) BatchBlocks(n paywatch.Network) uint64 {
	if b := s.batch[n]; b > 0 {
		return b
	}
	return cmp.Or(defaultBatch[n.Family()], DefaultEVMBatch)
}

// WorkerStopTimeout is how long a stopping worker waits for its running
// activities before the SDK cancels them (worker.Options). The scans end
// at once when the worker stops (ScanNetwork); the wait lets each report
// where it stands as a finished run, and lets the SDK send its last
// heartbeat, before the Temporal client closes. Without it, the SDK
// cancels every activity the moment the worker stops: a scan's result
// then fails with "context canceled", and its last heartbeat is cut short.
const WorkerStopTimeout = 2 * time.Second

// ScanNetwork is the activity: it runs Run with Temporal heartbeats.
// The heartbeat details are the ScanProgress, for the Web UI; a retried
// attempt resumes from the cursor in PostgreSQL, which is the truth.
//
// A scan whose lease a newer attempt took ends with a non-retryable
// ErrTypeScanSuperseded error: Temporal ignores the answer of an attempt it
// has replaced, and if this attempt is somehow still the current one (a
// second scanner workflow for the network on the same database), the
// workflow waits a minute before it starts again rather than take the
// lease back at once.
//
// When the worker shuts down, the scan ends like a finished run rather than
// a failure: the workflow schedules the next one at once, for another
// replica (or this one after its restart) to pick up, without a retry
// delay or an error in the logs.
func (s *Scanner) ScanNetwork(ctx context.Context, in workflows.ScanInput) (workflows.ScanProgress, error) {
	stopping := activity.GetWorkerStopChannel(ctx)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stopping: // stop at once, not after the worker's stop timeout
			cancel()
		case <-runCtx.Done():
		}
	}()
	// The SDK sends at most one heartbeat per throttle interval and holds
	// the newest of the others back; when the worker stops, it sends that
	// one on the context it was recorded with while this scan returns. The
	// activity's context ends as the scan returns and would cut that send
	// short (a WARN "RecordActivityHeartbeat with error ... context
	// canceled" per network on every clean stop), so heartbeats carry the
	// activity's values without its cancellation; the SDK bounds each send
	// with its own timeout, and WorkerStopTimeout keeps the client open
	// for it. Once the run ends, the progress goes back as the result, and
	// nothing more is recorded.
	hbCtx := context.WithoutCancel(ctx)
	p, err := s.Run(runCtx, in, func(p workflows.ScanProgress) {
		select {
		case <-stopping:
			return
		case <-runCtx.Done():
			return
		default:
			activity.RecordHeartbeat(hbCtx, p)
		}
	})
	if err != nil && errors.Is(err, context.Canceled) {
		select {
		case <-stopping:
			return p, nil
		default:
		}
	}
	if errors.Is(err, store.ErrScanLeaseLost) {
		return p, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeScanSuperseded, err)
	}
	return p, temporalError(err)
}

// scan is one network's scan in progress.
type scan struct {
	network paywatch.Network
	info    paywatch.NetworkInfo
	client  chains.Client
	log     *slog.Logger
	loaded  bool
	// gen is the scan lease this run holds; 0 until it has taken it.
	gen uint64
	// next is the next block to scan; height = next − 1 is recorded, and
	// hash is its block hash ("" if unknown).
	next, height uint64
	hash         string
	head         uint64
	progress     workflows.ScanProgress
	// confirmFails counts the confirmation passes that failed in a row.
	confirmFails int
	// pace times the polls of a caught-up scan.
	pace tipPace
	// overBudget is set while the scan waits for its daily RPC budget.
	overBudget bool
	// polled is when the last poll started.
	polled time.Time
	// overrun is set while the scan polls past its budget because a
	// payment waits (overBudgetWait).
	overrun bool
	// confirmSoon, while in the future, has the scan look for newly due
	// confirmations between polls (record, sleepConfirming).
	confirmSoon time.Time
	// idle is set while nothing waits on the network (the last check):
	// the scan then stays chains.RecentBlocks behind the head on EVM
	// networks, where a batch costs no header reads.
	idle bool
}

// Run scans in.Network until in.RunFor has passed (0: until ctx ends) and
// returns the progress; heartbeat, if set, gets the progress after every
// poll and during waits. Only ctx ending, an unknown network or a newer
// scan of the network (store.ErrScanLeaseLost) make it return an error:
// everything else is retried after a backoff.
func (s *Scanner) Run(ctx context.Context, in workflows.ScanInput, heartbeat func(workflows.ScanProgress)) (workflows.ScanProgress, error) {
	info, ok := paywatch.LookupNetwork(in.Network)
	if !ok {
		return workflows.ScanProgress{}, paywatch.Errorf(paywatch.EINVALID, "unknown network %q", in.Network)
	}
	if heartbeat == nil {
		heartbeat = func(workflows.ScanProgress) {}
	}
	st := &scan{network: in.Network, info: info, log: s.log.With("network", in.Network)}
	var deadline time.Time
	if in.RunFor > 0 {
		deadline = s.now().Add(in.RunFor)
	}
	defer func() {
		// The run's last requests count too (the next run is a new scan).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitingTimeout)
		defer cancel()
		s.syncUsage(ctx, st, true)
	}()
	var fails int
	var lastErr string
	// failRecord: the network may have a failure record, from this run or
	// an earlier one (another worker, before a restart).
	failRecord := true
	for {
		if err := ctx.Err(); err != nil {
			return st.progress, err
		}
		if !deadline.IsZero() && !s.now().Before(deadline) {
			return st.progress, nil
		}
		if st.loaded {
			s.syncUsage(ctx, st, false)
			if w := s.overBudgetWait(ctx, st); w > 0 {
				heartbeat(st.progress)
				if err := sleep(ctx, s.capped(w, deadline), func() { heartbeat(st.progress) }); err != nil {
					return st.progress, err
				}
				st.pace.reset()
				continue
			}
		}
		start := time.Now()
		st.polled = start
		caughtUp, err := s.poll1(ctx, st)
		if err != nil {
			if ctx.Err() != nil {
				return st.progress, ctx.Err()
			}
			if errors.Is(err, store.ErrScanLeaseLost) {
				st.log.Warn("a newer scan of the network has taken over; this one stops", "height", st.height, "error", err)
				return st.progress, err
			}
			fails++
			wait := backoff(err, fails)
			// Log the first failure, a changed error, then every tenth at
			// WARN; at ERROR once the scanner is failing for /health, then
			// every 100th (failureLevel).
			msg := err.Error()
			if level, ok := failureLevel(fails, msg != lastErr); ok {
				st.log.Log(ctx, level, "scan failed; retrying", "attempt", fails, "retryIn", wait.Round(time.Millisecond), "error", err)
				lastErr = msg
			}
			s.recordFailure(ctx, st, err)
			failRecord = true
			st.pace.reset()
			heartbeat(st.progress)
			if err := sleep(ctx, s.capped(wait, deadline), func() { heartbeat(st.progress) }); err != nil {
				return st.progress, err
			}
			continue
		}
		if fails > 0 {
			st.log.Info("scan recovered", "failedAttempts", fails, "height", st.height)
			fails, lastErr = 0, ""
		}
		if failRecord && s.clearFailure(ctx, st) {
			failRecord = false
		}
		heartbeat(st.progress)
		if caughtUp {
			wait := time.Until(st.pace.next(start, time.Now(), st.head, s.PollInterval(st.network)))
			if st.idle = !s.waiting(ctx, st); st.idle {
				st.pace.reset()
				// Nothing waits: poll rarely, over a long range, and wake
				// at once when a payment comes to wait on the network (a
				// creation with an address here, a network selection).
				st.progress.Idle = true
				err := s.sleepIdle(ctx, st, s.capped(s.IdlePollInterval(st.network), deadline), func() { heartbeat(st.progress) })
				if err != nil {
					return st.progress, err
				}
				continue
			}
			st.progress.Idle = false
			if err := s.sleepConfirming(ctx, st, s.capped(wait, deadline), func() { heartbeat(st.progress) }); err != nil {
				return st.progress, err
			}
		}
	}
}

// poll1 does one step of the scan: load the cursor if needed, then scan
// the next batch; then, whether or not that worked, push the confirmations
// due at the head last seen (confirmDue). caughtUp reports that the scan
// reached the head and should wait for new blocks.
func (s *Scanner) poll1(ctx context.Context, st *scan) (caughtUp bool, err error) {
	caughtUp, err = s.advance(ctx, st)
	if st.loaded {
		s.confirmDue(ctx, st)
	}
	return caughtUp, err
}

// advance loads the cursor if needed, then scans the next batch, within
// the RPC timeout.
func (s *Scanner) advance(ctx context.Context, st *scan) (caughtUp bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.rpcTimeout)
	defer cancel()
	if st.client == nil {
		c, err := s.chains.Client(st.network)
		if err != nil {
			return false, err
		}
		st.client = c
	}
	if !st.loaded {
		if err := s.load(ctx, st); err != nil {
			return false, err
		}
		// A new run (the activity ends every few minutes) keeps an idle
		// network idle rather than reading up to the head each time.
		st.idle = !s.waiting(ctx, st)
		st.progress.Idle = st.idle
	}
	return s.step(ctx, st)
}
