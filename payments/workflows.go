package payments

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
)

// Workflows is what the use cases ask of Temporal: start one payment
// workflow per payment, send it the merchant's and the customer's actions
// as updates whose validators give the verdict (409, 410, 400, 429 as
// update rejections), and start webhook deliveries.
type Workflows interface {
	// Start starts the payment's workflow under its stable ID; starting a
	// workflow that already exists (running or closed) succeeds.
	Start(ctx context.Context, in paywatch.PaymentInput) error
	// Cancel cancels a pending payment and returns its new state.
	Cancel(ctx context.Context, paymentID string) (paywatch.PaymentState, error)
	// SubmitTxHash submits a normalised transaction hash (pool + txid).
	SubmitTxHash(ctx context.Context, paymentID string, req workflows.SubmitTxHashRequest) (workflows.SubmitTxHashResult, error)
	// SelectNetwork picks the network of a payment created without one (the
	// hosted page) and returns its deposit address; the window stays as it is.
	SelectNetwork(ctx context.Context, paymentID string, req workflows.SelectNetworkRequest) (paywatch.Assignment, error)
	// Recheck asks the payment's workflow to check the chain now.
	Recheck(ctx context.Context, paymentID string) (paywatch.PaymentState, error)
	// SendMail starts the delivery workflow of a queued e-mail; one already
	// running or done is kept.
	SendMail(ctx context.Context, mailID string) error
	// SendChat starts the delivery workflow of a queued chat message unless
	// one ever ran for it: a run that ended may have sent it.
	SendChat(ctx context.Context, eventID string) error
	// DeliverWebhook starts the delivery workflow of a webhook event. A
	// delivery already running is kept, unless in.Redeliver asks for a
	// fresh one, which replaces it.
	DeliverWebhook(ctx context.Context, in workflows.WebhookInput) error
}

// TemporalWorkflows implements Workflows over a Temporal client.
type TemporalWorkflows struct {
	client    client.Client
	taskQueue string
	// searchRefKey keys the hashes the search attributes show of the
	// merchant's references; nil shows them in clear.
	searchRefKey []byte
	// lifecycle is the Lifecycle new payments' workflows start with.
	lifecycle int
}

// NewTemporalWorkflows returns Workflows that start payment
// workflows on taskQueue through c. A payment's ExternalRef and
// ExternalOrderId search attributes show keyed hashes of the merchant's
// references under searchRefKey (workflows.SearchRef), or, with a nil
// key, the references themselves (an operator's opt-in).
//
// New payments' workflows are lean (workflows.LeanLifecycle) unless
// StartLean(false) says otherwise.
func NewTemporalWorkflows(c client.Client, taskQueue string, searchRefKey []byte) *TemporalWorkflows {
	return &TemporalWorkflows{client: c, taskQueue: taskQueue, searchRefKey: searchRefKey, lifecycle: workflows.LeanLifecycle}
}

// StartLean sets whether the payment workflows Start starts are lean
// (workflows.LeanLifecycle, type workflows.LeanPaymentWorkflowName) or
// take the shape of the release before, whose workers can run them
// (PAYWATCH_LEAN_PAYMENTS=false, while workers of that release still run).
// A workflow already running keeps its shape.
func (t *TemporalWorkflows) StartLean(on bool) *TemporalWorkflows {
	t.lifecycle = 0
	if on {
		t.lifecycle = workflows.LeanLifecycle
	}
	return t
}

// searchRefs are the values in's search attributes show.
func (t *TemporalWorkflows) searchRefs(in paywatch.PaymentInput) *paywatch.SearchRefs {
	refs := &paywatch.SearchRefs{ExternalRef: in.ExternalRef}
	if in.ExternalOrderID != nil {
		refs.ExternalOrderID = *in.ExternalOrderID
	}
	if t.searchRefKey != nil {
		refs.ExternalRef = workflows.SearchRef(t.searchRefKey, refs.ExternalRef)
		refs.ExternalOrderID = workflows.SearchRef(t.searchRefKey, refs.ExternalOrderID)
	}
	return refs
}

// Start starts the workflow with ID PaymentWorkflowID(id). An existing
// workflow of that ID is reused while it runs, and a closed one is never
// started again, so the API and the reconciler may both call Start.
func (t *TemporalWorkflows) Start(ctx context.Context, in paywatch.PaymentInput) error {
	in.SearchRefs = t.searchRefs(in)
	in.Lifecycle = t.lifecycle
	attrs, memo := workflows.StartAttributes(in)
	_, err := t.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.PaymentWorkflowID(in.PaymentID),
		TaskQueue:                t.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    attrs,
		Memo:                     memo,
	}, workflows.PaymentWorkflowType(in.Lifecycle), in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start payment workflow %s: %w", in.PaymentID, err)
	}
	return nil
}

// DeliverWebhook starts the event's WebhookWorkflow (ID
// WebhookWorkflowID). An ID whose earlier runs have closed is started
// again, since an event left pending or sent again needs a new run; a
// running one is kept (the same delivery, asked for twice) or, for a
// redelivery, terminated and replaced, so that one run at a time delivers
// an event and the new run's attempts start now.
func (t *TemporalWorkflows) DeliverWebhook(ctx context.Context, in workflows.WebhookInput) error {
	conflict := enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	if in.Redeliver {
		conflict = enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
	}
	_, err := t.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.WebhookWorkflowID(in.EventID),
		TaskQueue:                t.taskQueue,
		WorkflowIDConflictPolicy: conflict,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflows.WebhookWorkflowName, in)
	if err != nil {
		return fmt.Errorf("start webhook workflow %s: %w", in.EventID, err)
	}
	return nil
}

// SendMail starts the message's MailWorkflow (ID MailWorkflowID), unless
// one was started for it already.
func (t *TemporalWorkflows) SendMail(ctx context.Context, mailID string) error {
	_, err := t.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.MailWorkflowID(mailID),
		TaskQueue:                t.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// A run an operator terminated may be started again; one that sent
		// the message completed and is never repeated.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
	}, workflows.MailWorkflowName, workflows.SendMailInput{MailID: mailID})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start mail workflow %s: %w", mailID, err)
	}
	return nil
}

// SendChat starts the message's ChatWorkflow (ID ChatWorkflowID) unless a
// run of that ID exists or ever existed: one that ended may have sent the
// message without recording it, and Telegram must not get it twice.
func (t *TemporalWorkflows) SendChat(ctx context.Context, eventID string) error {
	_, err := t.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.ChatWorkflowID(eventID),
		TaskQueue:                t.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.ChatWorkflowName, workflows.SendChatInput{EventID: eventID})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start chat workflow %s: %w", eventID, err)
	}
	return nil
}

// update sends a payment update and waits for its result.
func (t *TemporalWorkflows) update(ctx context.Context, paymentID, name string, arg, result any) error {
	h, err := t.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflows.PaymentWorkflowID(paymentID),
		UpdateName:   name,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, result)
}

// Cancel sends the cancel update.
func (t *TemporalWorkflows) Cancel(ctx context.Context, paymentID string) (paywatch.PaymentState, error) {
	var st paywatch.PaymentState
	err := t.update(ctx, paymentID, workflows.UpdateCancel, workflows.CancelRequest{}, &st)
	return st, err
}

// Recheck sends the recheck update.
func (t *TemporalWorkflows) Recheck(ctx context.Context, paymentID string) (paywatch.PaymentState, error) {
	var st paywatch.PaymentState
	err := t.update(ctx, paymentID, workflows.UpdateRecheck, workflows.RecheckRequest{}, &st)
	return st, err
}

// SubmitTxHash sends the submit-tx-hash update.
func (t *TemporalWorkflows) SubmitTxHash(ctx context.Context, paymentID string, req workflows.SubmitTxHashRequest) (workflows.SubmitTxHashResult, error) {
	var res workflows.SubmitTxHashResult
	err := t.update(ctx, paymentID, workflows.UpdateSubmitTxHash, req, &res)
	return res, err
}

// SelectNetwork sends the select-network update.
func (t *TemporalWorkflows) SelectNetwork(ctx context.Context, paymentID string, req workflows.SelectNetworkRequest) (paywatch.Assignment, error) {
	var a paywatch.Assignment
	err := t.update(ctx, paymentID, workflows.UpdateSelectNetwork, req, &a)
	return a, err
}

// workflowClosed reports whether err says the payment's workflow no longer
// takes updates (it has completed) or does not exist.
func workflowClosed(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
