package workflows_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/workflows"
)

// PaymentSuite runs the payment workflow in the SDK's time-skipping test
// environment with every activity mocked by name. A simulated chain makes
// one block per BlockTime from the start, so confirmation waits move
// env.Now() by exactly BlockTime × blocks missing.
type PaymentSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// lifecycle is every input's Lifecycle: the suite runs once for the
	// runs that take their shape from version markers and once for lean
	// ones (workflows.LeanLifecycle), which keep the same rules.
	lifecycle int

	start time.Time

	mu        sync.Mutex
	saved     []paywatch.PaymentState
	hooks     []hook
	delivered []string
	// sends are the delivery attempts made, in order; the first failSends
	// of them get an answer that asks for a retry.
	sends     []sentAttempt
	failSends int
	// chat makes the queue activity say a chat message was queued; chats
	// are the event ids the ChatWorkflow sent.
	chat     bool
	chats    []string
	released []workflows.ReleaseAddressInput
	// chain simulation
	baseHead uint64
	stallAt  *uint64         // head frozen here when set
	reorged  map[string]bool // tx hashes whose block is no longer canonical
	final    []paywatch.Transaction
	// lateChain are transfers on chain before the late window's end that
	// no signal reported (a scanner stopped by its budget, or lagging):
	// only the check at the window's end (Until set) finds them. finalIns
	// are the final checks' inputs.
	lateChain []paywatch.Transaction
	finalIns  []workflows.FinalCheckInput
	finalRuns int
	// finalFails and checkFails are how many attempts of the final check
	// and of the confirmation check fail (with a transient error) before
	// they answer again.
	finalFails int
	checkFails int
	verify     map[string]workflows.VerifyTxHashResult
	verifyIn   time.Duration
	claimErr   map[string]error
	claims     []workflows.ClaimTxHashInput
	selects    int
	selectErr  error
	selectIn   time.Duration
	deliverIn  time.Duration
	finalIn    time.Duration
	updates    int
	// devnetBlock, when set, is the simulated chain's block interval, which
	// the check-transfers activity reports as a devnet chain's would.
	devnetBlock time.Duration
	// noScanner stops the simulated scanner (scanBlock): no
	// transfer-confirmed signal comes, as on a network no scanner runs.
	noScanner bool
	// scanned holds the transfers (tx hash, block hash) the simulated
	// scanner signalled; checks counts the check-transfers calls.
	scanned map[string]bool
	checks  int
	// checkIn is how long a confirmation check takes.
	checkIn time.Duration
	// saveIn is how long saving the state takes; saveFails is how many
	// saves fail (the database unreachable) before they succeed again.
	saveIn    time.Duration
	saveFails int
	// row is the network selection the payment's row holds (nil: none);
	// loads counts the read-backs, loadFails how many fail first.
	row       *paywatch.Assignment
	loads     int
	loadFails int
}

type sentAttempt struct {
	in workflows.SendWebhookInput
	at time.Time
}

type hook struct {
	in workflows.QueueWebhookInput
	at time.Time
}

func TestPaymentSuite(t *testing.T) {
	t.Run("markers", func(t *testing.T) { suite.Run(t, new(PaymentSuite)) })
	t.Run("lean", func(t *testing.T) { suite.Run(t, &PaymentSuite{lifecycle: workflows.LeanLifecycle}) })
}

const (
	address   = "0x1111111111111111111111111111111111111111"
	blockTime = 12 * time.Second // ERC20
	required  = 12               // ERC20 confirmations
)

func (s *PaymentSuite) SetupSuite() {
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
}

func (s *PaymentSuite) SetupTest() {
	s.start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s.saved, s.hooks, s.delivered, s.released = nil, nil, nil, nil
	s.sends, s.failSends = nil, 0
	s.chat, s.chats = false, nil
	s.baseHead, s.stallAt = 1000, nil
	s.reorged = map[string]bool{}
	s.final, s.finalRuns = nil, 0
	s.lateChain, s.finalIns = nil, nil
	s.finalFails, s.checkFails = 0, 0
	s.verify, s.verifyIn = map[string]workflows.VerifyTxHashResult{}, 0
	s.claimErr, s.claims = map[string]error{}, nil
	s.selects, s.selectErr, s.selectIn = 0, nil, 0
	s.deliverIn, s.finalIn = 0, 0
	s.devnetBlock = 0
	s.noScanner, s.scanned, s.checks, s.checkIn = false, map[string]bool{}, 0, 0
	s.saveIn, s.row, s.loads, s.loadFails = 0, nil, 0, 0
	s.saveFails = 0

	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(s.start)
	workflows.Register(env, activities.New(activities.Deps{}))
	s.env = env

	// Saving the state and releasing the address are not stubs but
	// requirements of each run: expect or observe registers them.
	env.OnActivity(workflows.ActivityQueueWebhook, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.QueueWebhookInput) (workflows.QueueWebhookResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.hooks = append(s.hooks, hook{in: in, at: env.Now().UTC()})
			return workflows.QueueWebhookResult{Chat: s.chat}, nil
		}).Maybe()
	env.OnActivity(workflows.ActivitySendChat, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.SendChatInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.chats = append(s.chats, in.EventID)
			return nil
		}).Maybe()
	env.OnActivity(workflows.ActivitySendWebhook, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return s.deliverIn }).Return(
		func(_ context.Context, in workflows.SendWebhookInput) (workflows.SendWebhookResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.sends = append(s.sends, sentAttempt{in: in, at: env.Now().UTC()})
			if len(s.sends) <= s.failSends {
				return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeRetry, StatusCode: 503}, nil
			}
			s.delivered = append(s.delivered, in.EventID)
			return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeDelivered, StatusCode: 200}, nil
		}).Maybe()
	env.OnActivity(workflows.ActivityRecordWebhookAttempt, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(workflows.ActivityCheckTransfers, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return s.checkIn }).Return(
		func(_ context.Context, in workflows.CheckTransfersInput) (workflows.CheckTransfersResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.checkFails > 0 {
				s.checkFails--
				return workflows.CheckTransfersResult{}, errors.New("rpc unavailable")
			}
			s.checks++
			head := s.head()
			res := workflows.CheckTransfersResult{Head: head, BlockTime: s.devnetBlock}
			for _, t := range in.Transfers {
				c := workflows.TransferCheck{TxHash: t.TxHash, LogIndex: t.LogIndex, Canonical: !s.reorged[t.TxHash]}
				if t.BlockNumber <= head {
					c.Confirmations = int(head - t.BlockNumber + 1)
				}
				res.Transfers = append(res.Transfers, c)
			}
			return res, nil
		}).Maybe()
	env.OnActivity(workflows.ActivityFinalCheck, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return s.finalIn }).Return(
		func(_ context.Context, in workflows.FinalCheckInput) (workflows.FinalCheckResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.finalRuns++
			s.finalIns = append(s.finalIns, in)
			if s.finalFails > 0 {
				s.finalFails--
				return workflows.FinalCheckResult{}, errors.New("rpc unavailable")
			}
			if !in.Until.IsZero() {
				return workflows.FinalCheckResult{Head: s.head(), Transfers: append(slices.Clone(s.final), s.lateChain...)}, nil
			}
			return workflows.FinalCheckResult{Head: s.head(), Transfers: s.final}, nil
		}).Maybe()
	env.OnActivity(workflows.ActivityVerifyTxHash, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return s.verifyIn }).Return(
		func(_ context.Context, in workflows.VerifyTxHashInput) (workflows.VerifyTxHashResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.verify[in.TxHash], nil
		}).Maybe()
	env.OnActivity(workflows.ActivityClaimTxHash, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.ClaimTxHashInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.claims = append(s.claims, in)
			return s.claimErr[in.TxHash]
		}).Maybe()
	env.OnActivity(workflows.ActivityLoadAssignment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.LoadAssignmentInput) (workflows.LoadAssignmentResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.loads++
			if s.loadFails > 0 {
				s.loadFails--
				return workflows.LoadAssignmentResult{}, errors.New("database unavailable")
			}
			if s.row == nil {
				return workflows.LoadAssignmentResult{}, nil
			}
			return workflows.LoadAssignmentResult{Assigned: true, Assignment: *s.row}, nil
		}).Maybe()
	env.OnActivity(workflows.ActivitySelectNetwork, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return s.selectIn }).Return(
		func(_ context.Context, in workflows.SelectNetworkInput) (paywatch.Assignment, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.selects++
			if s.selectErr != nil {
				return paywatch.Assignment{}, s.selectErr
			}
			return paywatch.Assignment{
				Network: in.Network, Token: in.Token, Address: address,
				Amount: amt("50.00"), StartBlock: s.head(), AssignedAt: s.start,
			}, nil
		}).Maybe()
}

// TearDownTest asserts the run's required activity calls (see expect).
func (s *PaymentSuite) TearDownTest() {
	s.env.AssertExpectations(s.T())
}

// noRelease is the outcome of a run that must release nothing: the
// payment never had an address, or the run continues as new.
const noRelease paywatch.Status = ""

// expect registers the save and release activities for a run of in that
// ends with outcome, as requirements that TearDownTest asserts: the state
// is saved (run checks that every version is, once and in order), and the
// address is released exactly once with outcome, or never for noRelease.
// Any other release is recorded too, for run to report.
func (s *PaymentSuite) expect(in paywatch.PaymentInput, outcome paywatch.Status) {
	s.env.OnActivity(workflows.ActivitySavePaymentState, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return s.saveIn }).Return(s.save)
	if outcome != noRelease {
		s.env.OnActivity(workflows.ActivityReleaseAddress, mock.Anything,
			workflows.ReleaseAddressInput{PaymentID: in.PaymentID, Outcome: outcome}).Return(s.release).Once()
	}
	s.env.OnActivity(workflows.ActivityReleaseAddress, mock.Anything, mock.Anything).Return(s.release).Maybe()
}

// stored is a saved state as the API shows it: its status and the
// confirmed amount paid.
type stored struct {
	Status paywatch.Status
	Paid   string
}

// observe runs in until the test stops it midway (env.CancelWorkflow).
// Stopped midway, the payment has not ended, so nothing is released. The
// saved states must be want, in version order, once consecutive saves of
// the same status and paid amount (a confirmation count moving) are
// folded; and the last must be the state the workflow stopped with.
func (s *PaymentSuite) observe(in paywatch.PaymentInput, want ...stored) {
	save := s.env.OnActivity(workflows.ActivitySavePaymentState, mock.Anything, mock.Anything).Return(s.save)
	if len(want) == 0 {
		save.Maybe() // recorded only for the check below, which requires none
	}
	// Recorded only for the check below, which requires none.
	s.env.OnActivity(workflows.ActivityReleaseAddress, mock.Anything, mock.Anything).Return(s.release).Maybe()
	s.execute(in)
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Empty(s.released, "a payment stopped midway releases nothing")
	s.Require().True(temporal.IsCanceledError(s.env.GetWorkflowError()), "stopped midway, got %v", s.env.GetWorkflowError())
	var got []stored
	for _, st := range s.saved {
		v := stored{Status: st.Status, Paid: st.PaidAmount.String()}
		if len(got) == 0 || got[len(got)-1] != v {
			got = append(got, v)
		}
	}
	s.Equal(want, got, "saved statuses and paid amounts")
	s.assertSavedInOrder(in)
	if len(want) == 0 {
		s.Zero(s.query().Version, "nothing committed")
	} else {
		s.Equal(s.query().Version, s.last().Version, "the state it stopped with is saved")
	}
}

func (s *PaymentSuite) save(_ context.Context, st paywatch.PaymentState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saveFails > 0 {
		s.saveFails--
		return errors.New("database unreachable")
	}
	s.saved = append(s.saved, st)
	return nil
}

func (s *PaymentSuite) release(_ context.Context, in workflows.ReleaseAddressInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, in)
	return nil
}

// head is the simulated chain head: one block per blockTime since start.
func (s *PaymentSuite) head() uint64 {
	if s.stallAt != nil {
		return *s.stallAt
	}
	return s.baseHead + uint64(s.env.Now().Sub(s.start)/s.every())
}

// every is the simulated chain's block interval.
func (s *PaymentSuite) every() time.Duration {
	if s.devnetBlock > 0 {
		return s.devnetBlock
	}
	return blockTime
}

// nextBlock is when the simulated chain makes its first block after t
// (or at t), the earliest the simulated scanner sees what happened at t.
func (s *PaymentSuite) nextBlock(t time.Time) time.Time {
	every := s.every()
	n := (t.Sub(s.start) + every - 1) / every
	return s.start.Add(n * every)
}

// execute runs the workflow with the simulated scanner beside it.
func (s *PaymentSuite) execute(in paywatch.PaymentInput) {
	s.env.RegisterDelayedCallback(s.scanBlock, s.every())
	s.env.ExecuteWorkflow(workflows.PaymentWorkflowType(in.Lifecycle), in)
}

// scanBlock is the simulated network scanner (activities.Scanner.confirm),
// run at every block: it signals each transfer that the last saved state
// awaits once its block has the network's confirmations at the head, once
// per block the transfer is in, canonical unless the test reorged it.
func (s *PaymentSuite) scanBlock() {
	if s.env.IsWorkflowCompleted() {
		return
	}
	s.env.RegisterDelayedCallback(s.scanBlock, s.every())
	if s.noScanner {
		return
	}
	s.mu.Lock()
	var due workflows.TransfersConfirmed
	if len(s.saved) > 0 {
		st := slices.MaxFunc(s.saved, func(a, b paywatch.PaymentState) int { return cmp.Compare(a.Version, b.Version) })
		info, _ := paywatch.LookupNetwork(st.Network)
		head := s.head()
		for _, t := range st.Transactions {
			key := fmt.Sprintf("%s/%d@%s", t.TxHash, t.LogIndex, t.BlockHash)
			if t.Confirmed || s.scanned[key] || t.BlockNumber+uint64(info.Confirmations)-1 > head {
				continue
			}
			s.scanned[key] = true
			due.Transfers = append(due.Transfers, workflows.TransferConfirmed{
				TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash,
				Confirmations: int(head - t.BlockNumber + 1), Canonical: !s.reorged[t.TxHash],
			})
		}
	}
	s.mu.Unlock()
	if len(due.Transfers) > 0 {
		s.env.SignalWorkflow(workflows.SignalTransfersConfirmed, due)
	}
}

// markersOnly skips a test of a version before LeanLifecycle in the lean
// pass: lean runs never ask for a version, so no older one can be pinned.
func (s *PaymentSuite) markersOnly() {
	if s.lifecycle >= workflows.LeanLifecycle {
		s.T().Skip("pins a version before LeanLifecycle")
	}
}

// now is the test environment's clock in UTC.
func (s *PaymentSuite) now() time.Time { return s.env.Now().UTC() }

func amt(v string) paywatch.Amount { return paywatch.MustParseAmount(v, 6) }

// input is a per_payment USDT payment of 50.00 on ERC20 expiring in 1 h.
func (s *PaymentSuite) input() paywatch.PaymentInput {
	return paywatch.PaymentInput{
		PaymentID:         "9b2f6a52-0000-4000-8000-000000000001",
		ProjectID:         1,
		ProjectSlug:       "shop",
		Mode:              paywatch.ModePerPayment,
		Network:           paywatch.ERC20,
		Token:             paywatch.USDT,
		Address:           address,
		StartBlock:        s.baseHead,
		Amount:            amt("50.00"),
		ExternalRef:       "customer-1",
		CreatedAt:         s.start,
		ExpiresAt:         s.start.Add(time.Hour),
		AddressAssignedAt: s.start,
		Lifecycle:         s.lifecycle,
	}
}

// transfer is a transfer mined in the current head block.
func (s *PaymentSuite) transfer(hash, amount string) paywatch.Transaction {
	h := s.head()
	return paywatch.Transaction{TxHash: hash, LogIndex: 0, BlockNumber: h, BlockHash: fmt.Sprintf("0xblock%d", h), From: "0xfrom", Amount: amt(amount)}
}

// at runs fn at start + d.
func (s *PaymentSuite) at(d time.Duration, fn func()) {
	s.env.RegisterDelayedCallback(fn, d)
}

func (s *PaymentSuite) signal(hash, amount string) {
	s.env.SignalWorkflow(workflows.SignalTransferSeen, s.transfer(hash, amount))
}

func (s *PaymentSuite) query() paywatch.PaymentState {
	v, err := s.env.QueryWorkflow(workflows.QueryState)
	s.Require().NoError(err)
	var st paywatch.PaymentState
	s.Require().NoError(v.Get(&st))
	return st
}

// update sends an update and returns its result or rejection; the
// callbacks run synchronously inside the test environment.
func (s *PaymentSuite) update(name string, arg any, result *any, err *error) {
	s.updates++
	s.env.UpdateWorkflow(name, fmt.Sprintf("update-%d", s.updates), &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(e error) { *err = e },
		OnComplete: func(v any, e error) { *result, *err = v, e },
	}, arg)
}

// run runs the workflow to its end, which must release the payment's
// address with outcome (or nothing, for noRelease), and checks that every
// state version it committed was saved once, in order, up to the last.
func (s *PaymentSuite) run(in paywatch.PaymentInput, outcome paywatch.Status) {
	s.expect(in, outcome)
	s.execute(in)
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	if outcome == noRelease {
		s.Empty(s.released, "nothing to release")
	} else {
		s.Equal([]workflows.ReleaseAddressInput{{PaymentID: in.PaymentID, Outcome: outcome}}, s.released, "released once, with the outcome")
	}
	s.assertSavedInOrder(in)
	s.Equal(s.query().Version, s.last().Version, "the final state is saved")
}

// assertSavedInOrder checks that the saved versions follow each other
// from the run's first commit on: none skipped, none saved twice. Saves
// issued by two handlers at once are concurrent activities that may run in
// either order (the store keeps the newer version), so they are compared
// by version.
func (s *PaymentSuite) assertSavedInOrder(in paywatch.PaymentInput) {
	s.T().Helper()
	next := int64(1)
	if in.Carry != nil {
		next = in.Carry.Version + 1
	}
	saved := slices.Clone(s.saved)
	slices.SortStableFunc(saved, func(a, b paywatch.PaymentState) int { return cmp.Compare(a.Version, b.Version) })
	for _, st := range saved {
		s.Equal(next, st.Version, "saved versions in order")
		next = st.Version + 1
	}
}

func (s *PaymentSuite) events() []paywatch.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []paywatch.Event
	for _, h := range s.hooks {
		out = append(out, h.in.Event)
	}
	return out
}

// last is the newest saved state, the one the store keeps (its version
// guard ignores an older save that runs after a newer one).
func (s *PaymentSuite) last() paywatch.PaymentState {
	s.Require().NotEmpty(s.saved)
	return slices.MaxFunc(s.saved, func(a, b paywatch.PaymentState) int { return cmp.Compare(a.Version, b.Version) })
}

// assertRejected checks an update rejection's type and exact message.
func (s *PaymentSuite) assertRejected(err error, typ, msg string) {
	s.T().Helper()
	var app *temporal.ApplicationError
	s.Require().True(errors.As(err, &app), "want an application error, got %v", err)
	s.Equal(typ, app.Type())
	s.Equal(msg, app.Message())
}

// --- Transition table -----------------------------------------------------

// pending → confirming above the dust threshold, no webhook for confirming.
func (s *PaymentSuite) TestPendingToConfirmingSendsNoWebhook() {
	s.stallAt = ptr(uint64(1000)) // confirmations never come
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.at(2*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusConfirming, st.Status)
		s.Len(st.Transactions, 1)
		s.False(st.Transactions[0].Confirmed)
		s.Empty(s.events())
		s.env.CancelWorkflow()
	})
	s.observe(s.input(), stored{paywatch.StatusConfirming, "0.00"})
	s.Empty(s.events())
	s.Require().Len(s.last().Transactions, 1)
	s.Equal("0xa", s.last().Transactions[0].TxHash)
	s.False(s.last().Transactions[0].Confirmed)
}

// A transfer below the dust threshold is ignored: no status change, no
// save, no webhook.
func (s *PaymentSuite) TestDustIsIgnored() {
	s.at(time.Minute, func() { s.signal("0xdust", "0.09") })
	s.at(2*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPending, st.Status)
		s.Empty(st.Transactions)
		s.Empty(s.saved)
		s.Empty(s.events())
		s.env.CancelWorkflow()
	})
	s.observe(s.input())
}

// A project minimum replaces the global dust threshold.
func (s *PaymentSuite) TestProjectMinimumIsTheDustThreshold() {
	in := s.input()
	minimum := paywatch.MustParseAmount("5.00", 2)
	in.DustMinimum = &minimum
	s.stallAt = ptr(uint64(1000))
	s.at(time.Minute, func() { s.signal("0xsmall", "4.99") })
	s.at(2*time.Minute, func() {
		s.Equal(paywatch.StatusPending, s.query().Status)
		s.signal("0xbig", "5.00")
	})
	s.at(3*time.Minute, func() {
		s.Equal(paywatch.StatusConfirming, s.query().Status)
		s.env.CancelWorkflow()
	})
	s.observe(in, stored{paywatch.StatusConfirming, "0.00"})
	s.Require().Len(s.last().Transactions, 1, "the transfer below the minimum is not stored")
	s.Equal("0xbig", s.last().Transactions[0].TxHash)
}

// confirming → paid after the network's confirmations: one
// payment.completed, and the wait is exactly BlockTime × blocks missing.
func (s *PaymentSuite) TestConfirmedMatchingAmountIsPaid() {
	s.at(time.Minute, func() { s.signal("0xa", "50.20") }) // within 1 %
	s.run(s.input(), paywatch.StatusPaid)
	st := s.last()
	s.Equal(paywatch.StatusPaid, st.Status)
	s.Equal("50.20", st.PaidAmount.String())
	s.Equal("0xa", st.TxHash)
	s.True(st.Transactions[0].Confirmed)
	s.Equal(required, st.Transactions[0].Confirmations)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	// Seen at +1 min with 1 confirmation, 11 blocks of 12 s missing.
	s.Equal(s.start.Add(time.Minute+11*blockTime), st.PaidAt.UTC())
	s.Equal(s.start.Add(time.Minute+11*blockTime), s.hooks[0].at)
	s.False(s.hooks[0].in.State.LatePayment)
	s.Len(s.delivered, 1)
	s.Equal(workflows.EventID(st.PaymentID, 1), s.hooks[0].in.EventID)
}

// The scanner's word is enough: the payment turns paid at the block that
// gives the 12th confirmation without asking the chain itself.
func (s *PaymentSuite) TestScannerSignalConfirmsAtTheExactBlock() {
	s.at(time.Minute+5*time.Second, func() { s.signal("0xa", "50.00") }) // in the block of +1:00
	s.run(s.input(), paywatch.StatusPaid)
	st := s.last()
	s.Equal(s.start.Add(time.Minute+11*blockTime), st.PaidAt.UTC(), "paid at the block that confirms it")
	s.Equal(required, st.Transactions[0].Confirmations)
	s.Zero(s.checks, "no confirmation check of the workflow's own")
}

// Without the scanner's signal (a network no scanner runs), the payment
// asks the chain itself after the safety interval, not at a block-time
// estimate.
func (s *PaymentSuite) TestSafetyCheckConfirmsWithoutScanner() {
	s.noScanner = true
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.at(time.Minute+11*blockTime+time.Second, func() {
		s.Equal(paywatch.StatusConfirming, s.query().Status, "no guess at the block time")
	})
	s.run(s.input(), paywatch.StatusPaid)
	s.Equal(s.start.Add(11*time.Minute), s.last().PaidAt.UTC())
	s.Equal(1, s.checks)
}

// A confirmation signal about another block than the one the payment saw
// the transfer in (it was mined again meanwhile), or with too few
// confirmations, confirms nothing; the right one does.
func (s *PaymentSuite) TestConfirmationSignalForAnotherBlockIsIgnored() {
	s.noScanner = true
	var t paywatch.Transaction
	s.at(time.Minute, func() {
		t = s.transfer("0xa", "50.00")
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t)
	})
	confirm := func(blockHash string, confirmations int) func() {
		return func() {
			s.env.SignalWorkflow(workflows.SignalTransfersConfirmed, workflows.TransfersConfirmed{Transfers: []workflows.TransferConfirmed{{
				TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, BlockHash: blockHash,
				Confirmations: confirmations, Canonical: true,
			}}})
		}
	}
	s.at(4*time.Minute, func() { confirm("0xotherblock", required)() })
	s.at(4*time.Minute+time.Second, func() { confirm(t.BlockHash, required-1)() })
	s.at(5*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusConfirming, st.Status)
		s.False(st.Transactions[0].Confirmed)
	})
	s.at(6*time.Minute, func() { confirm(strings.ToUpper(t.BlockHash), required+3)() })
	s.run(s.input(), paywatch.StatusPaid)
	s.Equal(s.start.Add(6*time.Minute), s.last().PaidAt.UTC())
	s.Equal(required+3, s.last().Transactions[0].Confirmations)
	s.Zero(s.checks)
}

// Two transfers confirmed by the same block count together: 30 + 30
// against 50 is overpaid, with one webhook, not paid at the first.
func (s *PaymentSuite) TestTransfersConfirmedTogetherCountTogether() {
	s.at(time.Minute, func() {
		s.signal("0xa", "30.00")
		s.signal("0xb", "30.00")
	})
	s.run(s.input(), paywatch.StatusOverpaid)
	s.Equal([]paywatch.Event{paywatch.EventOverpaid}, s.events())
	s.Equal("60.00", s.last().PaidAmount.String())
}

// A run from before changeConfirmationsPushed keeps its block-time waits:
// on a chain that makes blocks faster than the network's mainnet pace (a
// devnet chain), the check-transfers activity reports the real interval and
// the confirmation wait follows it, 11 blocks of 1 s, not of 12 s; and it
// ignores the scanner's signal.
func (s *PaymentSuite) TestOldRunsWaitTheReportedBlockTime() {
	s.markersOnly()
	s.env.OnGetVersion("confirmations-pushed", workflow.DefaultVersion, 4).Return(workflow.DefaultVersion)
	s.devnetBlock = time.Second
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.run(s.input(), paywatch.StatusPaid)
	st := s.last()
	s.Equal(paywatch.StatusPaid, st.Status)
	s.Equal(s.start.Add(time.Minute+11*time.Second), st.PaidAt.UTC())
	s.Equal(2, s.checks, "asked at once, then when the estimate says")
	s.NotEmpty(s.scanned, "the scanner signalled too, and was ignored")
}

// The scanner's word that a transfer confirmed, arriving while the check
// at the end of the confirming grace runs, is read before the payment
// expires (issue 24): the payment is paid. One arriving after the payment
// expired changes nothing: a per_user payment has no late window.
func (s *PaymentSuite) TestConfirmationDuringTheLastCheckCounts() {
	for _, after := range []time.Duration{2 * time.Second, 10 * time.Second} {
		s.Run(after.String(), func() {
			s.SetupTest()
			in := s.input()
			in.Mode = paywatch.ModePerUser
			grace := in.ExpiresAt.Add(paywatch.ConfirmingGrace)
			s.noScanner = true
			s.checkIn = 5 * time.Second
			var t paywatch.Transaction
			s.at(59*time.Minute, func() {
				t = s.transfer("0xa", "50.00")
				s.env.SignalWorkflow(workflows.SignalTransferSeen, t)
				h := s.head()
				s.stallAt = &h // no confirmations by the end of the grace
			})
			s.at(grace.Sub(s.start)+after, func() {
				s.env.SignalWorkflow(workflows.SignalTransfersConfirmed, workflows.TransfersConfirmed{Transfers: []workflows.TransferConfirmed{{
					TxHash: t.TxHash, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, Confirmations: required, Canonical: true,
				}}})
			})
			if after < s.checkIn {
				s.run(in, paywatch.StatusPaid)
				s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
				s.False(s.last().LatePayment)
				return
			}
			s.run(in, paywatch.StatusExpired)
			s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
			s.Equal(paywatch.StatusExpired, s.last().Status)
			s.False(s.last().Transactions[0].Confirmed)
			s.env.AssertExpectations(s.T())
		})
	}
}

// confirming → overpaid above expected × 1.01.
func (s *PaymentSuite) TestConfirmedAboveToleranceIsOverpaid() {
	s.at(time.Minute, func() { s.signal("0xa", "50.51") })
	s.run(s.input(), paywatch.StatusOverpaid)
	s.Equal(paywatch.StatusOverpaid, s.last().Status)
	s.Equal([]paywatch.Event{paywatch.EventOverpaid}, s.events())
}

// confirming → partial counts confirmed funds only; partial → paid when
// further transfers to the same address reach the amount.
func (s *PaymentSuite) TestPartialThenTopUpIsPaid() {
	s.at(time.Minute, func() { s.signal("0xa", "20.00") })
	s.at(10*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPartial, st.Status)
		s.signal("0xb", "30.00")
		s.signal("0xc", "10.00") // still confirming when the partial webhook... is already sent
	})
	s.at(10*time.Minute+time.Second, func() {
		st := s.query()
		s.Equal(paywatch.StatusPartial, st.Status, "a partial payment stays partial while new funds confirm")
		s.Equal("20.00", st.PaidAmount.String())
	})
	s.run(s.input(), paywatch.StatusOverpaid)
	s.Equal([]paywatch.Event{paywatch.EventPartial, paywatch.EventOverpaid}, s.events())
	s.Equal("20.00", s.hooks[0].in.State.PaidAmount.String(), "partial webhook counts confirmed funds only")
	s.Equal("60.00", s.last().PaidAmount.String())
	s.Equal(s.start.Add(10*time.Minute+11*blockTime), s.hooks[1].at)
}

// payment.partial is sent again whenever the confirmed amount grows, and a
// partial payment at the deadline becomes expired (reported as expired).
func (s *PaymentSuite) TestPartialSentAgainForLargerAmountThenExpires() {
	in := s.input()
	in.Mode = paywatch.ModePerUser // no late window: the workflow ends at expiry
	s.at(time.Minute, func() { s.signal("0xa", "10.00") })
	s.at(10*time.Minute, func() { s.signal("0xb", "15.00") })
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventPartial, paywatch.EventPartial, paywatch.EventExpired}, s.events())
	s.Equal("10.00", s.hooks[0].in.State.PaidAmount.String())
	s.Equal("25.00", s.hooks[1].in.State.PaidAmount.String())
	s.Equal(paywatch.StatusExpired, s.hooks[2].in.State.Status)
	s.Equal("25.00", s.hooks[2].in.State.PaidAmount.String())
	// Partial with nothing confirming expires at ExpiresAt, after one more
	// on-chain check.
	s.Equal(in.ExpiresAt, s.hooks[2].at)
	s.Equal(1, s.finalRuns)
	s.Equal(in.ExpiresAt, s.now())
}

// pending → cancelled: payment.cancelled, monitoring stops at once.
func (s *PaymentSuite) TestCancelPending() {
	var res any
	var err error
	s.at(5*time.Minute, func() { s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &err) })
	s.run(s.input(), paywatch.StatusCancelled)
	s.Require().NoError(err)
	s.Equal(paywatch.StatusCancelled, res.(paywatch.PaymentState).Status)
	s.Equal([]paywatch.Event{paywatch.EventCancelled}, s.events())
	s.Equal(paywatch.StatusCancelled, s.last().Status)
	s.Equal(s.start.Add(5*time.Minute), s.now())
}

// Only pending payments can be cancelled, with the exact 409 message.
func (s *PaymentSuite) TestCancelNonPendingIsRefused() {
	var res any
	var err error
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.at(2*time.Minute, func() { s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &err) })
	s.run(s.input(), paywatch.StatusPaid)
	s.assertRejected(err, paywatch.ECONFLICT, `Cannot cancel payment with status "confirming". Only pending payments can be cancelled.`)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
}

// A transfer the workflow has already handled makes the cancel fail in
// its validator: the payment is confirming.
func (s *PaymentSuite) TestCancelAfterTransferIsRefused() {
	var res any
	var err error
	s.at(time.Minute, func() {
		s.signal("0xa", "50.00")
		s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &err)
	})
	s.run(s.input(), paywatch.StatusPaid)
	s.assertRejected(err, paywatch.ECONFLICT, `Cannot cancel payment with status "confirming". Only pending payments can be cancelled.`)
	s.Equal(paywatch.StatusPaid, s.last().Status)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
}

// The boundary: a second before the payment is shown expired it can be
// cancelled; at the moment it is shown expired it cannot, and it expires
// after its final check with payment.expired alone.
func (s *PaymentSuite) TestCancelJustBeforeShownExpiry() {
	s.cancelAt(-time.Second, paywatch.StatusCancelled, paywatch.EventCancelled)
}

func (s *PaymentSuite) TestCancelAtShownExpiryIsRefused() {
	s.cancelAt(0, paywatch.StatusExpired, paywatch.EventExpired)
}

// From 3 minutes past expires_at GET shows a pending payment as expired,
// so a cancel is refused with that status even while the final on-chain
// check still runs and the payment is pending inside the workflow.
func (s *PaymentSuite) TestCancelDuringFinalCheckIsRefused() {
	s.cancelAt(30*time.Second, paywatch.StatusExpired, paywatch.EventExpired)
}

// cancelAt cancels a per_user payment (no late window, so the run ends at
// expiry) at offset from the moment it is shown expired, and checks where
// it ends.
func (s *PaymentSuite) cancelAt(offset time.Duration, status paywatch.Status, event paywatch.Event) {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.finalIn = time.Minute
	var res any
	var err error
	s.at(in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter).Sub(s.start)+offset, func() {
		s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &err)
	})
	s.run(in, status)
	if status == paywatch.StatusCancelled {
		s.Require().NoError(err)
	} else {
		s.assertRejected(err, paywatch.ECONFLICT, `Cannot cancel payment with status "expired". Only pending payments can be cancelled.`)
	}
	s.Equal(status, s.last().Status)
	s.Equal([]paywatch.Event{event}, s.events())
}

// After a cancel, transfers are ignored: monitoring stopped.
func (s *PaymentSuite) TestTransferAfterCancelIsIgnored() {
	var res any
	var err error
	s.at(time.Minute, func() {
		s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &err)
		s.signal("0xa", "50.00")
	})
	s.run(s.input(), paywatch.StatusCancelled)
	s.Require().NoError(err)
	s.Equal(paywatch.StatusCancelled, s.last().Status)
	s.Empty(s.last().Transactions)
	s.Equal([]paywatch.Event{paywatch.EventCancelled}, s.events())
}

// pending → expired when the window ends: at ExpiresAt + 3 min (never
// shown before), after one on-chain check; per_user has no late window.
func (s *PaymentSuite) TestPendingExpiresThreeMinutesAfterDeadline() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.at(time.Hour+time.Minute, func() {
		s.Equal(paywatch.StatusPending, s.query().Status, "still pending inside the display grace")
	})
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
	s.Equal(in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter), s.hooks[0].at)
	s.Equal(in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter), s.now())
	s.Equal(1, s.finalRuns)
}

// A transfer in flight at the deadline (inside the 3-minute grace) counts.
func (s *PaymentSuite) TestTransferInsideDisplayGraceCounts() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.at(time.Hour+time.Minute, func() { s.signal("0xa", "50.00") })
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.Equal(s.start.Add(time.Hour+time.Minute+11*blockTime), s.now())
}

// The final on-chain check finds a transfer the scanner missed: the
// payment confirms inside the confirming grace instead of expiring.
func (s *PaymentSuite) TestFinalCheckFindsMissedTransfer() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	deadline := in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter)
	block := s.baseHead + uint64(deadline.Sub(s.start)/blockTime) - 2
	s.final = []paywatch.Transaction{{TxHash: "0xmissed", BlockNumber: block, BlockHash: fmt.Sprintf("0xblock%d", block), From: "0xf", Amount: amt("50.00")}}
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	// 3 confirmations at the check, 9 blocks missing.
	s.Equal(deadline.Add(9*blockTime), s.now())
}

// "Re-check chain" asks the chain now: a transfer the scanners missed is
// counted at once, not at the deadline, and then confirms as any other.
// A payment without a network, or a finished one, refuses the re-check.
func (s *PaymentSuite) TestRecheckFindsMissedTransferNow() {
	in := s.input()
	block := s.baseHead + uint64(10*time.Minute/blockTime) - 2
	s.final = []paywatch.Transaction{{TxHash: "0xmissed", BlockNumber: block, BlockHash: fmt.Sprintf("0xblock%d", block), From: "0xf", Amount: amt("50.00")}}
	var r any
	var e error
	s.at(10*time.Minute, func() {
		s.update(workflows.UpdateRecheck, workflows.RecheckRequest{}, &r, &e)
	})
	s.run(in, paywatch.StatusPaid)
	s.Require().NoError(e)
	st := r.(paywatch.PaymentState)
	s.Require().Len(st.Transactions, 1)
	s.Equal("0xmissed", st.Transactions[0].TxHash)
	s.Equal(1, s.finalRuns, "one look at the chain, no deadline check needed")
	s.Equal(paywatch.StatusPaid, s.last().Status)
	// Paid once its 12 confirmations are in: long before the window ends.
	s.Less(s.last().PaidAt.UTC().Sub(s.start), 15*time.Minute)
}

// A payment without a network has no address to re-check: refused, and
// nothing is asked of the chain.
func (s *PaymentSuite) TestRecheckWithoutNetworkIsRefused() {
	var r any
	var e error
	s.at(time.Minute, func() {
		s.update(workflows.UpdateRecheck, workflows.RecheckRequest{}, &r, &e)
		s.env.CancelWorkflow()
	})
	s.execute(s.networkless())
	s.Require().Error(e)
	s.Equal(paywatch.EINVALID, workflows.ErrorCode(e))
	s.Contains(e.Error(), paywatch.MsgNoNetworkToRecheck)
	s.Zero(s.finalRuns)
}

// A final check that fails (after its activity's retries) does not expire
// the payment: it is tried again a minute later, and a transfer it then
// finds counts as on time.
func (s *PaymentSuite) TestFailedFinalCheckIsRetried() {
	in := s.input()
	deadline := in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter)
	block := s.baseHead + uint64(deadline.Sub(s.start)/blockTime) - 2
	s.final = []paywatch.Transaction{{TxHash: "0xmissed", BlockNumber: block, BlockHash: fmt.Sprintf("0xblock%d", block), From: "0xf", Amount: amt("50.00")}}
	s.finalFails = 8 // two runs of the activity, 4 attempts each
	s.at(deadline.Sub(s.start)+30*time.Second, func() {
		s.Equal(paywatch.StatusPending, s.query().Status, "not expired by a failed check")
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal(9, s.finalRuns)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	st := s.last()
	s.Equal(paywatch.StatusPaid, st.Status)
	s.False(st.LatePayment)
	s.Equal("0xmissed", st.TxHash)
	// Each failed run takes 14 s (retries after 2, 4 and 8 s) and the next
	// is a minute later: the third run answers at E+3m+2×74s. The
	// transfer already has its confirmations, and the scanner says so at
	// its next block.
	paidAt := s.nextBlock(deadline.Add(2 * (14*time.Second + time.Minute)))
	s.Equal(paidAt, st.PaidAt.UTC())
	s.Equal(paidAt, s.now())
}

// A payment without a network expires without a webhook and has no
// address to release.
func (s *PaymentSuite) TestNetworklessPaymentExpiresSilently() {
	in := s.input()
	in.Network, in.Token, in.Address, in.StartBlock, in.AddressAssignedAt = "", "", "", 0, time.Time{}
	s.run(in, noRelease)
	s.Equal(paywatch.StatusExpired, s.last().Status)
	s.Empty(s.events())
	s.Equal(in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter), s.now())
}

// confirming at the deadline stays confirming for up to 30 minutes, is
// checked once more and then expires.
func (s *PaymentSuite) TestConfirmingPastGraceExpires() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.at(59*time.Minute, func() {
		s.signal("0xa", "50.00")
		h := s.head()
		s.stallAt = &h // the chain stops: no more confirmations
	})
	s.at(time.Hour+20*time.Minute, func() {
		s.Equal(paywatch.StatusConfirming, s.query().Status)
	})
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
	s.Equal(in.ExpiresAt.Add(paywatch.ConfirmingGrace), s.now())
	s.Equal(in.ExpiresAt.Add(paywatch.ConfirmingGrace), s.hooks[0].at)
}

// confirming at the deadline that confirms inside the grace is paid.
func (s *PaymentSuite) TestConfirmingInsideGraceIsPaid() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.at(59*time.Minute, func() { s.signal("0xa", "50.00") })
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.Equal(s.start.Add(59*time.Minute+11*blockTime), s.now())
}

// A failed confirmation check at the end of the confirming grace does not
// expire the payment either: it is tried again, and funds that confirmed
// meanwhile make it paid.
func (s *PaymentSuite) TestFailedCheckAtEndOfConfirmingGraceIsRetried() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	grace := in.ExpiresAt.Add(paywatch.ConfirmingGrace)
	s.noScanner = true // only the workflow's own checks confirm
	s.at(59*time.Minute, func() {
		s.signal("0xa", "50.00")
		h := s.head()
		s.stallAt = &h
	})
	// With the chain stalled, the safety checks at +69m, +79m and +89m
	// find no confirmations; the next would be at +99m, after the end of
	// the grace (+90m), which checks at once.
	s.at(grace.Sub(s.start)-5*time.Second, func() {
		s.mu.Lock()
		s.checkFails = 4 // the check at the end of the grace fails
		s.stallAt = nil  // and the chain catches up
		s.mu.Unlock()
	})
	s.at(grace.Sub(s.start)+30*time.Second, func() {
		s.Equal(paywatch.StatusConfirming, s.query().Status)
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	retry := grace.Add(14*time.Second + time.Minute)
	s.Equal(retry, s.last().PaidAt.UTC())
	s.Equal(retry, s.now())
}

// A transfer confirmed after the deadline for less than the amount expires
// the payment (a partial past its deadline is reported as expired).
func (s *PaymentSuite) TestShortTransferConfirmedPastDeadlineExpires() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.at(59*time.Minute, func() { s.signal("0xa", "20.00") })
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
	s.Equal("20.00", s.hooks[0].in.State.PaidAmount.String())
}

// expired → paid with late_payment for per_payment within 24 h.
func (s *PaymentSuite) TestLateFundsPerPaymentArePaidLate() {
	s.at(5*time.Hour, func() {
		s.Equal(paywatch.StatusExpired, s.query().Status)
		s.signal("0xlate", "50.00")
	})
	s.run(s.input(), paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventExpired, paywatch.EventCompleted}, s.events())
	late := s.hooks[1].in.State
	s.True(late.LatePayment)
	s.Equal(paywatch.StatusPaid, late.Status)
	s.Equal(s.start.Add(5*time.Hour+11*blockTime), s.now())
}

// Partial late funds update paid_amount but send nothing; the workflow ends
// when the late window closes, 24 h after expiry, and releases the address.
func (s *PaymentSuite) TestLateWindowClosesAfter24Hours() {
	s.at(5*time.Hour, func() { s.signal("0xlate", "10.00") })
	s.run(s.input(), paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
	// Closed once the chain was read up to the window's end, a minute on.
	s.Equal(s.start.Add(time.Hour+paywatch.LateWindow+time.Minute), s.now())
	s.True(s.last().LateClosed)
	s.Equal("10.00", s.last().PaidAmount.String())
	s.Equal(paywatch.StatusExpired, s.last().Status)
}

// Late funds after the window closed are not counted (the workflow ended).
func (s *PaymentSuite) TestNoLateWindowForMicroAmountPool() {
	in := s.input()
	in.Mode, in.PoolMatching = paywatch.ModePool, paywatch.MatchMicroAmount
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
	s.Equal(in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter), s.now())
}

// pool + micro_amount: only a single transfer within 0.0001 of the
// adjusted amount counts.
func (s *PaymentSuite) TestMicroAmountNeedsExactSingleTransfer() {
	in := s.input()
	in.Mode, in.PoolMatching = paywatch.ModePool, paywatch.MatchMicroAmount
	in.Amount = amt("50.123")
	s.at(time.Minute, func() {
		s.signal("0xother", "50.12")  // another payment's amount
		s.signal("0xhalf", "25.0615") // part of the amount
	})
	s.at(2*time.Minute, func() {
		s.Equal(paywatch.StatusPending, s.query().Status)
		s.signal("0xexact", "50.12305")
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.Len(s.last().Transactions, 1)
	s.Equal("0xexact", s.last().TxHash)
}

// pool + micro_amount: a transfer within 0.0001 below the adjusted amount
// is a match, and a match pays the payment; paid_amount shows what arrived.
// Under the plain amount rule it would stay partial, which exact-match mode
// can never complete.
func (s *PaymentSuite) TestMicroAmountMatchBelowAdjustedAmountIsPaid() {
	in := s.input()
	in.Mode, in.PoolMatching = paywatch.ModePool, paywatch.MatchMicroAmount
	in.Amount = amt("10.6630")
	s.at(time.Minute, func() { s.signal("0xnear", "10.662950") })
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.Equal(paywatch.StatusPaid, s.last().Status)
	s.Equal("10.66295", s.last().PaidAmount.String())
}

// Repeated signals for the same (tx hash, log index) are no-ops.
func (s *PaymentSuite) TestRepeatedSignalsAreNoOps() {
	in := s.input()
	s.at(time.Minute, func() {
		t := s.transfer("0xa", "20.00")
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t)
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t)
		t2 := t
		t2.LogIndex = 1 // another transfer in the same transaction counts
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t2)
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t2)
	})
	s.at(time.Minute+time.Second, func() { s.Len(s.query().Transactions, 2) })
	s.at(30*time.Minute, func() { s.env.CancelWorkflow() })
	s.observe(in, stored{paywatch.StatusConfirming, "0.00"}, stored{paywatch.StatusPartial, "40.00"})
	s.Equal([]paywatch.Event{paywatch.EventPartial}, s.events())
	s.Equal("40.00", s.hooks[0].in.State.PaidAmount.String())
	s.Len(s.last().Transactions, 2)
}

// A transfer whose block left the canonical chain before it had enough
// confirmations is dropped; the status goes back to pending.
func (s *PaymentSuite) TestReorgedTransferIsDropped() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.at(time.Minute, func() {
		s.signal("0xa", "50.00")
		s.reorged["0xa"] = true
	})
	s.at(10*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPending, st.Status)
		s.Empty(st.Transactions)
	})
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
}

// The canonicity re-check at the confirmation count drops a transfer that
// vanished while it waited; the remaining funds decide the status.
func (s *PaymentSuite) TestTransferVanishingAtFinalCountLeavesPartial() {
	s.at(time.Minute, func() { s.signal("0xa", "20.00") })
	s.at(20*time.Minute, func() { s.signal("0xb", "30.00") })
	s.at(20*time.Minute+time.Second, func() { s.reorged["0xb"] = true })
	s.at(40*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPartial, st.Status)
		s.Len(st.Transactions, 1)
		s.env.CancelWorkflow()
	})
	s.observe(s.input(), stored{paywatch.StatusConfirming, "0.00"}, stored{paywatch.StatusPartial, "20.00"})
	s.Equal([]paywatch.Event{paywatch.EventPartial}, s.events())
	s.Require().Len(s.last().Transactions, 1, "the vanished transfer is dropped from the saved state")
	s.Equal("0xa", s.last().Transactions[0].TxHash)
}

// A transfer-removed signal drops an unconfirmed transfer.
func (s *PaymentSuite) TestTransferRemovedSignal() {
	s.stallAt = ptr(uint64(1000))
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.at(2*time.Minute, func() {
		s.Equal(paywatch.StatusConfirming, s.query().Status)
		s.env.SignalWorkflow(workflows.SignalTransferRemoved, workflows.TransferRemoved{TxHash: "0xa"})
	})
	s.at(3*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPending, st.Status)
		s.Empty(st.Transactions)
		s.env.CancelWorkflow()
	})
	s.observe(s.input(), stored{paywatch.StatusConfirming, "0.00"}, stored{paywatch.StatusPending, "0.00"})
	s.Empty(s.events())
	s.Empty(s.last().Transactions)
}

// --- select-network -------------------------------------------------------

func (s *PaymentSuite) networkless() paywatch.PaymentInput {
	in := s.input()
	in.Network, in.Token, in.Address, in.StartBlock, in.AddressAssignedAt = "", "", "", 0, time.Time{}
	in.Amount = paywatch.MustParseAmount("50.00", 2)
	return in
}

// Selecting a network assigns the address (amount at the token's decimals)
// and does not extend the window.
func (s *PaymentSuite) TestSelectNetworkThenPaid() {
	var res any
	var err error
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ERC20, Token: paywatch.USDT}, &res, &err)
	})
	s.at(2*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.ERC20, st.Network)
		s.Equal(address, st.Address)
		s.Equal(6, st.Amount.Decimals())
		s.Equal(s.start.Add(time.Hour), st.ExpiresAt)
		s.signal("0xa", "50.00")
	})
	s.run(s.networkless(), paywatch.StatusPaid)
	s.Require().NoError(err)
	s.Equal(address, res.(paywatch.Assignment).Address)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
}

// Two concurrent selections: the second is refused while the first awaits
// its activity; the address is assigned once.
func (s *PaymentSuite) TestTwoSelectNetworkCallsRace() {
	var res1, res2, res3 any
	var err1, err2, err3 error
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ERC20, Token: paywatch.USDT}, &res1, &err1)
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.POLYGON, Token: paywatch.USDC}, &res2, &err2)
	})
	s.at(2*time.Minute, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.BEP20, Token: paywatch.USDT}, &res3, &err3)
	})
	s.at(3*time.Minute, func() { s.env.CancelWorkflow() })
	s.observe(s.networkless(), stored{paywatch.StatusPending, "0.00"})
	s.Require().NoError(err1)
	s.Equal(paywatch.ERC20, res1.(paywatch.Assignment).Network)
	s.Require().Len(s.saved, 1, "the assignment is saved once")
	s.Equal(paywatch.ERC20, s.saved[0].Network)
	s.Equal(paywatch.USDT, s.saved[0].Token)
	s.Equal(address, s.saved[0].Address)
	s.assertRejected(err2, paywatch.ECONFLICT, "Network already selected for this payment")
	s.assertRejected(err3, paywatch.ECONFLICT, "Network already selected for this payment")
	s.Equal(1, s.selects)
}

// Validator messages: invalid pair (400), after the deadline (410), not
// pending (409); the activity's refusal keeps its type and message.
func (s *PaymentSuite) TestSelectNetworkRefusals() {
	var res any
	var errPair, errGone, errNoAddr error
	s.selectErr = temporal.NewNonRetryableApplicationError("No addresses available for this network", paywatch.EINVALID, nil)
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.TRC20, Token: paywatch.USDC}, &res, &errPair)
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.TRC20, Token: paywatch.USDT}, &res, &errNoAddr)
	})
	s.at(time.Hour, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ERC20, Token: paywatch.USDT}, &res, &errGone)
	})
	s.run(s.networkless(), noRelease)
	s.assertRejected(errPair, paywatch.EINVALID, "USDC is not supported on TRC20")
	s.assertRejected(errNoAddr, paywatch.EINVALID, "No addresses available for this network")
	s.assertRejected(errGone, paywatch.EGONE, "Payment has expired")
	s.Empty(s.events())
}

func (s *PaymentSuite) TestSelectNetworkOnCancelledPayment() {
	var res any
	var errCancel, errSel error
	s.at(time.Minute, func() {
		s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &errCancel)
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ERC20, Token: paywatch.USDT}, &res, &errSel)
	})
	s.run(s.networkless(), noRelease)
	s.Require().NoError(errCancel)
	s.assertRejected(errSel, paywatch.ECONFLICT, "Payment is not in pending state")
	s.Equal([]paywatch.Event{paywatch.EventCancelled}, s.events())
}

// A cancel that lands while the selection's activity assigns the address
// wins, and the address it assigned is released with the payment: the
// selection is refused, and nothing stays reserved for a cancelled payment.
func (s *PaymentSuite) TestCancelWhileSelectingReleasesTheAddress() {
	var sel, res any
	var errSel, errCancel error
	s.selectIn = 30 * time.Second
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ERC20, Token: paywatch.USDT}, &sel, &errSel)
	})
	s.at(time.Minute+10*time.Second, func() {
		s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &errCancel)
	})
	s.run(s.networkless(), paywatch.StatusCancelled)
	s.Require().NoError(errCancel)
	s.assertRejected(errSel, paywatch.ECONFLICT, "Payment is not in pending state")
	st := s.last()
	s.Equal(paywatch.StatusCancelled, st.Status)
	s.Equal(address, st.Address, "the assigned address is recorded, so that it is released")
	s.Equal([]paywatch.Event{paywatch.EventCancelled}, s.events())
}

// --- pool + txid ----------------------------------------------------------

func (s *PaymentSuite) txidInput() paywatch.PaymentInput {
	in := s.input()
	in.Mode, in.PoolMatching = paywatch.ModePool, paywatch.MatchTxID
	return in
}

func (s *PaymentSuite) onChain(hash, amount string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verify[hash] = workflows.VerifyTxHashResult{Found: true, Transfers: []paywatch.Transaction{s.transfer(hash, amount)}}
}

// Submitted hashes verified at once count, and several add up (25 + 25).
func (s *PaymentSuite) TestSubmitTxHashesAddUp() {
	var r1, r2 any
	var e1, e2 error
	s.at(time.Minute, func() {
		s.onChain("0xone", "25.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xone"}, &r1, &e1)
	})
	s.at(5*time.Minute, func() {
		s.onChain("0xtwo", "25.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xtwo"}, &r2, &e2)
	})
	s.run(s.txidInput(), paywatch.StatusPaid)
	s.Require().NoError(e1)
	s.Require().NoError(e2)
	res := r1.(workflows.SubmitTxHashResult)
	s.True(res.Verified)
	s.Equal(paywatch.StatusConfirming, res.Status)
	s.Equal("25.00", res.AmountReceived.String())
	s.Equal([]paywatch.Event{paywatch.EventPartial, paywatch.EventCompleted}, s.events())
	s.Equal("50.00", s.last().PaidAmount.String())
}

// A hash not yet on chain is recorded and re-checked on a timer.
func (s *PaymentSuite) TestSubmitTxHashNotYetOnChainIsRecheckedLater() {
	var r any
	var e error
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xslow"}, &r, &e)
	})
	s.at(time.Minute+10*time.Second, func() {
		st := s.query()
		s.Equal([]string{"0xslow"}, st.SubmittedHashes)
		s.Equal(paywatch.StatusPending, st.Status)
		s.onChain("0xslow", "50.00")
	})
	s.run(s.txidInput(), paywatch.StatusPaid)
	s.Require().NoError(e)
	res := r.(workflows.SubmitTxHashResult)
	s.False(res.Verified)
	s.Equal(paywatch.StatusPending, res.Status)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	// Recorded at +1:00, re-checked 30 s later and found in the block
	// mined at +1:00; the scanner signals the block that gives its 12th
	// confirmation, 11 blocks later.
	s.Equal(s.start.Add(time.Minute+11*blockTime), s.now())
}

// The same hash twice (concurrently): the second is refused with the
// submitted hash as an extra field.
func (s *PaymentSuite) TestSameHashTwice() {
	var r1, r2 any
	var e1, e2 error
	s.at(time.Minute, func() {
		s.onChain("0xa", "50.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xa"}, &r1, &e1)
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xa"}, &r2, &e2)
	})
	s.run(s.txidInput(), paywatch.StatusPaid)
	s.Require().NoError(e1)
	s.assertRejected(e2, paywatch.ECONFLICT, "Transaction hash already submitted and pending confirmation")
	var app *temporal.ApplicationError
	s.Require().True(errors.As(e2, &app))
	var fields workflows.ErrorFields
	s.Require().NoError(app.Details(&fields))
	s.Equal("0xa", fields["submitted_tx_hash"])
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
}

// A hash claimed by another payment is refused with the 409 message, and
// the refusal changes nothing that is saved.
func (s *PaymentSuite) TestHashClaimedByAnotherPayment() {
	var r any
	var e error
	s.claimErr["0xtaken"] = temporal.NewNonRetryableApplicationError("This transaction hash is already submitted for another payment", paywatch.ECONFLICT, nil)
	s.at(time.Minute, func() {
		s.onChain("0xtaken", "50.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xtaken"}, &r, &e)
	})
	s.at(2*time.Minute, func() {
		s.Equal(paywatch.StatusPending, s.query().Status)
		s.env.CancelWorkflow()
	})
	s.observe(s.txidInput())
	s.assertRejected(e, paywatch.ECONFLICT, "This transaction hash is already submitted for another payment")
}

// A re-check drops a hash that can never count (claimed by another
// payment) but keeps one whose claim failed for a transient reason; that
// one is claimed at the next re-check and counts.
func (s *PaymentSuite) TestRecheckKeepsHashOnTransientClaimFailure() {
	var r1, r2 any
	var e1, e2 error
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xtaken"}, &r1, &e1)
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xflaky"}, &r2, &e2)
	})
	s.at(time.Minute+10*time.Second, func() {
		s.onChain("0xtaken", "50.00")
		s.onChain("0xflaky", "50.00")
		s.mu.Lock()
		s.claimErr["0xtaken"] = temporal.NewNonRetryableApplicationError("This transaction hash is already submitted for another payment", paywatch.ECONFLICT, nil)
		s.claimErr["0xflaky"] = errors.New("database unavailable")
		s.mu.Unlock()
	})
	// The first re-check, at +1m30s, gets both verdicts.
	s.at(time.Minute+40*time.Second, func() {
		st := s.query()
		s.Equal([]string{"0xflaky"}, st.SubmittedHashes)
		s.Equal(paywatch.StatusPending, st.Status)
		s.mu.Lock()
		delete(s.claimErr, "0xflaky")
		s.mu.Unlock()
	})
	s.run(s.txidInput(), paywatch.StatusPaid)
	s.Require().NoError(e1)
	s.Require().NoError(e2)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	st := s.last()
	s.Equal("0xflaky", st.TxHash)
	s.Empty(st.SubmittedHashes)
	claims := map[string]int{}
	for _, c := range s.claims {
		claims[c.TxHash]++
	}
	// 0xtaken once; 0xflaky 3 attempts, then once more at the next re-check.
	s.Equal(map[string]int{"0xtaken": 1, "0xflaky": 4}, claims)
}

// A cancel that lands while a submitted hash is being verified wins: the
// hash is not claimed for the cancelled payment and the submission gets
// "Payment already finalized".
func (s *PaymentSuite) TestCancelWhileVerifyingTxHashSkipsClaim() {
	var r, res any
	var e, err error
	s.verifyIn = time.Minute
	s.at(time.Minute, func() {
		s.onChain("0xh", "50.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xh"}, &r, &e)
	})
	s.at(time.Minute+30*time.Second, func() {
		s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &err)
	})
	s.run(s.txidInput(), paywatch.StatusCancelled)
	s.Require().NoError(err)
	s.assertRejected(e, paywatch.ECONFLICT, "Payment already finalized")
	s.Empty(s.claims)
	s.Equal([]paywatch.Event{paywatch.EventCancelled}, s.events())
	st := s.last()
	s.Equal(paywatch.StatusCancelled, st.Status)
	s.Empty(st.Transactions)
	s.Empty(st.SubmittedHashes)
	s.Equal(s.start.Add(2*time.Minute), s.now(), "the workflow ends once the submission is answered")
}

// In txid mode scanner signals do not count; hashes to another address are
// refused; submissions to a paid payment get "Payment already finalized".
func (s *PaymentSuite) TestTxidOnlySubmittedHashesCount() {
	var r, rGood any
	var eWrong, eFinal, eGood error
	s.deliverIn = 10 * time.Minute // the workflow lives on while the webhook is delivered
	s.at(time.Minute, func() {
		s.signal("0xscanner", "50.00")
		s.mu.Lock()
		s.verify["0xwrong"] = workflows.VerifyTxHashResult{Found: true, Reason: "Transaction does not transfer USDT to this payment's address on ERC20"}
		s.mu.Unlock()
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xwrong"}, &r, &eWrong)
	})
	s.at(2*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPending, st.Status)
		s.Empty(st.Transactions)
		s.onChain("0xgood", "50.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xgood"}, &rGood, &eGood)
	})
	s.at(2*time.Minute+11*blockTime+time.Second, func() {
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xmore"}, &r, &eFinal)
	})
	s.run(s.txidInput(), paywatch.StatusPaid)
	s.Require().NoError(eGood)
	s.True(rGood.(workflows.SubmitTxHashResult).Verified)
	s.assertRejected(eWrong, paywatch.EINVALID, "Transaction does not transfer USDT to this payment's address on ERC20")
	s.assertRejected(eFinal, paywatch.ECONFLICT, "Payment already finalized")
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
}

// pool + txid: a verified transfer that a reorg drops and that is mined
// again with the same hash (still in the mempool) counts when the scanner
// signals it in its new block: the hash stays claimed for the payment.
func (s *PaymentSuite) TestTxidTransferMinedAgainAfterReorgCounts() {
	var r any
	var e error
	s.stallAt = ptr(uint64(1000))
	s.at(time.Minute, func() {
		s.onChain("0xtx", "50.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xtx"}, &r, &e)
	})
	s.at(2*time.Minute, func() {
		s.Equal(paywatch.StatusConfirming, s.query().Status)
		s.env.SignalWorkflow(workflows.SignalTransferRemoved, workflows.TransferRemoved{TxHash: "0xtx"})
	})
	s.at(3*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPending, st.Status)
		s.Empty(st.Transactions)
		s.Equal([]string{"0xtx"}, st.ClaimedHashes)
		// Mined again, same hash, in the new branch's next block.
		s.stallAt = ptr(uint64(1003))
		t := s.transfer("0xtx", "50.00")
		t.BlockHash = "0xnewbranch"
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t)
	})
	s.at(4*time.Minute, func() {
		s.Equal(paywatch.StatusConfirming, s.query().Status)
		s.stallAt = nil
	})
	s.run(s.txidInput(), paywatch.StatusPaid)
	s.Require().NoError(e)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.Equal("50.00", s.last().PaidAmount.String())
}

// pool + txid has a late window: a hash submitted after expiry with full
// funds turns the payment paid with late_payment.
func (s *PaymentSuite) TestTxidLatePayment() {
	var r any
	var e error
	s.at(3*time.Hour, func() {
		s.onChain("0xlate", "50.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xlate"}, &r, &e)
	})
	s.run(s.txidInput(), paywatch.StatusPaid)
	s.Require().NoError(e)
	s.Equal([]paywatch.Event{paywatch.EventExpired, paywatch.EventCompleted}, s.events())
	s.True(s.hooks[1].in.State.LatePayment)
}

// --- webhooks, continue-as-new --------------------------------------------

// A slow webhook never blocks the state machine, but the workflow does not
// end before it is delivered.
func (s *PaymentSuite) TestWebhookDeliveryDoesNotBlock() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.deliverIn = 20 * time.Minute
	s.at(time.Minute, func() { s.signal("0xa", "20.00") })
	s.at(10*time.Minute, func() { s.signal("0xb", "30.00") })
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventPartial, paywatch.EventCompleted}, s.events())
	s.Equal(s.start.Add(10*time.Minute+11*blockTime), s.hooks[1].at, "completed is not held up by the partial delivery")
	s.Equal(s.hooks[1].at.Add(20*time.Minute), s.now(), "the workflow waits for the last delivery")
	s.Len(s.delivered, 2)
}

// A queued chat message is sent by its own ChatWorkflow, started beside
// the webhook; a slow webhook does not hold it up.
func (s *PaymentSuite) TestChatMessageBesideTheWebhook() {
	s.chat = true
	s.deliverIn = 20 * time.Minute
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.run(s.input(), paywatch.StatusPaid)
	s.Require().Len(s.hooks, 1)
	s.Equal([]string{s.hooks[0].in.EventID}, s.chats)
}

// Many small transfers: the workflow continues as new once suggested,
// carrying the whole state, and the next run picks it up.
func (s *PaymentSuite) TestContinueAsNewWithManySmallTransfers() {
	for i := range 20 {
		s.at(time.Minute+time.Duration(i)*time.Second, func() { s.signal(fmt.Sprintf("0x%02d", i), "1.00") })
	}
	s.at(5*time.Minute, func() {
		s.env.SetContinueAsNewSuggested(true)
		s.signal("0x20", "1.00") // history grows with every transfer
	})
	first := s.input()
	s.expect(first, noRelease) // the address stays with the payment
	s.execute(first)
	s.Require().True(s.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "got %v", s.env.GetWorkflowError())
	s.Empty(s.released)
	s.assertSavedInOrder(first)
	var next paywatch.PaymentInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.Carry)
	s.Len(next.Carry.Transactions, 21)
	s.False(next.Carry.Transactions[20].Confirmed, "an unconfirmed transfer is carried over")
	s.Equal(paywatch.StatusPartial, next.Carry.Status)
	s.Equal("20.00", next.Carry.PaidAmount.String())
	s.Equal(s.last().Version, next.Carry.Version)
	seq := next.Carry.WebhookSequence
	s.Positive(seq)

	// The next run continues where the last one stopped.
	s.env.AssertExpectations(s.T())
	s.SetupTest()
	s.start, s.baseHead = s.start.Add(5*time.Minute), s.baseHead+uint64(5*time.Minute/blockTime)
	s.env.SetStartTime(s.start)
	s.at(time.Minute, func() {
		s.Len(s.query().Transactions, 21)
		s.signal("0x00", "1.00") // already counted
		s.signal("0xrest", "29.00")
	})
	s.run(next, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventPartial, paywatch.EventCompleted}, s.events())
	s.Equal(workflows.EventID(next.PaymentID, seq+1), s.hooks[0].in.EventID)
	s.Equal(workflows.EventID(next.PaymentID, seq+2), s.hooks[1].in.EventID)
	s.Equal("50.00", s.last().PaidAmount.String())
	s.Len(s.last().Transactions, 22)
}

func ptr[T any](v T) *T { return &v }
