package paywatch

import "time"

// The payment's own vocabulary, shared by the workflow that runs a payment,
// the store that persists it and the edges that show it: what starts a
// payment, the address it is given, the transfers it counted and its state.

// PaymentInput starts a payment workflow. Everything the workflow needs for
// its whole life is here, so it reads no database row to decide anything.
type PaymentInput struct {
	PaymentID    string
	ProjectID    int64
	ProjectSlug  string
	Mode         AddressMode
	PoolMatching PoolMatching // pool mode only

	// Network, Token and Address are empty until a network is selected.
	Network Network
	Token   Token
	Address string
	// StartBlock is the chain head when the address was assigned: the final
	// on-chain check and txid verification look no earlier.
	StartBlock uint64

	// Amount is the expected amount (with the micro offset in pool +
	// micro_amount mode), at the token's decimals once a network is set.
	Amount Amount
	// OriginalAmount is the requested base amount in pool + micro_amount mode.
	OriginalAmount *Amount
	// DustMinimum is the project's minAmount; nil means the global 0.10.
	DustMinimum *Amount

	ExternalRef     string
	ExternalOrderID *string
	// SearchRefs are what the workflow's ExternalRef and ExternalOrderId
	// search attributes show: keyed hashes of the two, or the values
	// themselves where the operator opted in. Nil on payments started
	// before (issue 42), whose attributes show the values.
	SearchRefs *SearchRefs

	CreatedAt         time.Time
	ExpiresAt         time.Time
	AddressAssignedAt time.Time // zero until a network is selected

	// Lifecycle is the shape of history the run takes, fixed when the
	// payment is created (workflows.LeanLifecycle and later) and kept across
	// continue-as-new; 0 on payments started before issue 43, whose runs
	// find their shape from the version markers in their history.
	Lifecycle int

	// Carried across continue-as-new; empty on the first run.
	Carry *PaymentState
}

// SearchRefs are the values a payment's workflow shows in its ExternalRef
// and ExternalOrderId search attributes, which Temporal indexes in clear.
type SearchRefs struct {
	ExternalRef     string
	ExternalOrderID string
}

// Assignment is the deposit address given to a payment, with the amount the
// customer must send on that network.
type Assignment struct {
	Network        Network
	Token          Token
	Address        string
	Amount         Amount  // expected, at the token's decimals (with micro offset)
	OriginalAmount *Amount // pool + micro_amount only
	StartBlock     uint64
	AssignedAt     time.Time
	// Memo tells a memo payment apart on its shared address (SOLANA: a
	// Solana Pay reference); "" for the others.
	Memo string
}

// Transaction is one counted transfer of a payment, as the API shows it.
type Transaction struct {
	TxHash        string
	LogIndex      uint32
	BlockNumber   uint64
	BlockHash     string
	From          string
	Amount        Amount
	Confirmations int
	Confirmed     bool
}

// PaymentState is the workflow's view of a payment: the query result, what
// activities persist, and what continue-as-new carries.
type PaymentState struct {
	PaymentID      string
	Status         Status
	Network        Network
	Token          Token
	Address        string
	Amount         Amount
	OriginalAmount *Amount
	PaidAmount     Amount // confirmed funds only
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
	PartialNotified *Amount
	// DeadlineChecked is set once the on-chain check after the deadline ran.
	DeadlineChecked bool
	// CheckFailingSince is when the on-chain check a deadline waits for
	// first failed to get an answer, nil while checks answer: the patience
	// with an unreachable chain counts from there, not from the deadline,
	// so an outage that began before the deadline never shortens it.
	CheckFailingSince *time.Time
	// LateClosed is set once the late window is over: its end passed, and
	// transfers still confirming then had their grace and a last check.
	LateClosed bool
	// LateChecked is set once the chain was read up to the late window's
	// end (the close's check).
	LateChecked bool
	// LateByChain is set by runs that close their late window by reading
	// the chain (the workflow's lateCheckVersion): their network need not
	// stay at block pace through the window (store.Waiting).
	LateByChain bool
	// FinalHead is the head the on-chain check at the deadline read up
	// to: the late window's check reads the chain only after it.
	FinalHead uint64
}

// AwaitingNetwork reports whether the payment still waits for a network.
func (s PaymentState) AwaitingNetwork() bool { return s.Network == "" }

// Order is what a creation request, or the payment it may repeat, says of
// the order: the fields the idempotency rules compare.
type Order struct {
	ExternalRef     string
	ExternalOrderID *string
	// Networkless is a payment created without a network (the customer
	// picks it on the hosted page); Pair is then empty.
	Networkless bool
	Pair        Pair
	// Amount is the amount asked for, before any micro offset.
	Amount Amount
}

// OrderRepeatRefusal is the verdict on a creation whose external_order_id
// names an existing payment, its amount shown as shownAmount: nil when it
// is the same order (an idempotent repeat, answered with the existing
// payment), else the 409 for what differs: the customer, the network and
// token, or the amount.
func OrderRepeatRefusal(existing, requested Order, shownAmount Amount) error {
	if existing.ExternalRef != requested.ExternalRef {
		return Errorf(ECONFLICT, "%s", MsgOrderOtherRef)
	}
	samePair := existing.Networkless && requested.Networkless ||
		!existing.Networkless && !requested.Networkless && existing.Pair == requested.Pair
	if !samePair {
		return Errorf(ECONFLICT, "%s", MsgOrderOtherPair)
	}
	if existing.Amount.Cmp(requested.Amount) != 0 {
		return &Error{Code: ECONFLICT, Message: MsgDifferentAmount, Fields: map[string]any{"existing_amount": shownAmount.String()}}
	}
	return nil
}

// InProgressRefusal is the per_user and dedicated verdict on a creation
// while the customer has payment existingID in progress on the same
// network and token: nil when it is the same order (same external_order_id
// if one is given, same amount), else the 409 naming the payment in
// progress.
func InProgressRefusal(existing, requested Order, existingID string, shownAmount Amount) error {
	sameOrderID := requested.ExternalOrderID == nil ||
		(existing.ExternalOrderID != nil && *existing.ExternalOrderID == *requested.ExternalOrderID)
	if sameOrderID && existing.Amount.Cmp(requested.Amount) == 0 {
		return nil
	}
	return &Error{Code: ECONFLICT, Message: MsgInProgress, Fields: map[string]any{
		"existing_payment_id": existingID,
		"existing_amount":     shownAmount.String(),
	}}
}
