package workflows

import (
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// PaymentWorkflow owns one payment's status from creation to the end of its
// late window (workflow ID PaymentWorkflowID(id)). It is a thin shell: all
// state lives in one payment value, setup registers the signal, update and
// query handlers, and run drives the state machine.
//
// Lifecycle decisions where interface.md is silent:
//
//   - Expiry of a pending payment happens at ExpiresAt + 3 minutes
//     (paywatch.PendingShownExpiredAfter), after one last on-chain check, so
//     the API never reports "expired" before it shows it (rule 2) and a
//     transfer in flight at the deadline still counts. A network-less
//     payment expires at the same moment, without a webhook.
//   - A partial payment with nothing confirming is checked on-chain once more
//     at ExpiresAt and then expires; a payment with transfers still
//     confirming at the deadline (status confirming, or partial topped up by
//     a new transfer) keeps confirming until ExpiresAt + 30 minutes, is then
//     checked once more and expires unless fully paid by then.
//   - A payment never expires on a failed on-chain check: the check is
//     tried again every minute, for up to 30 minutes
//     (deadlineCheckPatience) after the deadline it was due at; then the
//     payment expires without it and an error is logged. A payment cancelled
//     while the check awaits its activity stays cancelled.
//   - While a partial payment's new transfer confirms, its status stays
//     partial (the table has no partial → confirming row); the transfer shows
//     as unconfirmed in transactions.
//   - A transfer counts once it has the network's confirmations and its
//     block is still canonical; a confirmed transfer is final, so a later
//     transfer-removed signal for it is ignored (and logged). The network's
//     scanner signals the block that gives the confirmations
//     (SignalTransfersConfirmed); the workflow asks the chain itself only
//     every confirmationSafetyCheck, and at its deadlines.
//   - Late funds (per_payment, pool + txid) are watched until ExpiresAt + 24 h;
//     partial late funds update paid_amount and transactions but send no
//     webhook; full ones turn the payment paid or overpaid with
//     late_payment true.
//   - Webhooks are delivered concurrently, each by its event's
//     WebhookWorkflow child (in lean runs, only from the second attempt
//     on: the run makes the first itself, which may hold a signal back for
//     as long as that attempt takes, 30 s at most); retries never hold the
//     state machine up, and the workflow neither ends nor continues-as-new
//     while one is outstanding.
func PaymentWorkflow(ctx workflow.Context, in paywatch.PaymentInput) error {
	return runPayment(ctx, in, converter.GetDefaultDataConverter())
}

// paymentWorkflowWith is PaymentWorkflow on a worker whose payloads pass
// through dc (WithDataConverter): the run reads its memo with it.
func paymentWorkflowWith(dc converter.DataConverter) func(workflow.Context, paywatch.PaymentInput) error {
	return func(ctx workflow.Context, in paywatch.PaymentInput) error { return runPayment(ctx, in, dc) }
}

func runPayment(ctx workflow.Context, in paywatch.PaymentInput, dc converter.DataConverter) error {
	p := newPayment(ctx, in)
	p.payloads = dc
	if err := p.setup(ctx); err != nil {
		return err
	}
	return p.run(ctx)
}

// Timing of the main loop's own checks.
const (
	// hashRecheckMin and hashRecheckMax bound the back-off of re-checks of
	// submitted transaction hashes that were not on chain yet.
	hashRecheckMin = 30 * time.Second
	hashRecheckMax = 10 * time.Minute
	// maxConfirmationWait caps one wait for confirmations, whatever the
	// estimate says (runs before changeConfirmationsPushed).
	maxConfirmationWait = 10 * time.Minute
	// confirmationSafetyCheck is how long a run that takes
	// changeConfirmationsPushed waits for the scanner's signal before it
	// asks the chain itself how deep its unconfirmed transfers are: a net
	// under a lost or late signal (a network without a running scanner), not
	// an estimate of when the confirmations come.
	confirmationSafetyCheck = 10 * time.Minute
	// maxHistoryEvents continues-as-new even if the server never suggests it.
	maxHistoryEvents = 10_000
	// deadlineCheckPatience is how long after a deadline a failing on-chain
	// check is tried again before the payment expires without it. It is the
	// confirming grace, the longest a payment may otherwise outlive its
	// window, rather than the 24 h late window: per_user and micro_amount
	// payments have no late window, and funds arriving while a payment waits
	// for its check count as if on time.
	deadlineCheckPatience = paywatch.ConfirmingGrace
	// outagePatience is how long runs that take the safety rules
	// (safetyVersion) keep trying an on-chain check that gets no answer,
	// counted from its first failure, before the payment expires without
	// it: as long as the late window, so that an outage of the workers,
	// of Temporal or of every RPC endpoint shorter than a day never turns
	// funds paid on time into an expiry. The checks back off from
	// chainRetryAfter to outageRetryMax.
	outagePatience = paywatch.LateWindow
	// lateCheckDelay is how long after the late window's end its close
	// reads the chain (lateWindowCheck): long enough that the chain has a
	// block past the end, which the read needs, on every network.
	lateCheckDelay = time.Minute
	// outageRetryMax is the longest wait between two tries of a failing
	// on-chain check, reached once it has failed for deadlineCheckPatience.
	outageRetryMax = 5 * time.Minute
)

// payment is the whole state of a payment workflow run. Only st (and in)
// survive continue-as-new; the rest is rebuilt by setup.
//
// Interleaving discipline. Update handlers and the main loop run in the
// workflow's single thread and interleave only where one of them awaits (an
// activity, a timer). So:
//   - a handler validates and changes state without awaiting in between;
//   - a handler that must await before its decision is made (selecting a
//     network, verifying a hash) first reserves what it is deciding
//     (held.reserve*), and releases it when done, which wakes the main loop;
//     validators refuse what is reserved, and the main loop holds the
//     deadline while a network is reserved (deadlineHeld), the one place it
//     looks at handlers;
//   - after any await, code decides on the state as it is then, never on
//     what it read before (passDeadline, expireAfterCheck).
type payment struct {
	in paywatch.PaymentInput
	st paywatch.PaymentState
	// payloads is the worker's data converter, which reads the memo.
	payloads converter.DataConverter

	// committed is the status of the last commit: a different status now
	// means a status change (search attributes, webhook).
	committed paywatch.Status
	// changed is set by every state change not yet committed.
	changed bool

	// held is what update handlers awaiting an activity have reserved
	// (the interleaving discipline above).
	held        reservations
	webhooksOut int  // webhook coroutines still running
	wake        bool // a handler asks the main loop to look again
	done        bool // the payment is over; finish and end

	nextConfCheck time.Time
	nextHashCheck time.Time
	hashInterval  time.Duration
	// deadlineRetry is when an on-chain check after the deadline that
	// failed is tried again; zero if none failed. A new run after
	// continue-as-new does not need it: its deadline has passed, so it
	// checks again at once.
	deadlineRetry time.Time

	// oneOwner is set for runs that apply the rules of changeOneOwner.
	oneOwner bool
	// pushed is set for runs that apply the rules of
	// changeConfirmationsPushed.
	pushed bool
	// safety is set for runs that apply the money-safety rules of
	// setupVersion 3 (safetyVersion).
	safety bool
	// lateCheck is set for runs that read the chain when their late
	// window ends (lateCheckVersion).
	lateCheck bool
	// lean is set for runs whose input has LeanLifecycle: they persist
	// through local activities, make a webhook's first attempt
	// themselves, keep one timer for their next wake-up (timer), and
	// upsert only what changed since shown (nil: not known, all).
	lean  bool
	timer wakeTimer
	shown *published
	// syncSelection is set when a network selection ended without the
	// workflow learning its outcome (the activity's answer was lost): the
	// main loop reads the payment's row back (syncAssignment) before
	// anything else decides on the missing network.
	syncSelection bool
	// syncRetry is when a failed read-back is tried again; syncedAt is
	// when the row last answered one.
	syncRetry, syncedAt time.Time

	seen      workflow.ReceiveChannel
	removed   workflow.ReceiveChannel
	confirmed workflow.ReceiveChannel
	logger    log.Logger
}

// newPayment builds the state of a first run from the input, or takes the
// state carried across continue-as-new.
func newPayment(ctx workflow.Context, in paywatch.PaymentInput) *payment {
	p := &payment{in: in, logger: workflow.GetLogger(ctx), payloads: converter.GetDefaultDataConverter()}
	if in.Carry != nil {
		p.st = *in.Carry
	} else {
		p.st = initialState(in)
	}
	p.committed = p.st.Status
	return p
}

// initialState is the state of a payment's first run.
func initialState(in paywatch.PaymentInput) paywatch.PaymentState {
	st := paywatch.PaymentState{
		PaymentID:      in.PaymentID,
		Status:         paywatch.StatusPending,
		Network:        in.Network,
		Token:          in.Token,
		Address:        in.Address,
		Amount:         in.Amount,
		OriginalAmount: in.OriginalAmount,
		PaidAmount:     paywatch.NewAmount(nil, in.Amount.Decimals()),
		ExpiresAt:      in.ExpiresAt,
		StartBlock:     in.StartBlock,
	}
	if !in.AddressAssignedAt.IsZero() {
		t := in.AddressAssignedAt
		st.AddressAssignedAt = &t
	}
	return st
}

// setup registers the handlers and publishes the search attributes and
// memo, unless the run started with them (StartAttributes).
func (p *payment) setup(ctx workflow.Context) error {
	var v workflow.Version
	if p.in.Lifecycle >= LeanLifecycle {
		// The input says what the run is: no version markers, whose
		// workflow task is an Action of its own.
		p.lean, p.oneOwner, v = true, true, lateCheckVersion
	} else {
		lifecycleV1(ctx)
		p.oneOwner = oneOwnerRules(ctx)
		v = setupVersion(ctx)
	}
	p.pushed = v >= 1
	p.safety = v >= safetyVersion
	p.lateCheck = v >= lateCheckVersion
	if p.lateCheck && !p.st.LateByChain {
		p.st.LateByChain = true // saved with the next state; no command of its own
	}
	p.seen = workflow.GetSignalChannel(ctx, SignalTransferSeen)
	p.removed = workflow.GetSignalChannel(ctx, SignalTransferRemoved)
	p.confirmed = workflow.GetSignalChannel(ctx, SignalTransfersConfirmed)
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (paywatch.PaymentState, error) {
		return p.snapshot(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancel, p.cancel,
		workflow.UpdateHandlerOptions{Validator: p.validateCancel}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSelectNetwork, p.selectNetwork,
		workflow.UpdateHandlerOptions{Validator: p.validateSelectNetwork}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSubmitTxHash, p.submitTxHash,
		workflow.UpdateHandlerOptions{Validator: p.validateSubmitTxHash}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateRecheck, p.recheck,
		workflow.UpdateHandlerOptions{Validator: p.validateRecheck}); err != nil {
		return err
	}
	if v < 2 || !p.publishedAtStart(ctx) {
		p.publish(ctx)
	} else {
		shown := publishedOf(p.in, p.st)
		p.shown = &shown
	}
	now := workflow.Now(ctx)
	if p.hasUnconfirmed() {
		p.nextConfCheck = now
	}
	if len(p.st.SubmittedHashes) > 0 {
		p.nextHashCheck = now
	}
	p.hashInterval = hashRecheckMin
	return nil
}

// run is the state machine: handle signals, do what is due, persist, then
// sleep until the next due time, a signal or a handler's wake-up.
func (p *payment) run(ctx workflow.Context) error {
	for {
		p.drainSignals(ctx)
		p.advance(ctx)
		p.commit(ctx)
		if p.done {
			return p.finish(ctx)
		}
		if p.continueAsNewSuggested(ctx) && p.quiet(ctx) {
			if !p.safety {
				return p.continueAsNew(ctx)
			}
			if !p.readSignals(ctx) && !p.changed && !p.syncSelection {
				return p.continueAsNewNow(ctx)
			}
			if p.syncSelection && !p.changed {
				// The read-back of a selection is not carried across
				// continue-as-new: wait for it as for anything else due.
				if err := p.wait(ctx); err != nil {
					return err
				}
			}
			continue // handle what came in first, never waiting for a webhook
		}
		if err := p.wait(ctx); err != nil {
			// The workflow itself was cancelled (an operator's decision,
			// not a payment cancel): stop monitoring as it stands.
			p.logger.Warn("payment workflow cancelled", "paymentId", p.st.PaymentID, "status", p.st.Status)
			return err
		}
	}
}

// wait blocks until the next due time, a buffered signal or a wake-up; it
// fails only when the workflow is cancelled.
func (p *payment) wait(ctx workflow.Context) error {
	p.wake = false
	cond := func() bool { return p.wake || p.signalsBuffered() }
	next := p.nextWake(workflow.Now(ctx))
	if p.lean {
		return p.timer.await(ctx, next, cond)
	}
	if next.IsZero() {
		return workflow.Await(ctx, cond)
	}
	if d := next.Sub(workflow.Now(ctx)); d > 0 {
		_, err := workflow.AwaitWithTimeout(ctx, d, cond)
		return err
	}
	return ctx.Err()
}

// signalsBuffered reports whether a signal this run reads waits in its
// channel.
func (p *payment) signalsBuffered() bool {
	return p.seen.Len() > 0 || p.removed.Len() > 0 || p.pushed && p.confirmed.Len() > 0
}

// drainSignals handles every buffered signal without blocking.
func (p *payment) drainSignals(ctx workflow.Context) {
	for {
		var t paywatch.Transaction
		if p.seen.ReceiveAsync(&t) {
			p.addSeen(ctx, t)
			continue
		}
		var r TransferRemoved
		if p.removed.ReceiveAsync(&r) {
			p.removeTransfer(ctx, r)
			continue
		}
		// Runs before changeConfirmationsPushed never read the scanner's
		// signal: a history that recorded it while an older worker ran the
		// workflow must replay without the commands handling it would add.
		var c TransfersConfirmed
		if p.pushed && p.confirmed.ReceiveAsync(&c) {
			p.confirmTransfers(ctx, c)
			continue
		}
		return
	}
}

// advance does whatever is due: confirmation checks, re-checks of
// submitted hashes and the deadlines. Every branch that is due moves its
// due time forward or changes the status, so the loop always progresses.
func (p *payment) advance(ctx workflow.Context) {
	now := workflow.Now(ctx)
	if p.hasUnconfirmed() && !now.Before(p.nextConfCheck) && p.st.Status != paywatch.StatusCancelled {
		p.checkConfirmations(ctx)
	}
	if len(p.st.SubmittedHashes) > 0 && !now.Before(p.nextHashCheck) && p.acceptsTransfers(now) {
		p.recheckHashes(ctx)
	}
	if p.syncSelection && !now.Before(p.syncRetry) {
		p.syncAssignment(ctx)
	}
	if !p.deadlineHeld() {
		if d := p.deadline(); !d.IsZero() && !workflow.Now(ctx).Before(d) {
			switch p.st.Status {
			case paywatch.StatusExpired:
				p.closeLateWindow(ctx)
			case paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPartial:
				p.passDeadline(ctx)
			}
		}
	}
	p.done = p.over(workflow.Now(ctx))
}

// over reports whether the payment is finished: paid, overpaid, cancelled,
// or expired with no late window left.
func (p *payment) over(now time.Time) bool {
	switch p.st.Status {
	case paywatch.StatusPaid, paywatch.StatusOverpaid, paywatch.StatusCancelled:
		return true
	case paywatch.StatusExpired:
		if p.safety && p.lateEligible() {
			return p.st.LateClosed
		}
		return !p.lateEligible() || !now.Before(p.lateEnd())
	}
	return false
}

// nextWake is the earliest time something becomes due; zero if nothing will
// without a signal or an update.
func (p *payment) nextWake(now time.Time) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if p.hasUnconfirmed() && p.st.Status != paywatch.StatusCancelled {
		consider(p.nextConfCheck)
	}
	// advance re-checks hashes only while the payment takes transfers: a
	// re-check due past that (the late window's grace) is no wake-up.
	if len(p.st.SubmittedHashes) > 0 && (!p.safety || p.acceptsTransfers(now)) {
		consider(p.nextHashCheck)
	}
	if !p.deadlineHeld() {
		consider(p.deadline())
	}
	if p.syncSelection {
		consider(p.syncRetry)
	}
	return next
}

// deadline returns when the current status must next be looked at because
// of the payment window or of a failed check past it, or zero.
func (p *payment) deadline() time.Time {
	d := p.windowDeadline()
	if p.safety && p.st.Network == "" && p.syncSelection && p.syncRetry.After(d) {
		return p.syncRetry // the read-back of the selection comes first
	}
	retries := p.open() || p.safety && p.st.Status == paywatch.StatusExpired
	if retries && p.deadlineRetry.After(d) {
		return p.deadlineRetry
	}
	return d
}

// windowDeadline returns when the payment window (or the grace the current
// status gets past it) ends, or zero.
func (p *payment) windowDeadline() time.Time {
	e := p.st.ExpiresAt
	switch p.st.Status {
	case paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPartial:
		switch {
		case p.st.Network == "":
			return e.Add(paywatch.PendingShownExpiredAfter)
		case p.hasUnconfirmed():
			return e.Add(paywatch.ConfirmingGrace)
		case p.st.Status == paywatch.StatusPartial:
			return e
		default:
			return e.Add(paywatch.PendingShownExpiredAfter)
		}
	case paywatch.StatusExpired:
		if p.lateEligible() {
			if p.safety && p.hasUnconfirmed() {
				// Transfers still confirming when the late window ends get
				// the same grace as those at the payment's deadline.
				return p.lateEnd().Add(paywatch.ConfirmingGrace)
			}
			if p.lateCheck && !p.st.LateChecked {
				// The chain's read up to the window's end waits for a block
				// past it.
				return p.lateEnd().Add(lateCheckDelay)
			}
			return p.lateEnd()
		}
	}
	return time.Time{}
}
