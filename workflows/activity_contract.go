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
	// ActivityLoadAssignment reads the network selection recorded on a
	// payment's row, for a selection whose answer the workflow never got.
	ActivityLoadAssignment = "payment.load-assignment"
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
	// ActivitySendWebhook makes one signed delivery attempt and reports how
	// it ended, without logging it.
	ActivitySendWebhook = "webhook.send"
	// ActivityRecordWebhookAttempt logs a delivery attempt and sets the
	// event's state.
	ActivityRecordWebhookAttempt = "webhook.record-attempt"
	// ActivityDeliverWebhook is the delivery activity of payment workflows
	// recorded before WebhookWorkflow existed (see webhookWorkflows): every
	// activity attempt is a delivery attempt. Nothing new schedules it.
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
// start of the first one: 0 s, 10 s, 60 s, 5 min and 30 min. WebhookWorkflow
// waits for each slot with a timer, so an attempt delayed by a retried
// activity does not shift the ones after it.
var WebhookSchedule = [WebhookMaxAttempts]time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute}

// ErrTypeWebhookFailed is the type of a delivery failure that is not retried
// (4xx answer, refused URL, missing secret, last attempt) in
// ActivityDeliverWebhook.
const ErrTypeWebhookFailed = "WebhookFailed"

// ErrTypeWebhookNotSent is the type of an ActivitySendWebhook error raised
// before anything was sent (the event could not be read): the attempt was
// not made, so WebhookWorkflow makes it again however long that takes,
// without using up one of the receiver's attempts.
const ErrTypeWebhookNotSent = "WebhookNotSent"

// ErrTypeMailDeferred marks an e-mail the mail server refused for now
// (SMTP 4xx: greylisting, a full queue, a rate limit): retried, and logged
// as the expected retry it is.
const ErrTypeMailDeferred = "MailDeferred"

// ErrTypeChatNotSent marks a chat message Telegram did not take yet (a 5xx,
// a network failure, a token Telegram does not know): retried. Telegram's
// 429 is ErrTypeRateLimited, retried after the wait Telegram asks for.
const ErrTypeChatNotSent = "ChatNotSent"

// ErrTypeChatOff marks a worker without a Telegram bot: the poller ends.
const ErrTypeChatOff = "ChatOff"

// Types of the retryable activity failures that are part of normal
// operation: a legacy webhook attempt to retry at its next slot, a chain
// provider's or Telegram's rate limit (retried after a back-off), and a
// payload that cannot be encoded (not retried).
const (
	ErrTypeWebhookRetry = "WebhookRetry"
	ErrTypeRateLimited  = "RateLimited"
	ErrTypeEncoding     = "Encoding"
)

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

// LoadAssignmentInput is the input of ActivityLoadAssignment.
type LoadAssignmentInput struct {
	PaymentID string
}

// LoadAssignmentResult is the network selection the payment's row holds:
// Assigned false when it holds none.
type LoadAssignmentResult struct {
	Assigned   bool
	Assignment paywatch.Assignment
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
	// PaymentID is the payment checked: of the transfers found, only those
	// that count for it (claimed for it, or claimable by it) come back.
	// Empty in inputs recorded before claims existed: then all do.
	PaymentID  string
	Network    paywatch.Network
	Token      paywatch.Token
	Address    string
	StartBlock uint64
	// Until, when set, is the end of the payment's late window: only
	// transfers in blocks mined before it are listed (by the blocks'
	// timestamps), and the check fails, to be tried again, while the
	// chain has no block at or after it. Zero: up to the head.
	Until time.Time
	// ReadFrom, when above StartBlock, is the first block read from the
	// chain: an earlier check read the blocks before it. Recorded
	// transfers are listed from StartBlock on.
	ReadFrom uint64
	// NoWait, with Until, reads the blocks after the network's scanner's
	// cursor from the chain even where a scanner at work would read them
	// (TRC20), which the check otherwise waits for: set once the workflow
	// has waited deadlineCheckPatience.
	NoWait bool
}

// FinalCheckResult lists the token's transfers to the address since
// StartBlock, as a scanner would have signalled them.
type FinalCheckResult struct {
	Head      uint64
	Transfers []paywatch.Transaction
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
	Transfers []paywatch.Transaction
	// Reason says why a found transaction has no such transfer.
	Reason string
}

// ClaimTxHashInput is the payload of ActivityClaimTxHash.
type ClaimTxHashInput struct {
	PaymentID string
	Network   paywatch.Network
	TxHash    string
	// Address, Token and Transfers are the transaction's transfers to the
	// payment's address that it is to count: they are claimed with the
	// hash, as the scanner claims what it credits, so one transfer pays
	// one payment whichever path sees it first. Empty in an activity an
	// older worker scheduled; the claim then checks the address's
	// transfers already claimed.
	Address   string                 `json:",omitempty"`
	Token     paywatch.Token         `json:",omitempty"`
	Transfers []paywatch.Transaction `json:",omitempty"`
}

// QueueWebhookInput is the payload of ActivityQueueWebhook: the event and
// the payment state it reports.
type QueueWebhookInput struct {
	EventID  string
	Sequence int
	Event    paywatch.Event
	State    paywatch.PaymentState
}

// QueueWebhookResult answers ActivityQueueWebhook.
type QueueWebhookResult struct {
	// Skipped is true when the daily quota was exhausted: never sent.
	Skipped bool
	// Chat is true when a chat message of the event was queued to be
	// sent (its project has a chat and the message is within the daily
	// chat quota): the workflow starts its ChatWorkflow.
	Chat bool `json:",omitempty"`
}

// DeliverWebhookInput is the payload of ActivityDeliverWebhook.
type DeliverWebhookInput struct {
	EventID string
}

// SendWebhookInput is the payload of ActivitySendWebhook.
type SendWebhookInput struct {
	EventID string
	// Attempt is the delivery attempt's number in the deliveries log. It
	// comes from the workflow, not from Temporal's activity attempt, so an
	// activity retried after a database error or a lost worker makes the
	// same delivery attempt again instead of using up the next one.
	Attempt int
	// Force sends the event even if it reads as delivered or failed: a
	// redelivery must not be stopped by the state an earlier run left.
	Force bool
	// Generation is the run's delivery generation (WebhookInput): an
	// event that has moved past it was redelivered, and nothing is sent.
	Generation int
}

// WebhookOutcome is how one delivery attempt ended.
type WebhookOutcome string

// The outcomes of a delivery attempt.
const (
	// WebhookOutcomeDelivered is a 2xx answer.
	WebhookOutcomeDelivered WebhookOutcome = "delivered"
	// WebhookOutcomeRetry is any answer but a 2xx or a 4xx (a 5xx, a
	// 3xx), a timeout, a network error or a private DNS answer: the next
	// attempt follows at its slot of WebhookSchedule.
	WebhookOutcomeRetry WebhookOutcome = "retry"
	// WebhookOutcomeFailed is a permanent failure: a 4xx answer, a refused
	// URL or a missing secret.
	WebhookOutcomeFailed WebhookOutcome = "failed"
	// WebhookOutcomeNoURL means the project has no webhook URL: nothing was
	// sent and the event stays pending until one is set.
	WebhookOutcomeNoURL WebhookOutcome = "no-url"
	// WebhookOutcomeDone means the event needs no delivery (already
	// delivered, failed for good, or skipped by quota): nothing was sent.
	WebhookOutcomeDone WebhookOutcome = "done"
)

// SendWebhookResult answers ActivitySendWebhook.
type SendWebhookResult struct {
	Outcome WebhookOutcome
	// StatusCode is the receiver's HTTP status, 0 if there was no answer.
	StatusCode int
	// ResponseBody is the start of the receiver's answer (at most the 256
	// characters the log keeps), or why there was none.
	ResponseBody string
}

// WebhookAttemptState is the state a delivery attempt is logged with, as
// the deliveries log shows it (operations.md §2).
type WebhookAttemptState string

// The logged states of a delivery attempt.
const (
	// WebhookAttemptDelivered is a successful attempt.
	WebhookAttemptDelivered WebhookAttemptState = "delivered"
	// WebhookAttemptRetrying is a failed attempt with another to come.
	WebhookAttemptRetrying WebhookAttemptState = "retrying"
	// WebhookAttemptFailed is the attempt after which no other follows.
	WebhookAttemptFailed WebhookAttemptState = "failed"
)

// RecordWebhookAttemptInput is the payload of ActivityRecordWebhookAttempt:
// one attempt of the deliveries log; the event takes its state.
type RecordWebhookAttemptInput struct {
	EventID      string
	Attempt      int
	StatusCode   int
	ResponseBody string
	State        WebhookAttemptState
	// Generation is the run's delivery generation (WebhookInput): the
	// attempt of a run a redelivery replaced does not set the event's
	// state.
	Generation int
}

// Activities is what the payment workflow needs from its activities;
// *activities.Activities implements it. Register takes this interface
// rather than the concrete type because package activities imports this
// package for the payload types.
type Activities interface {
	SavePaymentState(ctx context.Context, st paywatch.PaymentState) error
	SelectNetwork(ctx context.Context, in SelectNetworkInput) (paywatch.Assignment, error)
	ReleaseAddress(ctx context.Context, in ReleaseAddressInput) error
	LoadAssignment(ctx context.Context, in LoadAssignmentInput) (LoadAssignmentResult, error)
	CheckTransfers(ctx context.Context, in CheckTransfersInput) (CheckTransfersResult, error)
	FinalCheck(ctx context.Context, in FinalCheckInput) (FinalCheckResult, error)
	VerifyTxHash(ctx context.Context, in VerifyTxHashInput) (VerifyTxHashResult, error)
	ClaimTxHash(ctx context.Context, in ClaimTxHashInput) error
	QueueWebhook(ctx context.Context, in QueueWebhookInput) (QueueWebhookResult, error)
	SendWebhook(ctx context.Context, in SendWebhookInput) (SendWebhookResult, error)
	RecordWebhookAttempt(ctx context.Context, in RecordWebhookAttemptInput) error
	DeliverWebhook(ctx context.Context, in DeliverWebhookInput) error
	SendMail(ctx context.Context, in SendMailInput) error
	SendChat(ctx context.Context, in SendChatInput) error
	FailChat(ctx context.Context, in SendChatInput) error
	PollTelegram(ctx context.Context) error
}
