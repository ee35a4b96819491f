package payments

import "github.com/paywatch/paywatch/store"

// The records the use cases take and answer with, named here so that the
// edges (api, the dashboard, the hosted pages) talk to the use cases alone
// and never import store. They are aliases, not copies: one definition,
// the store's rows, and no conversion on the way.

// Store is the PostgreSQL store the use cases run over (Deps.Store); the
// edges hand it on and call none of its methods.
type Store = store.Store

// Projects, their settings, keys, wallets and usage.
type (
	Project         = store.Project
	NewProject      = store.NewProject
	ProjectSettings = store.ProjectSettings
	Credentials     = store.Credentials
	Wallet          = store.Wallet
	WalletUpdate    = store.WalletUpdate
	StaticAddress   = store.StaticAddress
	Usage           = store.Usage
)

// Payments, their history and the filters that list them.
type (
	Payment         = store.Payment
	NewPayment      = store.NewPayment
	ListFilter      = store.ListFilter
	StatusChange    = store.StatusChange
	PaymentPageInfo = store.PaymentPageInfo
)

// Payment links and what their buyers give.
type (
	PaymentLink    = store.PaymentLink
	NewPaymentLink = store.NewPaymentLink
	LinkSummary    = store.LinkSummary
	LinkPurchase   = store.LinkPurchase
	Buyer          = store.Buyer
)

// Webhook events, their deliveries, and chat messages.
type (
	Event          = store.Event
	EventFilter    = store.EventFilter
	WebhookState   = store.WebhookState
	Delivery       = store.Delivery
	DeliveryFilter = store.DeliveryFilter
	ChatMessage    = store.ChatMessage
	Mail           = store.Mail
)

// ValidWebhookState reports whether st is one of the delivery states.
func ValidWebhookState(st WebhookState) bool { return store.ValidWebhookState(st) }

// Transfers to a project's addresses.
type (
	ProjectTransfer   = store.ProjectTransfer
	TransferFilter    = store.TransferFilter
	TransferState     = store.TransferState
	TransferID        = store.TransferID
	TransferMark      = store.TransferMark
	TransferEvent     = store.TransferEvent
	TransferEventKind = store.TransferEventKind
)

// The steps of a transfer's timeline (store.TransferEventKind).
const (
	TransferEventSeen    = store.TransferEventSeen
	TransferEventTold    = store.TransferEventTold
	TransferEventHandled = store.TransferEventHandled
)

// The transfer states (store.TransferState).
const (
	TransferMatched      = store.TransferMatched
	TransferPending      = store.TransferPending
	TransferUnmatched    = store.TransferUnmatched
	TransferBelowMinimum = store.TransferBelowMinimum
)

// Why a transfer is unmatched (ProjectTransfer.Reason).
const (
	ReasonNoPayment      = store.ReasonNoPayment
	ReasonOtherToken     = store.ReasonOtherToken
	ReasonOtherNetwork   = store.ReasonOtherNetwork
	ReasonNoMemo         = store.ReasonNoMemo
	ReasonAfterPaid      = store.ReasonAfterPaid
	ReasonAfterCancelled = store.ReasonAfterCancelled
	ReasonAfterExpired   = store.ReasonAfterExpired
	ReasonNotTaken       = store.ReasonNotTaken
)

// API calls and the counters of the rate limits.
type (
	APICall     = store.APICall
	CountedCall = store.CountedCall
	RateWindow  = store.RateWindow
)
