package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
)

// This file is the payment workflow's public contract: its name, the names
// of its signals, updates and query, and their payloads. The API, the
// scanners and the tests use these and nothing else.

// Workflow and message names, registered explicitly so that renaming a Go
// function never breaks running workflows.
const (
	// PaymentWorkflowName is the registered name of the payment workflow
	// of payments created before lean payments (Lifecycle below
	// LeanLifecycle), or with PAYWATCH_LEAN_PAYMENTS=false.
	PaymentWorkflowName = "payment"
	// LeanPaymentWorkflowName is the registered name of the same workflow
	// for lean payments (PaymentWorkflowType): a worker of a release
	// before them does not know it, so it never runs a lean payment in its
	// own shape; the task waits (its timeout, backing off) for a current
	// worker.
	LeanPaymentWorkflowName = "payment-v5"

	// SignalTransferSeen carries a paywatch.Transaction from a scanner. Safe to repeat:
	// the workflow keys transfers by (tx hash, log index).
	SignalTransferSeen = "transfer-seen"
	// SignalTransferRemoved carries a TransferRemoved: the transfer vanished in a reorg.
	SignalTransferRemoved = "transfer-removed"
	// SignalTransfersConfirmed carries a TransfersConfirmed from a scanner:
	// the blocks of transfers the payment counts reached the network's
	// confirmations (or left the chain). Safe to repeat.
	SignalTransfersConfirmed = "transfers-confirmed"

	// UpdateCancel cancels a pending payment (PATCH /v1/payments/:id).
	UpdateCancel = "cancel"
	// UpdateSelectNetwork picks the network of a network-less payment (hosted page).
	UpdateSelectNetwork = "select-network"
	// UpdateSubmitTxHash submits a transaction hash (POST /v1/payments/:id/confirm, pool + txid).
	UpdateSubmitTxHash = "submit-tx-hash"
	// UpdateRecheck asks the chain now for transfers to the payment's
	// address, as the final check does (the dashboard's "re-check chain").
	UpdateRecheck = "recheck"

	// QueryState returns the PaymentState; it never changes anything.
	QueryState = "state"
)

// PaymentWorkflowID is the workflow ID of a payment: one workflow per
// payment, so starting it twice is harmless.
func PaymentWorkflowID(paymentID string) string { return "payment/" + paymentID }

// A domain error crosses the workflows as a Temporal application error
// whose type is its paywatch.Error code (paywatch.ECONFLICT, ...) and whose
// message is the exact API message: an activity's refusal, an update's
// rejection and the API's HTTP status all read the one code.

// legacyErrorTypes are the types the same errors had before they took the
// codes' names; a failure recorded in a workflow's history then still
// reads as its code.
var legacyErrorTypes = map[string]string{
	"Conflict": paywatch.ECONFLICT,
	"Gone":     paywatch.EGONE,
	"Invalid":  paywatch.EINVALID,
	"Capacity": paywatch.ERATELIMIT,
	"NotFound": paywatch.ENOTFOUND,
}

// rejectable are the codes an update or an activity may refuse with.
var rejectable = map[string]bool{
	paywatch.EINVALID: true, paywatch.EFORBIDDEN: true, paywatch.ERATELIMIT: true,
	paywatch.ECONFLICT: true, paywatch.EGONE: true, paywatch.ENOTFOUND: true,
}

// Rejectable reports whether a paywatch.Error code is one an update or an
// activity refuses with (a non-retryable application error of that type).
func Rejectable(code string) bool { return rejectable[code] }

// ErrorCode returns the paywatch.Error code err carries as an application
// error's type (read through legacyErrorTypes), or "" when it carries none.
func ErrorCode(err error) string {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return ""
	}
	if code, ok := legacyErrorTypes[app.Type()]; ok {
		return code
	}
	if rejectable[app.Type()] {
		return app.Type()
	}
	return ""
}

// ErrorFields is the type of the single detail an update rejection carries
// when the API response has extra fields, such as submitted_tx_hash on the
// 409 of submit-tx-hash: decode it with ApplicationError.Details(&fields).
type ErrorFields = map[string]any

// TransferRemoved reports that a transfer is no longer in the canonical
// chain: its copy in block BlockNumber with hash BlockHash is gone. A
// payment that has seen the transfer mined again in another block keeps
// it. Scanners before issue 24 sent no block (BlockHash empty): such a
// removal applies to the transfer in whatever block.
type TransferRemoved struct {
	TxHash      string
	LogIndex    uint32
	BlockNumber uint64
	BlockHash   string
}

// TransfersConfirmed is the payload of SignalTransfersConfirmed: every
// transfer of the payment that one scanner poll found due, so transfers
// confirmed by the same block count together.
type TransfersConfirmed struct {
	Transfers []TransferConfirmed
}

// TransferConfirmed is one transfer of a TransfersConfirmed. At the head
// the scanner saw, the transfer's block BlockNumber has Confirmations
// confirmations and still has hash BlockHash (Canonical), or the chain has
// another block at that height (Canonical false: the transfer left the
// chain). It speaks of the transfer in that block only: a payment that has
// seen the transfer mined again in another block ignores it.
type TransferConfirmed struct {
	TxHash        string
	LogIndex      uint32
	BlockNumber   uint64
	BlockHash     string
	Confirmations int
	Canonical     bool
}

// CancelRequest is the payload of UpdateCancel.
type CancelRequest struct{}

// SelectNetworkRequest is the payload of UpdateSelectNetwork.
type SelectNetworkRequest struct {
	Network paywatch.Network
	Token   paywatch.Token
}

// RecheckRequest is the payload of UpdateRecheck.
type RecheckRequest struct{}

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
