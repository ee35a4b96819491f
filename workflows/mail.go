package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// MailWorkflowName is the registered name of MailWorkflow.
const MailWorkflowName = "mail"

// ActivitySendMail sends one queued e-mail (SendMailInput).
const ActivitySendMail = "mail.send"

// MailWorkflowID is the workflow ID of a message's delivery: one per
// message, so it is sent by one run at a time.
func MailWorkflowID(mailID string) string { return "mail/" + mailID }

// SendMailInput starts a MailWorkflow and is the payload of
// ActivitySendMail.
type SendMailInput struct {
	MailID string
}

// mailOptions retry a message until it is sent: an e-mail that cannot be
// sent is retried and logged, never dropped (operations.md §5). The wait
// grows to 10 minutes between tries.
var mailOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    10 * time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    10 * time.Minute,
	},
}

// MailWorkflow delivers one queued e-mail (workflow ID MailWorkflowID): its
// one activity sends it, or files it in the dev outbox, and is retried
// until that succeeds. A message already sent is not sent again.
func MailWorkflow(ctx workflow.Context, in SendMailInput) error {
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, mailOptions), ActivitySendMail, in).Get(ctx, nil)
}
