package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// WebhookWorkflowName is the registered name of WebhookWorkflow.
const WebhookWorkflowName = "webhook"

// WebhookWorkflowID is the workflow ID of an event's delivery: one ID per
// event, so the payment workflow, a saved webhook URL and a redelivery all
// reach the same run and never deliver one event twice at once.
func WebhookWorkflowID(eventID string) string { return "webhook/" + eventID }

// WebhookInput starts a WebhookWorkflow.
type WebhookInput struct {
	EventID string
	// FirstAttempt is the number the run's first attempt is logged under:
	// 1 for an event's first delivery, one more than the last logged
	// attempt for a redelivery, so the deliveries log keeps every attempt.
	// 0 means 1.
	FirstAttempt int
	// Redeliver marks a "send again": the event is sent even if it reads
	// as delivered or failed.
	Redeliver bool
	// Generation is the event's delivery generation the run was started
	// for (store.PendingWebhook): 0 for the first delivery, one more for
	// each redelivery. Once a redelivery moves the event past it, the run
	// sends nothing more and its log entries leave the event's state to
	// the new run, even when they land after the redelivery was accepted.
	Generation int
	// Made is how many attempts of the schedule were made before this run
	// started: 1 when a lean payment run made the first itself
	// (firstAttempt) and it asked for a retry. The run makes the rest, on
	// the schedule counted from that attempt; 0 for every other start.
	Made int `json:",omitempty"`
}

// msgAttemptIncomplete is the logged "response" of an attempt whose
// activity gave up without an answer (worker lost, timed out, or the
// database unreachable through all its retries).
const msgAttemptIncomplete = "no answer: the delivery attempt did not complete"

// WebhookWorkflow delivers one queued webhook event (workflow ID
// WebhookWorkflowID): up to 5 signed attempts at 0 s, 10 s, 60 s, 5 min and
// 30 min after the first (WebhookSchedule), each logged with its outcome.
//
// The workflow, not Temporal's activity retries, counts attempts and keeps
// the schedule: each attempt is one ActivitySendWebhook whose retries repeat
// that same attempt, and the log entry is written by a separate activity
// retried until it succeeds, so a database error never uses up one of the
// receiver's attempts and never leaves an attempt unlogged. An attempt
// that could not be made at all (ErrTypeWebhookNotSent) is made again a
// minute after the activity's retries give up, for as long as the outage
// lasts, and the attempts after it keep their gaps from the moment it
// finally went out. It ends:
//   - at the first 2xx answer (delivered) or permanent failure (failed);
//   - after the fifth failed attempt, which is logged as failed even when
//     it ended without an answer, so an event never stays retrying;
//   - at once, sending nothing, when the project has no webhook URL (the
//     event stays pending; the API starts a new run when a URL is saved)
//     or the event needs no delivery (already delivered, failed or skipped,
//     unless Redeliver), or a redelivery has replaced this run (its
//     Generation is behind the event's).
func WebhookWorkflow(ctx workflow.Context, in WebhookInput) error {
	logger := workflow.GetLogger(ctx)
	first := max(in.FirstAttempt, 1)
	start := workflow.Now(ctx)
	made := min(max(in.Made, 0), WebhookMaxAttempts)
	if made > 0 {
		// The attempt made before this run started was made about now.
		start = start.Add(-WebhookSchedule[made-1])
	}
	for i := made; i < WebhookMaxAttempts; i++ {
		if wait := start.Add(WebhookSchedule[i]).Sub(workflow.Now(ctx)); wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return err
			}
		}
		n := first + i
		var res SendWebhookResult
		var err error
		for delayed := false; ; delayed = true {
			err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, webhookSendOptions), ActivitySendWebhook,
				SendWebhookInput{EventID: in.EventID, Attempt: n, Force: in.Redeliver, Generation: in.Generation}).Get(ctx, &res)
			if !attemptNotMade(err) {
				if delayed {
					// The attempt went out late: the later ones keep their
					// gaps after it rather than bunching up.
					start = workflow.Now(ctx).Add(-WebhookSchedule[i])
				}
				break
			}
			// Nothing was sent (the database is unreachable beyond the
			// activity's own retries): the same attempt again, however
			// long the outage lasts; the receiver keeps all five.
			logger.Warn("webhook attempt not made; trying again", "eventId", in.EventID, "attempt", n, "error", err)
			if err := workflow.Sleep(ctx, webhookNotSentWait); err != nil {
				return err
			}
		}
		if err != nil {
			if ErrorCode(err) == paywatch.ENOTFOUND {
				logger.Error("webhook event not found", "eventId", in.EventID)
				return nil
			}
			// The attempt may have reached the receiver before its worker
			// was lost: it counts as made.
			logger.Warn("webhook attempt did not complete", "eventId", in.EventID, "attempt", n, "error", err)
			res = SendWebhookResult{Outcome: WebhookOutcomeRetry, ResponseBody: msgAttemptIncomplete}
		}
		state, made := attemptState(res.Outcome, i == WebhookMaxAttempts-1)
		if !made {
			return nil
		}
		rec := RecordWebhookAttemptInput{
			EventID: in.EventID, Attempt: n, StatusCode: res.StatusCode, ResponseBody: res.ResponseBody, State: state,
			Generation: in.Generation,
		}
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, persistOptions),
			ActivityRecordWebhookAttempt, rec).Get(ctx, nil); err != nil {
			return err // only a non-retryable error ends the unlimited retries
		}
		if state != WebhookAttemptRetrying {
			return nil
		}
	}
	return nil
}

// attemptState is what an attempt that ended in outcome makes of its
// event: delivered, failed for good, or retrying, which the schedule's
// last attempt turns into failed. made is false for an attempt that sent
// nothing and is not logged (no URL, or nothing left to send).
func attemptState(outcome WebhookOutcome, last bool) (state WebhookAttemptState, made bool) {
	switch outcome {
	case WebhookOutcomeNoURL, WebhookOutcomeDone:
		return "", false
	case WebhookOutcomeDelivered:
		return WebhookAttemptDelivered, true
	case WebhookOutcomeFailed:
		return WebhookAttemptFailed, true
	}
	if last {
		return WebhookAttemptFailed, true
	}
	return WebhookAttemptRetrying, true
}

// webhookNotSentWait is how long WebhookWorkflow waits before making again
// an attempt that could not be made, after the activity's own retries.
const webhookNotSentWait = time.Minute

// attemptNotMade reports whether a send activity's error says that nothing
// was sent: the activity failed with ErrTypeWebhookNotSent itself. A
// timeout whose last try had failed so is not: the attempt that timed out
// may have sent the request.
func attemptNotMade(err error) bool {
	var act *temporal.ActivityError
	if !errors.As(err, &act) {
		return false
	}
	app, ok := act.Unwrap().(*temporal.ApplicationError)
	return ok && app.Type() == ErrTypeWebhookNotSent
}
