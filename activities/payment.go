package activities

import (
	"context"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
)

// SavePaymentState persists a state change of the workflow. It is
// idempotent: the store only applies a version newer than the saved one,
// so a change of status is counted (Metrics) by the save that made it,
// never by its retries.
func (a *Activities) SavePaymentState(ctx context.Context, st paywatch.PaymentState) error {
	saved, err := a.store.SavePaymentStateResult(ctx, st)
	if err != nil {
		return temporalError(err)
	}
	if saved.Entered != "" {
		a.metrics.PaymentEntered(saved.Entered)
	}
	return nil
}

// SelectNetwork assigns the deposit address of a network-less payment.
// Refusals (no address left, pair not offered, capacity) come back as
// non-retryable errors carrying the API's message.
func (a *Activities) SelectNetwork(ctx context.Context, in workflows.SelectNetworkInput) (paywatch.Assignment, error) {
	asg, err := a.store.AssignAddress(ctx, in.PaymentID, in.Network, in.Token)
	if err != nil {
		return paywatch.Assignment{}, temporalError(err)
	}
	return asg, nil
}

// LoadAssignment reads the network selection recorded on the payment's
// row, if any: the payment workflow asks when a selection's answer was lost
// and before a payment without a network expires, so that the row and the
// workflow agree on the address the customer was shown.
func (a *Activities) LoadAssignment(ctx context.Context, in workflows.LoadAssignmentInput) (workflows.LoadAssignmentResult, error) {
	asg, ok, err := a.store.Assignment(ctx, in.PaymentID)
	if err != nil {
		return workflows.LoadAssignmentResult{}, temporalError(err)
	}
	return workflows.LoadAssignmentResult{Assigned: ok, Assignment: asg}, nil
}

// ReleaseAddress frees a finished payment's address: per_payment addresses
// are deactivated, micro offsets of expired and cancelled payments are
// quarantined (the store decides by mode and outcome).
func (a *Activities) ReleaseAddress(ctx context.Context, in workflows.ReleaseAddressInput) error {
	return temporalError(a.store.ReleaseAddress(ctx, in.PaymentID, in.Outcome))
}

// ClaimTxHash claims a verified transaction hash, and the transfers it
// pays the payment's address with, for the payment; a hash or transfer
// that already counts for another payment is a Conflict rejection with the
// API message.
func (a *Activities) ClaimTxHash(ctx context.Context, in workflows.ClaimTxHashInput) error {
	ts := make([]paywatch.Transfer, 0, len(in.Transfers))
	for _, t := range in.Transfers {
		ts = append(ts, paywatch.Transfer{
			Network: in.Network, Token: in.Token, TxHash: t.TxHash, LogIndex: t.LogIndex,
			BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, From: t.From, To: in.Address, Amount: t.Amount.Units(),
		})
	}
	return temporalError(a.store.ClaimTxHash(ctx, in.Network, in.TxHash, in.PaymentID, ts))
}
