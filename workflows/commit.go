package workflows

import (
	"slices"
	"strconv"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// webhookEventNamespace is the UUIDv5 namespace of webhook event ids: an
// event id is derived from the payment id and the event's sequence, so it is
// deterministic on replay and the same across delivery retries.
var webhookEventNamespace = uuid.MustParse("3f0b6a52-7c1e-4d52-9a57-4f1e2b0c9d61")

// EventID returns the event_id of a payment's webhook with the given
// sequence number.
func EventID(paymentID string, sequence int) string {
	return uuid.NewSHA1(webhookEventNamespace, []byte(paymentID+"/"+strconv.Itoa(sequence))).String()
}

// commit persists the state if it changed: it bumps Version, saves the
// state, publishes a status change to the search attributes and queues the
// webhook the change calls for. Only the save is awaited; the webhook runs
// in its own coroutine.
func (p *payment) commit(ctx workflow.Context) {
	if !p.changed {
		return
	}
	p.changed = false
	event, notify := p.pendingEvent()
	if notify {
		p.st.WebhookSequence++
		if p.st.Status == paywatch.StatusPartial {
			paid := p.st.PaidAmount
			p.st.PartialNotified = &paid
		}
	}
	statusChanged := p.committed != p.st.Status
	p.committed = p.st.Status
	p.st.Version++
	p.st.UpdatedAt = workflow.Now(ctx)
	snap := p.snapshot()
	if statusChanged {
		p.publish(ctx)
	}
	if err := p.persist(ctx, ActivitySavePaymentState, snap, nil); err != nil {
		p.logger.Error("save payment state failed", "paymentId", p.st.PaymentID, "version", snap.Version, "error", err)
	}
	if notify {
		p.sendWebhook(ctx, event, snap)
	}
}

// pendingEvent returns the webhook the current state calls for: one per
// status change into paid, overpaid, partial, expired or cancelled, and
// another payment.partial whenever confirmed funds of a partial payment
// grow. A payment that never had a network expires silently.
func (p *payment) pendingEvent() (paywatch.Event, bool) {
	s := p.st.Status
	switch {
	case s == paywatch.StatusPartial:
		if p.st.PartialNotified != nil && p.st.PaidAmount.Cmp(*p.st.PartialNotified) <= 0 {
			return "", false
		}
	case s == p.committed:
		return "", false
	case s == paywatch.StatusExpired && p.st.Network == "":
		return "", false
	}
	return paywatch.EventFor(s)
}

// sendWebhook queues one webhook and has it delivered, in its own coroutine
// so that retries (up to 30 minutes) never hold up the state machine. The
// delivery is the event's WebhookWorkflow, run as a child that this
// coroutine waits for: the payment workflow still outlives its deliveries,
// and the API can start the same workflow for the same event later (a URL
// set, a redelivery) without two runs ever delivering it at once.
func (p *payment) sendWebhook(ctx workflow.Context, event paywatch.Event, snap paywatch.PaymentState) {
	in := QueueWebhookInput{
		EventID:  EventID(snap.PaymentID, snap.WebhookSequence),
		Sequence: snap.WebhookSequence,
		Event:    event,
		State:    snap,
	}
	p.webhooksOut++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() {
			p.webhooksOut--
			p.wake = true
		}()
		var q QueueWebhookResult
		if err := p.persist(ctx, ActivityQueueWebhook, in, &q); err != nil {
			p.logger.Error("queue webhook failed", "paymentId", snap.PaymentID, "event", event, "error", err)
			return
		}
		if q.Chat && (p.lean || chatWorkflows(ctx)) {
			p.startChat(ctx, in.EventID)
		}
		if q.Skipped {
			p.logger.Info("webhook skipped: daily quota exhausted", "paymentId", snap.PaymentID, "event", event)
			return
		}
		if p.lean {
			if made, done := p.firstAttempt(ctx, in.EventID); !done {
				p.deliverWebhook(ctx, event, WebhookInput{EventID: in.EventID, FirstAttempt: 1, Made: made})
			}
			return
		}
		if webhookWorkflows(ctx) {
			p.deliverWebhook(ctx, event, WebhookInput{EventID: in.EventID, FirstAttempt: 1})
			return
		}
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, legacyWebhookOptions),
			ActivityDeliverWebhook, DeliverWebhookInput{EventID: in.EventID}).Get(ctx, nil); err != nil {
			p.logger.Warn("webhook not delivered", "paymentId", snap.PaymentID, "event", event, "eventId", in.EventID, "error", err)
		}
	})
}

// startChat starts the event's ChatWorkflow as an abandoned child and does
// not wait for it: a chat message never holds up the state machine or the
// webhook. A run of that ID already started (by the reconciler) sends it.
func (p *payment) startChat(ctx workflow.Context, eventID string) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        ChatWorkflowID(eventID),
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	f := workflow.ExecuteChildWorkflow(cctx, ChatWorkflowName, SendChatInput{EventID: eventID})
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		p.logger.Info("chat workflow not started: another run sends it", "paymentId", p.st.PaymentID, "eventId", eventID, "error", err)
	}
}

// deliverWebhook runs the event's WebhookWorkflow as a child and waits for
// it. The child is abandoned, not cancelled, if this run is closed some
// other way, so a terminated payment workflow never cuts a delivery short.
// When a workflow of that ID already runs (the reconciler started it
// first), that run delivers the event.
func (p *payment) deliverWebhook(ctx workflow.Context, event paywatch.Event, in WebhookInput) {
	eventID := in.EventID
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        WebhookWorkflowID(eventID),
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	f := workflow.ExecuteChildWorkflow(cctx, WebhookWorkflowName, in)
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		p.logger.Info("webhook workflow not started: another run delivers it", "paymentId", p.st.PaymentID, "event", event, "eventId", eventID, "error", err)
		return
	}
	if err := f.Get(ctx, nil); err != nil {
		// Terminated, most likely, by a redelivery that replaced it.
		p.logger.Warn("webhook workflow did not complete", "paymentId", p.st.PaymentID, "event", event, "eventId", eventID, "error", err)
	}
}

// snapshot returns a deep copy of the state, safe to hand to an activity or
// a query while the workflow keeps changing its own.
func (p *payment) snapshot() paywatch.PaymentState {
	s := p.st
	s.Transactions = slices.Clone(p.st.Transactions)
	s.SubmittedHashes = slices.Clone(p.st.SubmittedHashes)
	s.ClaimedHashes = slices.Clone(p.st.ClaimedHashes)
	return s
}

// finish ends the workflow: it waits for handlers, releases the address,
// then waits for outstanding webhooks.
func (p *payment) finish(ctx workflow.Context) error {
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	p.drainSignals(ctx)
	p.commit(ctx)
	// A selection whose answer was never learned may have recorded an
	// address on the row: release what the row holds.
	if p.st.Address != "" || p.safety && p.syncSelection {
		in := ReleaseAddressInput{PaymentID: p.st.PaymentID, Outcome: p.st.Status}
		if err := p.persist(ctx, ActivityReleaseAddress, in, nil); err != nil {
			p.logger.Error("release address failed", "paymentId", p.st.PaymentID, "error", err)
		}
	}
	_ = workflow.Await(ctx, func() bool { return p.quiet(ctx) })
	return nil
}

// quiet reports whether no handler and no webhook is running, the
// condition for ending or continuing as new.
func (p *payment) quiet(ctx workflow.Context) bool {
	return p.webhooksOut == 0 && workflow.AllHandlersFinished(ctx)
}
