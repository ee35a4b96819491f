package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ChatWorkflowName is the registered name of ChatWorkflow.
const ChatWorkflowName = "chat"

// Activity names of chat delivery.
const (
	// ActivitySendChat sends one queued chat message (SendChatInput).
	ActivitySendChat = "chat.send"
	// ActivityFailChat records that a message ran out of retries.
	ActivityFailChat = "chat.fail"
)

// ChatWorkflowID is the workflow ID of a chat message's delivery: one per
// webhook event, so one run at a time sends it.
func ChatWorkflowID(eventID string) string { return "chat/" + eventID }

// SendChatInput starts a ChatWorkflow and is the payload of its
// activities.
type SendChatInput struct {
	EventID string
	// Reason is why ActivityFailChat gives up on the message.
	Reason string `json:",omitempty"`
}

// chatOptions retry a message that Telegram did not take: 5xx answers and
// timeouts after 5 s, doubling up to 10 minutes; a 429 after the
// retry_after it names (the activity sets NextRetryDelay). Permanent
// refusals end the activity without an error. After a day the message is
// recorded as failed.
var chatOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    time.Minute,
	ScheduleToCloseTimeout: 24 * time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    5 * time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    10 * time.Minute,
	},
}

// ChatWorkflow delivers one queued chat message (workflow ID
// ChatWorkflowID). A message already sent, failed or skipped is not sent
// again.
func ChatWorkflow(ctx workflow.Context, in SendChatInput) error {
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, chatOptions), ActivitySendChat, in).Get(ctx, nil)
	if err == nil {
		return nil
	}
	workflow.GetLogger(ctx).Warn("chat message not delivered; recording it as failed", "eventId", in.EventID, "error", err)
	fail := SendChatInput{EventID: in.EventID, Reason: "not delivered: " + err.Error()}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, persistOptions), ActivityFailChat, fail).Get(ctx, nil)
}
