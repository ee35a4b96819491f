package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/telegram"
	"github.com/paywatch/paywatch/workflows"
)

// queueChat queues the chat message of a queued webhook event, when chat
// notifications are on and the event's project has a chat; it reports
// whether a message waits to be sent (not skipped by the quota). The text
// is written now, from the event's payload, so every retry sends the same.
func (a *Activities) queueChat(ctx context.Context, in workflows.QueueWebhookInput, payload WebhookPayload) (bool, error) {
	if a.telegram == nil {
		return false, nil
	}
	state, queued, err := a.store.QueueChatMessage(ctx, in.EventID, func(n store.ChatNotice) string {
		return telegram.Text(chatNotification(n.ProjectName, in, payload))
	})
	if err != nil {
		return false, err
	}
	if state == store.ChatSkipped {
		activity.GetLogger(ctx).Info("chat message skipped: daily chat quota exhausted", "eventId", in.EventID)
	}
	return queued && state == store.ChatPending, nil
}

// chatNotification is what a chat message says of an event.
func chatNotification(project string, in workflows.QueueWebhookInput, p WebhookPayload) telegram.Notification {
	n := telegram.Notification{
		Project: project, Event: string(in.Event), Late: p.LatePayment, PaymentID: p.PaymentID,
		Amount: p.ExpectedAmount, PaidAmount: p.PaidAmount, ExternalRef: p.ExternalRef,
	}
	if p.Token != nil {
		n.Token = *p.Token
	}
	if p.Network != nil {
		n.Network = *p.Network
	}
	if p.ExternalOrderID != nil {
		n.ExternalOrderID = *p.ExternalOrderID
	}
	if p.TxHash != nil && (in.Event == paywatch.EventCompleted || in.Event == paywatch.EventOverpaid || in.Event == paywatch.EventPartial) {
		n.TxHash = *p.TxHash
		n.ExplorerTxURL = paywatch.ExplorerTxURL(paywatch.Network(n.Network), n.TxHash)
	}
	return n
}

// SendChat sends one queued chat message through the Bot API. A message
// already sent, failed or skipped is not sent again; one Telegram refuses
// for good (400, 403: the bot blocked, the chat gone) is recorded as failed
// and not retried; a 429 is retried after its retry_after, and 5xx answers
// and network failures with the workflow's back-off. Every attempt is
// counted on the message, with its error, for the delivery log.
//
// Telegram's acknowledgement is recorded with its message id, so a retry
// never sends an acknowledged message again; only a crash in the instant
// between the acknowledgement and that record can repeat it.
func (a *Activities) SendChat(ctx context.Context, in workflows.SendChatInput) error {
	m, err := a.store.ChatMessageByID(ctx, in.EventID)
	if err != nil {
		return temporalError(err)
	}
	if err := a.store.MarkChatStarted(ctx, in.EventID); err != nil {
		return err
	}
	if m.State != store.ChatPending {
		return nil
	}
	if m.CurrentChatID != m.ChatID {
		// /stop, or a new chat, since the message was queued.
		return a.failChat(ctx, in.EventID, "not sent: the project's chat changed since the message was queued")
	}
	if a.telegram == nil {
		// A worker without the bot: another worker, or this one once the
		// operator sets the token, sends it.
		return temporal.NewApplicationError("chat notifications are off on this worker (PAYWATCH_TELEGRAM_BOT_TOKEN)", workflows.ErrTypeChatNotSent)
	}
	sent, err := a.telegram.SendMessage(ctx, telegram.SendMessage{ChatID: m.ChatID, Text: m.Text, DisableWebPagePreview: true})
	if err == nil {
		if err := a.store.MarkChatSent(ctx, in.EventID, sent.MessageID); err != nil {
			// Sent: retrying would send it twice. The log shows the gap.
			activity.GetLogger(ctx).Error("chat message sent but not recorded", "eventId", in.EventID, "telegramMessageId", sent.MessageID, "error", err)
		}
		return nil
	}
	var te *telegram.Error
	// 400 and 403 are the chat's answers (bad request, bot blocked, kicked)
	// and permanent; a 401 or 404 says the deployment's token is wrong,
	// which the operator fixes: those are retried like a failure.
	if errors.As(err, &te) && (te.Code == 400 || te.Code == 403) {
		activity.GetLogger(ctx).Warn("chat message refused for good", "eventId", in.EventID, "code", te.Code, "description", te.Description)
		return a.failChat(ctx, in.EventID, fmt.Sprintf("%d %s", te.Code, te.Description))
	}
	if rerr := a.store.RecordChatAttempt(ctx, in.EventID, err.Error()); rerr != nil {
		activity.GetLogger(ctx).Warn("record chat attempt", "eventId", in.EventID, "error", rerr)
	}
	opts := temporal.ApplicationErrorOptions{Cause: err}
	if d, ok := telegram.RetryAfter(err); ok {
		// Telegram's 429: an expected retry, after the wait it asked for.
		opts.NextRetryDelay = d
		return temporal.NewApplicationErrorWithOptions("chat message not sent yet: rate limited", workflows.ErrTypeRateLimited, opts)
	}
	return temporal.NewApplicationErrorWithOptions("chat message not sent yet", workflows.ErrTypeChatNotSent, opts)
}

// failChat records a message as failed for good.
func (a *Activities) failChat(ctx context.Context, eventID, reason string) error {
	if err := a.store.RecordChatAttempt(ctx, eventID, reason); err != nil {
		return err
	}
	return a.store.MarkChatFailed(ctx, eventID, reason)
}

// FailChat records that a message ran out of retries.
func (a *Activities) FailChat(ctx context.Context, in workflows.SendChatInput) error {
	return a.store.MarkChatFailed(ctx, in.EventID, in.Reason)
}
