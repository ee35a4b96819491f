package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// What happens when a payment's deadline passes: the on-chain check after
// it, the patience with a check that gets no answer, expiry, and the end
// of the late window.

// passDeadline handles a payment whose window (or grace) is over: it is
// checked on-chain once more and expires unless the check found funds. A
// handler may change the status while a check awaits its activity (a cancel
// passes its validator then), so nothing is decided on the status from
// before an await.
func (p *payment) passDeadline(ctx workflow.Context) {
	if p.st.Network == "" {
		if p.safety && p.syncedAt.Before(p.st.ExpiresAt) {
			// The row may hold a selection whose answer the workflow never
			// got: read it back before deciding that there is none. A
			// read from the window's end on is final, since no selection
			// is taken after it.
			p.syncSelection = true
			if !p.syncAssignment(ctx) || p.st.Network != "" {
				return
			}
		}
		p.expire()
		return
	}
	if p.hasUnconfirmed() {
		// Confirming grace is over: check on-chain once more, then decide.
		p.expireAfterCheck(ctx, p.checkConfirmations(ctx))
		return
	}
	if p.st.DeadlineChecked {
		p.expireAfterCheck(ctx, true)
		return
	}
	checked := p.finalCheck(ctx)
	if checked && p.open() {
		p.st.DeadlineChecked = true
		p.changed = true
	}
	if checked && p.safety {
		p.checkAnswered()
	}
	if p.hasUnconfirmed() || p.fullyPaid() {
		return // found funds get the confirming grace
	}
	p.expireAfterCheck(ctx, checked)
}

// expireAfterCheck expires a payment that is still open once the on-chain
// check after its deadline ran. A check that failed is tried again a minute
// later instead, until deadlineCheckPatience after the deadline; then the
// payment expires without it, since a chain that stays unreachable must not
// keep a payment open forever.
//
// Runs that take the safety rules count the patience from the first failed
// check (CheckFailingSince) and keep it for outagePatience, so a deadline
// that passed during an outage is checked once the chain answers again;
// and they read the signals buffered while the check ran before they
// expire anything: a transfer the scanner reported meanwhile counts as on
// time, and the loop decides again with it.
func (p *payment) expireAfterCheck(ctx workflow.Context, checked bool) {
	if !p.open() {
		p.deadlineRetry = time.Time{}
		return // cancelled or paid while the check ran
	}
	switch {
	case checked && p.safety:
		p.checkAnswered() // a later failure starts a new patience
	case !checked && p.retryCheck(ctx):
		return
	}
	if p.safety && p.readSignals(ctx) {
		return // decided again by the main loop, with what the signals said
	}
	p.checkAnswered()
	p.expire()
}

// retryCheck schedules another try of an on-chain check that a deadline
// waits for and that got no answer, and reports true; or reports false
// once the patience is used up, after which the deadline passes without
// the check.
func (p *payment) retryCheck(ctx workflow.Context) bool {
	now := workflow.Now(ctx)
	due := p.windowDeadline()
	giveUp := due.Add(deadlineCheckPatience)
	wait := chainRetryAfter
	if p.safety {
		if p.st.CheckFailingSince == nil {
			p.st.CheckFailingSince = &now
			p.changed = true
		}
		since := *p.st.CheckFailingSince
		giveUp = since.Add(outagePatience)
		if now.Sub(since) >= deadlineCheckPatience {
			wait = outageRetryMax
		}
	}
	if now.Before(giveUp) {
		p.deadlineRetry = now.Add(wait)
		if p.deadlineRetry.After(giveUp) {
			p.deadlineRetry = giveUp
		}
		p.logger.Warn("on-chain check after the deadline failed; trying again",
			"paymentId", p.st.PaymentID, "status", p.st.Status, "deadline", due, "retryAt", p.deadlineRetry)
		return true
	}
	p.logger.Error("on-chain check after the deadline kept failing; passing the deadline without it",
		"paymentId", p.st.PaymentID, "status", p.st.Status, "network", p.st.Network, "deadline", due)
	return false
}

// checkAnswered clears the retry bookkeeping of a deadline's check.
func (p *payment) checkAnswered() {
	p.deadlineRetry = time.Time{}
	if p.st.CheckFailingSince != nil {
		p.st.CheckFailingSince = nil
		p.changed = true
	}
}

// readSignals handles the signals buffered while the workflow awaited
// something and reports whether they changed the payment (repeats, dust
// and signals about other blocks do not, so they never hold a decision
// up).
func (p *payment) readSignals(ctx workflow.Context) bool {
	if !p.signalsBuffered() {
		return false
	}
	before := p.changed
	p.changed = false
	p.drainSignals(ctx)
	changed := p.changed
	p.changed = changed || before
	return changed
}

// closeLateWindow ends the late window: transfers still confirming get one
// last check. In runs that take the safety rules they get it at the end of
// the confirming grace after the window (windowDeadline), a check that
// gets no answer is tried again as at the payment's deadline, and signals
// buffered meanwhile are read before the window closes.
//
// Runs that take the late check (lateCheckVersion) first read the chain up
// to the window's end (lateWindowCheck), once: transfers it finds count as
// if signalled in time, and those still confirming get the grace.
func (p *payment) closeLateWindow(ctx workflow.Context) {
	if !p.safety {
		if p.hasUnconfirmed() {
			p.checkConfirmations(ctx)
		}
		return
	}
	if p.lateCheck && !p.st.LateChecked {
		if !p.lateWindowCheck(ctx) {
			if p.retryCheck(ctx) {
				return
			}
		} else {
			p.checkAnswered()
		}
		p.st.LateChecked = true
		p.changed = true
		if p.st.Status != paywatch.StatusExpired || p.hasUnconfirmed() && workflow.Now(ctx).Before(p.windowDeadline()) {
			return // paid late, or found funds get the confirming grace
		}
	}
	if p.hasUnconfirmed() {
		if p.checkConfirmations(ctx) {
			p.checkAnswered()
		} else if p.retryCheck(ctx) {
			return
		}
	}
	if p.readSignals(ctx) || p.st.Status != paywatch.StatusExpired {
		return
	}
	p.checkAnswered()
	p.st.LateClosed = true
	p.changed = true
}

// open reports whether the payment can still be paid in its window:
// pending, confirming or partial.
func (p *payment) open() bool {
	switch p.st.Status {
	case paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPartial:
		return true
	}
	return false
}

// expire moves an open payment to expired. Any other status stays: a
// cancelled, paid or overpaid payment is final, even when its deadline
// check was already under way when it got there.
func (p *payment) expire() {
	if !p.open() {
		return
	}
	p.st.Status = paywatch.StatusExpired
	p.changed = true
}
