package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TelegramPollerWorkflowName is the registered name of
// TelegramPollerWorkflow.
const TelegramPollerWorkflowName = "telegram-poller"

// TelegramPollerWorkflowID is the one poller of the deployment's bot:
// Telegram serves getUpdates to one reader at a time, so, like a scanner,
// it runs once in the whole cluster.
const TelegramPollerWorkflowID = "telegram-poller"

// ActivityPollTelegram reads the bot's updates for a while (long polling)
// and links or unlinks the chats that send /start <code> or /stop.
const ActivityPollTelegram = "telegram.poll"

// pollOptions run one polling stretch of up to 10 minutes that heartbeats
// after each getUpdates; a lost worker is noticed within a minute and the
// stretch starts again elsewhere, from the stored offset.
var pollOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 11 * time.Minute,
	HeartbeatTimeout:    2 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    5 * time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
	},
}

// pollStretchesPerRun bounds a run's history; the poller continues as new
// after that many stretches.
const pollStretchesPerRun = 100

// TelegramPollerWorkflow runs the bot's polling activity for ever, one
// stretch after another.
func TelegramPollerWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, pollOptions)
	for range pollStretchesPerRun {
		if err := workflow.ExecuteActivity(ctx, ActivityPollTelegram).Get(ctx, nil); err != nil {
			var app *temporal.ApplicationError
			if errors.As(err, &app) && app.Type() == ErrTypeChatOff {
				// The bot was removed: nothing to poll. The next start
				// with a token starts the poller again.
				workflow.GetLogger(ctx).Info("telegram poller ends: no bot on the worker")
				return nil
			}
			workflow.GetLogger(ctx).Warn("telegram polling stretch failed", "error", err)
			if err := workflow.Sleep(ctx, time.Minute); err != nil {
				return err
			}
		}
	}
	return workflow.NewContinueAsNewError(ctx, TelegramPollerWorkflowName)
}

// EnsureTelegramPoller starts the bot's poller unless it runs already.
func EnsureTelegramPoller(ctx context.Context, c client.Client, taskQueue string) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       TelegramPollerWorkflowID,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, TelegramPollerWorkflowName)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start telegram poller: %w", err)
	}
	return nil
}
