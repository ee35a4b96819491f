package workflows

import (
	"time"

	"github.com/paywatch/paywatch"
)

// This file is the payment workflow's public contract: its name, the names
// of its signals, updates and query, and their payloads. The API, the
// scanners and the tests use these and nothing else.

// Workflow and message names, registered explicitly so that renaming a Go
// function never breaks running workflows.
const (
	// PaymentWorkflowName is the registered name of the payment workflow.
	PaymentWorkflowName = "payment"

	// SignalTransferSeen carries a TransferSeen from a scanner. Safe to repeat:
	// the workflow keys transfers by (tx hash, log index).
	SignalTransferSeen = "transfer-seen"
	// SignalTransferRemoved carries a TransferRemoved: the transfer vanished in a reorg.
	SignalTransferRemoved = "transfer-removed"

	// UpdateCancel cancels a pending payment (PATCH /v1/payments/:id).
	UpdateCancel = "cancel"
	// UpdateSelectNetwork picks the network of a network-less payment (hosted page).
	UpdateSelectNetwork = "select-network"
	// UpdateSubmitTxHash submits a transaction hash (POST /v1/payments/:id/confirm, pool + txid).
	UpdateSubmitTxHash = "submit-tx-hash"

	// QueryState returns the PaymentState; it never changes anything.
	QueryState = "state"
)

// PaymentWorkflowID is the workflow ID of a payment: one workflow per
// payment, so starting it twice is harmless.
func PaymentWorkflowID(paymentID string) string { return "payment/" + paymentID }

// Error types of update rejections (temporal.ApplicationError.Type). The
// message of such an error is the exact API message of interface.md; the API
// maps the type to the HTTP status.
const (
	// ErrTypeConflict maps to 409.
	ErrTypeConflict = "Conflict"
	// ErrTypeGone maps to 410 (payment has expired).
	ErrTypeGone = "Gone"
	// ErrTypeInvalid maps to 400.
	ErrTypeInvalid = "Invalid"
	// ErrTypeCapacity maps to 429 (no micro offset left).
	ErrTypeCapacity = "Capacity"
	// ErrTypeNotFound maps to 404 (the payment row is gone).
	ErrTypeNotFound = "NotFound"
)

// ErrorFields is the type of the single detail an update rejection carries
// when the API response has extra fields, such as submitted_tx_hash on the
// 409 of submit-tx-hash: decode it with ApplicationError.Details(&fields).
type ErrorFields = map[string]any

// PaymentInput starts a payment workflow. Everything the workflow needs for
// its whole life is here, so it reads no database row to decide anything.
type PaymentInput struct {
	PaymentID    string
	ProjectID    int64
	ProjectSlug  string
	Mode         paywatch.AddressMode
	PoolMatching paywatch.PoolMatching // pool mode only

	// Network, Token and Address are empty until a network is selected.
	Network paywatch.Network
	Token   paywatch.Token
	Address string
	// StartBlock is the chain head when the address was assigned: the final
	// on-chain check and txid verification look no earlier.
	StartBlock uint64

	// Amount is the expected amount (with the micro offset in pool +
	// micro_amount mode), at the token's decimals once a network is set.
	Amount paywatch.Amount
	// OriginalAmount is the requested base amount in pool + micro_amount mode.
	OriginalAmount *paywatch.Amount
	// DustMinimum is the project's minAmount; nil means the global 0.10.
	DustMinimum *paywatch.Amount

	ExternalRef     string
	ExternalOrderID *string

	CreatedAt         time.Time
	ExpiresAt         time.Time
	AddressAssignedAt time.Time // zero until a network is selected

	// Carried across continue-as-new; empty on the first run.
	Carry *PaymentState
}

// TransferSeen is one token transfer to the payment's address, as a scanner
// (or a txid verification) saw it.
type TransferSeen struct {
	TxHash      string
	LogIndex    uint32
	BlockNumber uint64
	BlockHash   string
	From        string
	Amount      paywatch.Amount // at the token's decimals
}

// TransferRemoved reports that a transfer is no longer in the canonical chain.
type TransferRemoved struct {
	TxHash   string
	LogIndex uint32
}

// CancelRequest is the payload of UpdateCancel.
type CancelRequest struct{}

// SelectNetworkRequest is the payload of UpdateSelectNetwork.
type SelectNetworkRequest struct {
	Network paywatch.Network
	Token   paywatch.Token
}

// Assignment is the deposit address given to a payment, with the amount the
// customer must send on that network.
type Assignment struct {
	Network        paywatch.Network
	Token          paywatch.Token
	Address        string
	Amount         paywatch.Amount  // expected, at the token's decimals (with micro offset)
	OriginalAmount *paywatch.Amount // pool + micro_amount only
	StartBlock     uint64
	AssignedAt     time.Time
}

// SubmitTxHashRequest is the payload of UpdateSubmitTxHash; TxHash is normalised.
type SubmitTxHashRequest struct {
	TxHash string
}

// SubmitTxHashResult answers UpdateSubmitTxHash: verified at once (the
// transfer is on chain and counts), or recorded for a later re-check.
type SubmitTxHashResult struct {
	Verified       bool
	Status         paywatch.Status
	AmountReceived *paywatch.Amount
	Message        string
}

// Transaction is one counted transfer of a payment, as the API shows it.
type Transaction struct {
	TxHash        string
	LogIndex      uint32
	BlockNumber   uint64
	BlockHash     string
	From          string
	Amount        paywatch.Amount
	Confirmations int
	Confirmed     bool
}

// PaymentState is the workflow's view of a payment: the query result, what
// activities persist, and what continue-as-new carries.
type PaymentState struct {
	PaymentID      string
	Status         paywatch.Status
	Network        paywatch.Network
	Token          paywatch.Token
	Address        string
	Amount         paywatch.Amount
	OriginalAmount *paywatch.Amount
	PaidAmount     paywatch.Amount // confirmed funds only
	Transactions   []Transaction
	TxHash         string
	PaidAt         *time.Time
	LatePayment    bool
	ExpiresAt      time.Time
	// SubmittedHashes are pool + txid hashes submitted but not yet verified.
	SubmittedHashes []string
	// ClaimedHashes are the pool + txid hashes verified and claimed for this
	// payment. A transfer of one of them that a scanner signals counts, so
	// one that a reorg dropped and that was mined again still counts.
	ClaimedHashes []string
	// Version increases with every change; saves with an older version are ignored.
	Version   int64
	UpdatedAt time.Time

	// StartBlock and AddressAssignedAt come from the Assignment; zero until
	// a network is selected.
	StartBlock        uint64
	AddressAssignedAt *time.Time

	// Bookkeeping carried across continue-as-new; the API can ignore it.

	// WebhookSequence is the sequence number of the last webhook queued.
	WebhookSequence int
	// PartialNotified is the confirmed amount the last payment.partial
	// reported; a new one is sent only for a larger amount.
	PartialNotified *paywatch.Amount
	// DeadlineChecked is set once the on-chain check after the deadline ran.
	DeadlineChecked bool
}

// AwaitingNetwork reports whether the payment still waits for a network.
func (s PaymentState) AwaitingNetwork() bool { return s.Network == "" }
