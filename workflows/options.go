package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Activity options of the payment workflow. Every activity has a
// StartToCloseTimeout; domain errors are non-retryable application errors,
// so retries only ever repeat transient failures.

// persistOptions: saving state, queueing webhooks, claims and releases must
// eventually happen, so they retry without an attempt limit.
var persistOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
	},
}

// interactiveOptions: activities an update handler awaits while the API
// waits for an answer; they give up quickly.
var interactiveOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 20 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    500 * time.Millisecond,
		BackoffCoefficient: 2,
		MaximumInterval:    2 * time.Second,
		MaximumAttempts:    3,
	},
}

// chainOptions: chain reads from the main loop. A failure is not fatal: the
// loop tries again at its next check.
//
// The final check (ActivityFinalCheck, also behind the recheck update)
// reads a window that can be a day of a fast chain, 345,600 blocks on
// ARBITRUM: it heartbeats after every few ranges, and each retry resumes
// from the last heartbeat, so its attempts may last up to
// chainAttemptTimeout as long as they keep making progress. An activity
// under these options that does not heartbeat (CheckTransfers,
// VerifyTxHash) is still cut off after chainHeartbeatTimeout, the one
// minute it always had.
var chainOptions = workflow.ActivityOptions{
	StartToCloseTimeout: chainAttemptTimeout,
	HeartbeatTimeout:    chainHeartbeatTimeout,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    2 * time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    30 * time.Second,
		MaximumAttempts:    4,
	},
}

// webhookSendOptions are the options of one delivery attempt
// (ActivitySendWebhook). Its retries repeat the same attempt: they cover a
// database error before the request, and a worker lost or timed out
// mid-attempt (the receiver may then see the attempt twice, with the same
// event_id, which at-least-once delivery allows). After the last retry an
// attempt that was never made (ErrTypeWebhookNotSent: the event could not
// be read) is made again by WebhookWorkflow, however long that takes; any
// other failure (a timeout, a lost worker) counts as made, so a dead worker
// can never keep an event retrying for ever.
var webhookSendOptions = workflow.ActivityOptions{
	StartToCloseTimeout: WebhookTimeout + 20*time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
		MaximumAttempts:    8,
	},
}

// legacyWebhookOptions are the options of ActivityDeliverWebhook in
// payment workflows recorded before WebhookWorkflow: one delivery attempt
// per activity attempt, 5 in all. The activity sets NextRetryDelay to
// follow WebhookSchedule; the policy's own intervals (10 s × 5^n, capped at
// 25 min) only apply when an attempt dies without answering.
var legacyWebhookOptions = workflow.ActivityOptions{
	StartToCloseTimeout: WebhookTimeout + 20*time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        10 * time.Second,
		BackoffCoefficient:     5,
		MaximumInterval:        25 * time.Minute,
		MaximumAttempts:        WebhookMaxAttempts,
		NonRetryableErrorTypes: []string{ErrTypeWebhookFailed},
	},
}

// chainAttemptTimeout bounds one attempt of a chain read that heartbeats
// its progress; chainHeartbeatTimeout is the most time between two of its
// heartbeats (a hung read, a lost worker), and the whole attempt of one
// that never heartbeats.
const (
	chainAttemptTimeout   = 30 * time.Minute
	chainHeartbeatTimeout = time.Minute
)

// chainRetryAfter is how long the main loop waits before trying a failed
// chain check again.
const chainRetryAfter = time.Minute
