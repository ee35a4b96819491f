package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/workflows"
)

// WebhookPayload is the body of every webhook, whatever the event and code
// path (operations.md §3). Amounts are decimal strings with at least 2
// decimals; external_order_id, network, token, address, memo, tx_hash,
// metadata and paid_at are always present and may be null (memo is a
// memo payment's, operations.md §9). Payment-link payments
// also carry the WebhookLinkFields.
type WebhookPayload struct {
	Event           paywatch.Event       `json:"event"`
	EventID         string               `json:"event_id"`
	Sequence        int                  `json:"sequence"`
	PaymentID       string               `json:"payment_id"`
	Status          paywatch.Status      `json:"status"`
	Amount          string               `json:"amount"`
	ExpectedAmount  string               `json:"expected_amount"`
	PaidAmount      string               `json:"paid_amount"`
	Network         *string              `json:"network"`
	Token           *string              `json:"token"`
	Address         *string              `json:"address"`
	Memo            *string              `json:"memo"`
	TxHash          *string              `json:"tx_hash"`
	Transactions    []WebhookTransaction `json:"transactions"`
	ExternalRef     string               `json:"external_ref"`
	ExternalOrderID *string              `json:"external_order_id"`
	Metadata        json.RawMessage      `json:"metadata"`
	LatePayment     bool                 `json:"late_payment"`
	CreatedAt       time.Time            `json:"created_at"`
	PaidAt          *time.Time           `json:"paid_at"`
	ExpiresAt       time.Time            `json:"expires_at"`
	// WebhookLinkFields is nil, and its fields absent, unless the payment
	// came through a payment link.
	*WebhookLinkFields
}

// WebhookLinkFields are the payment-link fields of a link payment's webhook.
type WebhookLinkFields struct {
	BuyerEmail      *string `json:"buyer_email"`
	BuyerName       *string `json:"buyer_name"`
	BuyerNote       *string `json:"buyer_note"`
	PaymentLinkID   string  `json:"payment_link_id"`
	PaymentLinkSlug string  `json:"payment_link_slug"`
}

// WebhookTransaction is one element of the payload's transactions.
type WebhookTransaction struct {
	TxHash        string `json:"tx_hash"`
	Amount        string `json:"amount"`
	From          string `json:"from"`
	Confirmed     bool   `json:"confirmed"`
	Confirmations int    `json:"confirmations"`
}

// BuildWebhookPayload assembles the one payload format from the event, the
// workflow's state at the event and the payment row's merchant fields.
func BuildWebhookPayload(in workflows.QueueWebhookInput, info store.WebhookPaymentInfo) WebhookPayload {
	st := in.State
	p := WebhookPayload{
		Event:           in.Event,
		EventID:         in.EventID,
		Sequence:        in.Sequence,
		PaymentID:       st.PaymentID,
		Status:          st.Status,
		Amount:          st.Amount.String(),
		ExpectedAmount:  st.Amount.String(),
		PaidAmount:      st.PaidAmount.String(),
		Network:         optional(string(st.Network)),
		Token:           optional(string(st.Token)),
		Address:         optional(st.Address),
		Memo:            info.Memo,
		TxHash:          optional(st.TxHash),
		Transactions:    make([]WebhookTransaction, 0, len(st.Transactions)),
		ExternalRef:     info.ExternalRef,
		ExternalOrderID: info.ExternalOrderID,
		Metadata:        info.Metadata,
		LatePayment:     st.LatePayment,
		CreatedAt:       info.CreatedAt.UTC(),
		ExpiresAt:       st.ExpiresAt.UTC(),
	}
	if p.Metadata == nil {
		p.Metadata = json.RawMessage("null")
	}
	if st.PaidAt != nil {
		t := st.PaidAt.UTC()
		p.PaidAt = &t
	}
	for _, t := range st.Transactions {
		p.Transactions = append(p.Transactions, WebhookTransaction{
			TxHash: t.TxHash, Amount: t.Amount.String(), From: t.From,
			Confirmed: t.Confirmed, Confirmations: t.Confirmations,
		})
	}
	if l := info.Link; l != nil {
		p.WebhookLinkFields = &WebhookLinkFields{
			BuyerEmail: l.BuyerEmail, BuyerName: l.BuyerName, BuyerNote: l.BuyerNote,
			PaymentLinkID: l.PaymentLinkID, PaymentLinkSlug: l.PaymentLinkSlug,
		}
	}
	return p
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// QueueWebhook records a webhook event with its final payload and applies
// the daily quota; Skipped means the quota was exhausted and the event is
// never sent. It also queues the event's chat message, under the chat
// quota (Chat). Queueing the same event again is a no-op.
func (a *Activities) QueueWebhook(ctx context.Context, in workflows.QueueWebhookInput) (workflows.QueueWebhookResult, error) {
	info, err := a.store.WebhookPaymentInfo(ctx, in.State.PaymentID)
	if err != nil {
		return workflows.QueueWebhookResult{}, temporalError(err)
	}
	payload := BuildWebhookPayload(in, info)
	body, err := json.Marshal(payload)
	if err != nil {
		return workflows.QueueWebhookResult{}, temporal.NewNonRetryableApplicationError("encode webhook payload", workflows.ErrTypeEncoding, err)
	}
	state, err := a.store.QueueWebhookEvent(ctx, store.WebhookEvent{
		EventID: in.EventID, PaymentID: in.State.PaymentID, Event: in.Event, Sequence: in.Sequence, Payload: body,
	})
	if err != nil {
		return workflows.QueueWebhookResult{}, temporalError(err)
	}
	// The chat message of the event, beside the webhook (operations.md
	// §7), with its own quota.
	chat, err := a.queueChat(ctx, in, payload)
	if err != nil {
		return workflows.QueueWebhookResult{}, temporalError(err)
	}
	return workflows.QueueWebhookResult{Skipped: state == store.WebhookSkipped, Chat: chat}, nil
}

// webhookReadTimeout bounds SendWebhook's read of the event, well inside
// the attempt's StartToCloseTimeout (the request's own timeout plus 20 s).
const webhookReadTimeout = 10 * time.Second

// SendWebhook makes one delivery attempt of a queued event and reports how
// it ended; WebhookWorkflow numbers the attempts, keeps the schedule and
// logs each one through RecordWebhookAttempt, so an error here (the event
// could not be read) is retried as the same attempt. Each attempt reads the
// project's current URL and secret and sends through webhooks.Sender (URL
// checks, signature, outcome). Without a URL nothing is sent and the event
// stays pending; nor is anything sent by a run that a redelivery replaced
// (in.Generation behind the event's), whose attempt may have been
// scheduled before the replacement was.
func (a *Activities) SendWebhook(ctx context.Context, in workflows.SendWebhookInput) (workflows.SendWebhookResult, error) {
	// The read has a deadline well inside the attempt's: a database that
	// hangs must end in "not sent", never in the attempt's own timeout,
	// which counts as made.
	rctx, cancel := context.WithTimeout(ctx, webhookReadTimeout)
	d, err := a.store.WebhookDelivery(rctx, in.EventID)
	cancel()
	if err != nil {
		if terr := temporalError(err); terr != err {
			return workflows.SendWebhookResult{}, terr // the event is gone
		}
		return workflows.SendWebhookResult{}, temporal.NewApplicationErrorWithOptions("read webhook event: nothing was sent",
			workflows.ErrTypeWebhookNotSent, temporal.ApplicationErrorOptions{Cause: err})
	}
	switch {
	case in.Generation < d.Generation:
		// A redelivery replaced this run after it started: the new run
		// delivers the event, and this one sends nothing more.
		activity.GetLogger(ctx).Info("webhook run replaced by a redelivery; nothing sent", "eventId", in.EventID,
			"attempt", in.Attempt, "generation", in.Generation, "eventGeneration", d.Generation)
		return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeDone}, nil
	case !in.Force && (d.State == store.WebhookDelivered || d.State == store.WebhookFailed || d.State == store.WebhookSkipped):
		return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeDone}, nil
	case d.URL == "":
		return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeNoURL}, nil
	}
	res := a.sender.Send(ctx, d.URL, d.Secret, d.Payload)
	if res.Sent { // a URL refused before any request is no attempt made
		a.metrics.WebhookAttempt(res.Outcome)
	}
	switch {
	case res.Err != nil: // refused URL or a network failure: the detail is for the service log
		activity.GetLogger(ctx).Warn("webhook attempt failed", "eventId", in.EventID, "attempt", in.Attempt,
			"outcome", res.Outcome, "answer", res.Answer, "error", res.Err)
	case res.Outcome != webhooks.Delivered: // the receiver answered: its business
		activity.GetLogger(ctx).Info("webhook attempt failed", "eventId", in.EventID, "attempt", in.Attempt,
			"outcome", res.Outcome, "answer", failureText(res.StatusCode, res.Answer))
	}
	return workflows.SendWebhookResult{
		Outcome: workflows.WebhookOutcome(res.Outcome), StatusCode: res.StatusCode, ResponseBody: store.CutResponseBody(res.Answer),
	}, nil
}

// RecordWebhookAttempt logs one delivery attempt and gives the event its
// state, unless a redelivery has replaced the run that made it
// (store.RecordWebhookAttempt). Logging the same attempt again (a retry
// after the commit's answer was lost) overwrites it.
func (a *Activities) RecordWebhookAttempt(ctx context.Context, in workflows.RecordWebhookAttemptInput) error {
	return temporalError(a.store.RecordWebhookAttempt(ctx, store.WebhookAttempt{
		EventID: in.EventID, Attempt: in.Attempt, StatusCode: in.StatusCode,
		ResponseBody: in.ResponseBody, State: store.WebhookState(in.State), Generation: in.Generation,
	}))
}

// DeliverWebhook finishes the deliveries of payment workflows recorded
// before WebhookWorkflow existed, whose history already holds this activity
// (workflows.ActivityDeliverWebhook): there each activity attempt is a
// delivery attempt, numbered by Temporal and spaced by NextRetryDelay. It
// makes the attempt with SendWebhook and logs it itself.
func (a *Activities) DeliverWebhook(ctx context.Context, in workflows.DeliverWebhookInput) error {
	started := a.now()
	attempt := int(activity.GetInfo(ctx).Attempt)
	res, err := a.SendWebhook(ctx, workflows.SendWebhookInput{EventID: in.EventID, Attempt: attempt})
	if err != nil {
		return err
	}
	state := store.WebhookRetrying
	switch res.Outcome {
	case workflows.WebhookOutcomeDone, workflows.WebhookOutcomeNoURL:
		return nil // a pending event is delivered once a URL is saved
	case workflows.WebhookOutcomeDelivered:
		state = store.WebhookDelivered
	case workflows.WebhookOutcomeFailed:
		state = store.WebhookFailed
	default:
		if attempt >= workflows.WebhookMaxAttempts {
			state = store.WebhookFailed
		}
	}
	if err := a.store.RecordWebhookAttempt(ctx, store.WebhookAttempt{
		EventID: in.EventID, Attempt: attempt, StatusCode: res.StatusCode, ResponseBody: res.ResponseBody, State: state,
	}); err != nil {
		return err
	}
	msg := fmt.Sprintf("webhook %s attempt %d: %s", in.EventID, attempt, failureText(res.StatusCode, res.ResponseBody))
	switch state {
	case store.WebhookDelivered:
		return nil
	case store.WebhookFailed:
		return temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeWebhookFailed, nil)
	}
	return temporal.NewApplicationErrorWithOptions(msg, workflows.ErrTypeWebhookRetry, temporal.ApplicationErrorOptions{
		NextRetryDelay: nextWebhookDelay(attempt, a.now().Sub(started)),
	})
}

// failureText describes a failed attempt for the activity error.
func failureText(code int, body string) string {
	if code == 0 {
		return body
	}
	return fmt.Sprintf("HTTP %d: %s", code, body)
}

// nextWebhookDelay is the wait after failed legacy attempt n (from 1) so
// that attempt n+1 starts at its slot of WebhookSchedule: the gap between the two
// slots minus the time attempt n took, and at least a second (Temporal
// cannot express "now").
func nextWebhookDelay(attempt int, took time.Duration) time.Duration {
	if attempt < 1 || attempt >= workflows.WebhookMaxAttempts {
		return time.Second
	}
	gap := workflows.WebhookSchedule[attempt] - workflows.WebhookSchedule[attempt-1]
	return max(gap-took, time.Second)
}
