package workflows

import (
	"context"
	"time"

	"github.com/paywatch/paywatch"
)

// This file is the contract between the payment workflow and its
// activities: their registered names, payloads and the Activities interface
// that package activities implements. The workflow calls activities by name
// only, so it never imports their implementation (which imports this
// package for the payload types).

// Registered activity names: readable in the Temporal Web UI and stable
// across Go renames.
const (
	// ActivitySavePaymentState persists a PaymentState (guarded by Version).
	ActivitySavePaymentState = "payment.save-state"
	// ActivitySelectNetwork assigns a deposit address on a network.
	ActivitySelectNetwork = "payment.select-network"
	// ActivityReleaseAddress frees the payment's address or micro offset.
	ActivityReleaseAddress = "payment.release-address"
	// ActivityCheckTransfers counts confirmations and checks canonicity.
	ActivityCheckTransfers = "payment.check-transfers"
	// ActivityFinalCheck lists transfers to the address since StartBlock.
	ActivityFinalCheck = "payment.final-check"
	// ActivityVerifyTxHash looks up a submitted transaction (pool + txid).
	ActivityVerifyTxHash = "payment.verify-tx-hash"
	// ActivityClaimTxHash claims a transaction hash for one payment.
	ActivityClaimTxHash = "payment.claim-tx-hash"
	// ActivityQueueWebhook records a webhook event and applies the quota.
	ActivityQueueWebhook = "webhook.queue"
	// ActivityDeliverWebhook makes one signed delivery attempt.
	ActivityDeliverWebhook = "webhook.deliver"
)

// Webhook delivery policy of operations.md §3, shared by the workflow's
// retry policy and the delivery activity.
const (
	// WebhookMaxAttempts is the number of delivery attempts in all.
	WebhookMaxAttempts = 5
	// WebhookTimeout is how long a receiver has to answer one attempt.
	WebhookTimeout = 10 * time.Second
)

// WebhookSchedule is when each delivery attempt starts, measured from the
// start of the first one: 0 s, 10 s, 60 s, 5 min and 30 min. The delivery
// activity asks Temporal for the gap to the next slot (minus the time the
// failed attempt took) through ApplicationError's NextRetryDelay.
var WebhookSchedule = [WebhookMaxAttempts]time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute}

// ErrTypeWebhookFailed is the type of a delivery failure that is not retried
// (4xx answer, refused URL, missing secret, last attempt).
const ErrTypeWebhookFailed = "WebhookFailed"

// ReleaseAddressInput is the payload of ActivityReleaseAddress.
type ReleaseAddressInput struct {
	PaymentID string
	// Outcome is the final status: paid, overpaid, expired or cancelled.
	Outcome paywatch.Status
}

// SelectNetworkInput is the payload of ActivitySelectNetwork.
type SelectNetworkInput struct {
	PaymentID string
	Network   paywatch.Network
	Token     paywatch.Token
}

// TransferRef identifies a transfer and the block it was seen in.
type TransferRef struct {
	TxHash      string
	LogIndex    uint32
	BlockNumber uint64
	BlockHash   string
}

// CheckTransfersInput is the payload of ActivityCheckTransfers.
type CheckTransfersInput struct {
	Network   paywatch.Network
	Transfers []TransferRef
}

// TransferCheck is the verdict on one transfer.
type TransferCheck struct {
	TxHash   string
	LogIndex uint32
	// Confirmations is head − block + 1, or 0 if the block is above the head.
	Confirmations int
	// Canonical is false when the chain now has another block at that
	// height: the transfer vanished in a reorg.
	Canonical bool
}

// CheckTransfersResult answers ActivityCheckTransfers.
type CheckTransfersResult struct {
	Head      uint64
	Transfers []TransferCheck
	// BlockTime is the chain's actual block interval when it differs from
	// the network's usual one (a devnet chain); zero means the usual one.
	// The workflow sizes its next confirmation wait with it.
	BlockTime time.Duration
}

// FinalCheckInput is the payload of ActivityFinalCheck.
type FinalCheckInput struct {
	Network    paywatch.Network
	Token      paywatch.Token
	Address    string
	StartBlock uint64
}

// FinalCheckResult lists the token's transfers to the address since
// StartBlock, as a scanner would have signalled them.
type FinalCheckResult struct {
	Head      uint64
	Transfers []TransferSeen
}

// VerifyTxHashInput is the payload of ActivityVerifyTxHash.
type VerifyTxHashInput struct {
	Network    paywatch.Network
	Token      paywatch.Token
	Address    string
	StartBlock uint64
	TxHash     string
}

// VerifyTxHashResult answers ActivityVerifyTxHash. Found false (the
// transaction is not on chain yet, or failed) is a normal answer.
type VerifyTxHashResult struct {
	Found bool
	// Transfers are the transaction's transfers of the token to the address
	// in blocks ≥ StartBlock.
	Transfers []TransferSeen
	// Reason says why a found transaction has no such transfer.
	Reason string
}

// ClaimTxHashInput is the payload of ActivityClaimTxHash.
type ClaimTxHashInput struct {
	PaymentID string
	Network   paywatch.Network
	TxHash    string
}

// QueueWebhookInput is the payload of ActivityQueueWebhook: the event and
// the payment state it reports.
type QueueWebhookInput struct {
	EventID  string
	Sequence int
	Event    paywatch.Event
	State    PaymentState
}

// QueueWebhookResult answers ActivityQueueWebhook.
type QueueWebhookResult struct {
	// Skipped is true when the daily quota was exhausted: never sent.
	Skipped bool
}

// DeliverWebhookInput is the payload of ActivityDeliverWebhook.
type DeliverWebhookInput struct {
	EventID string
}

// Activities is what the payment workflow needs from its activities;
// *activities.Activities implements it. Register takes this interface
// rather than the concrete type because package activities imports this
// package for the payload types.
type Activities interface {
	SavePaymentState(ctx context.Context, st PaymentState) error
	SelectNetwork(ctx context.Context, in SelectNetworkInput) (Assignment, error)
	ReleaseAddress(ctx context.Context, in ReleaseAddressInput) error
	CheckTransfers(ctx context.Context, in CheckTransfersInput) (CheckTransfersResult, error)
	FinalCheck(ctx context.Context, in FinalCheckInput) (FinalCheckResult, error)
	VerifyTxHash(ctx context.Context, in VerifyTxHashInput) (VerifyTxHashResult, error)
	ClaimTxHash(ctx context.Context, in ClaimTxHashInput) error
	QueueWebhook(ctx context.Context, in QueueWebhookInput) (QueueWebhookResult, error)
	DeliverWebhook(ctx context.Context, in DeliverWebhookInput) error
}
