package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// What a run of LeanLifecycle does differently, to cost fewer Temporal
// Actions and less history (issue 43). Its rules are those of the runs
// before it; only how it asks Temporal for things changed:
//
//   - Persistence (saving the state, queueing a webhook, logging its
//     attempt, releasing the address) runs as local activities. Temporal
//     Cloud bills every marker of a workflow task as one Action, so all
//     the writes a decision makes cost one, and their inputs (the whole
//     state) are not written into the history.
//   - A webhook's first attempt is made by the payment run itself, a local
//     activity beside the writes; only when it asks for a retry does the
//     event's WebhookWorkflow start, with the attempt already made, to keep
//     the schedule (WebhookInput.Made).
//   - One timer stands for the next wake-up while that moment stays the
//     same (wakeTimer), instead of a new timer at every wait.
//   - The search attributes and the memo are upserted only when what they
//     show changed.

// persistLocalOptions are persistOptions for a local activity: the same
// attempts and back-off, retried for as long as persistLongest (a local
// activity's retries end at its ScheduleToCloseTimeout, which would
// otherwise be one attempt's 30 s). While one is retried, the worker
// extends the workflow task (each extension beyond the first is an Action
// on Temporal Cloud) and waits on a timer between attempts a minute apart.
var persistLocalOptions = workflow.LocalActivityOptions{
	ScheduleToCloseTimeout: persistLongest,
	StartToCloseTimeout:    persistOptions.StartToCloseTimeout,
	RetryPolicy:            persistOptions.RetryPolicy,
}

// persistLongest is how long a lean run's write is retried: as long as a
// regular activity's, which has no limit but the workflow's, in practice.
const persistLongest = 10 * 365 * 24 * time.Hour

// webhookAttemptLocalOptions are the options of the first delivery attempt
// a lean run makes itself: one try, since any failure hands the event to
// its WebhookWorkflow, which retries as it always did.
var webhookAttemptLocalOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: webhookSendOptions.StartToCloseTimeout,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
}

// persist runs one of the persistence activities (save, queue, record,
// release) and waits for it: a local activity in lean runs, a regular one
// before.
func (p *payment) persist(ctx workflow.Context, name string, in, out any) error {
	if p.lean {
		return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, persistLocalOptions), name, in).Get(ctx, out)
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, persistOptions), name, in).Get(ctx, out)
}

// firstAttempt makes the first delivery attempt of a queued event from the
// payment run and logs it, and reports how many attempts of the schedule
// that leaves made: 1 when the attempt ended in a retry (the event's
// WebhookWorkflow makes the rest), 0 when it could not be made or logged
// (the WebhookWorkflow starts from the first). done reports that nothing
// more is to be sent: delivered, failed for good, no URL (the event stays
// pending for the API), or no longer this run's to send.
//
// The attempt runs while the event is pending; the reconciler leaves
// pending events younger than FirstAttemptWindow alone, and a second
// attempt from elsewhere is only ever a duplicate with the same event_id,
// which at-least-once delivery allows.
func (p *payment) firstAttempt(ctx workflow.Context, eventID string) (made int, done bool) {
	var res SendWebhookResult
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, webhookAttemptLocalOptions),
		ActivitySendWebhook, SendWebhookInput{EventID: eventID, Attempt: 1}).Get(ctx, &res)
	if err != nil {
		// Not made, or made without an answer: the WebhookWorkflow makes
		// the first attempt (again).
		p.logger.Warn("first webhook attempt did not complete", "paymentId", p.st.PaymentID, "eventId", eventID, "error", err)
		return 0, false
	}
	state, sent := attemptState(res.Outcome, false)
	if !sent {
		return 0, true
	}
	rec := RecordWebhookAttemptInput{
		EventID: eventID, Attempt: 1, StatusCode: res.StatusCode, ResponseBody: res.ResponseBody, State: state,
	}
	if err := p.persist(ctx, ActivityRecordWebhookAttempt, rec, nil); err != nil {
		p.logger.Error("log of the first webhook attempt failed", "paymentId", p.st.PaymentID, "eventId", eventID, "error", err)
		return 0, false
	}
	return 1, state != WebhookAttemptRetrying
}

// wakeTimer is a lean run's one timer: it keeps the timer it started for
// as long as the next wake-up stays the same moment, so a loop woken by a
// signal that changes nothing due starts no timer (each is an Action).
type wakeTimer struct {
	at     time.Time
	fired  workflow.Future
	cancel workflow.CancelFunc
}

// await blocks until next (zero: no time), cond, or the workflow's
// cancellation, which is its only error.
func (w *wakeTimer) await(ctx workflow.Context, next time.Time, cond func() bool) error {
	if w.fired != nil && (!w.at.Equal(next) || w.fired.IsReady()) {
		if !w.fired.IsReady() {
			w.cancel()
		}
		w.fired = nil
	}
	if next.IsZero() {
		return workflow.Await(ctx, cond)
	}
	if w.fired == nil {
		d := next.Sub(workflow.Now(ctx))
		if d <= 0 {
			return ctx.Err()
		}
		tctx, cancel := workflow.WithCancel(ctx)
		w.at, w.fired, w.cancel = next, workflow.NewTimer(tctx, d), cancel
	}
	return workflow.Await(ctx, func() bool { return cond() || w.fired.IsReady() })
}

// changedAttributes are the updates of the search attributes whose value
// in v differs from was.
func (v published) changedAttributes(was published) []temporal.SearchAttributeUpdate {
	var out []temporal.SearchAttributeUpdate
	for _, a := range []struct {
		key       temporal.SearchAttributeKeyKeyword
		now, then string
	}{
		{SearchAttrPaymentStatus, v.status, was.status}, {SearchAttrProjectSlug, v.project, was.project},
		{SearchAttrNetwork, v.network, was.network}, {SearchAttrToken, v.token, was.token},
		{SearchAttrExternalRef, v.externalRef, was.externalRef}, {SearchAttrExternalOrderID, v.externalOrderID, was.externalOrderID},
	} {
		if a.now != a.then {
			out = append(out, a.key.ValueSet(a.now))
		}
	}
	return out
}

// memoDiffers reports whether v shows another memo than was.
func (v published) memoDiffers(was published) bool {
	return v.amount != was.amount || v.token != was.token || v.network != was.network || v.address != was.address
}

// FirstAttemptWindow is how long the reconciler leaves a pending event to
// the lean run that queued it: its first attempt (30 s at most) and the
// write of its log, with room for a workflow task retried after a worker
// was lost. Past it, the reconciler starts the event's WebhookWorkflow;
// if the run's attempt is still under way then (a database outage slows
// its writes), the receiver may get attempt 1 twice, with the same
// event_id, which at-least-once delivery allows.
const FirstAttemptWindow = 5 * time.Minute
