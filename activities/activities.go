// Package activities holds the side effects of the payment workflow:
// persisting its state, assigning and releasing addresses, reading chains
// and delivering signed webhooks. Every dependency is injected through New,
// so tests run the same code against fakes or a real PostgreSQL.
package activities

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/telegram"
	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/workflows"
)

// Store is what the activities need from PostgreSQL; *store.Store
// implements it.
type Store interface {
	// SavePaymentStateResult persists the workflow's state if st.Version
	// is newer than the stored one, reporting a change of status.
	SavePaymentStateResult(ctx context.Context, st paywatch.PaymentState) (store.SavedState, error)
	// AssignAddress gives a network-less payment its deposit address on n
	// (address modes live there). Refusals are *paywatch.Error values with
	// codes EINVALID, ERATELIMIT, EFORBIDDEN or ECONFLICT and the exact API
	// message.
	AssignAddress(ctx context.Context, paymentID string, n paywatch.Network, t paywatch.Token) (paywatch.Assignment, error)
	// ReleaseAddress frees a finished payment's address or micro offset
	// according to its outcome.
	ReleaseAddress(ctx context.Context, paymentID string, outcome paywatch.Status) error
	// Assignment reads the network selection recorded on a payment; ok is
	// false when it has none.
	Assignment(ctx context.Context, paymentID string) (a paywatch.Assignment, ok bool, err error)
	// ClaimTxHash claims a transaction hash, and its transfers ts, for one
	// payment; a hash or transfer another payment holds gives ECONFLICT.
	ClaimTxHash(ctx context.Context, n paywatch.Network, txHash, paymentID string, ts []paywatch.Transfer) error
	// WebhookPaymentInfo reads the merchant fields of a webhook payload.
	WebhookPaymentInfo(ctx context.Context, paymentID string) (store.WebhookPaymentInfo, error)
	// QueueWebhookEvent records an event and applies the daily quota.
	QueueWebhookEvent(ctx context.Context, ev store.WebhookEvent) (store.WebhookState, error)
	// WebhookDelivery reads an event with the project's current URL and secret.
	WebhookDelivery(ctx context.Context, eventID string) (store.WebhookDelivery, error)
	// RecordWebhookAttempt logs one delivery attempt.
	RecordWebhookAttempt(ctx context.Context, a store.WebhookAttempt) error
	// ClaimTransfers claims transfers for the payments they count for (one
	// payment per transfer) and returns those that count for one, each
	// under the key it is recorded with and with its payment.
	ClaimTransfers(ctx context.Context, n paywatch.Network, ts []paywatch.Transfer) ([]store.ClaimedTransfer, error)
	// IdentifyTransfers gives transfers read from a chain the keys they are
	// recorded under, recording those never seen, so that every path hands
	// a payment one transfer under one key.
	IdentifyTransfers(ctx context.Context, n paywatch.Network, ts []paywatch.Transfer) ([]paywatch.Transfer, error)
	// RecordedTransfersTo lists the scanner's recorded transfers of token to
	// address from fromBlock up to the network's cursor, with the cursor.
	RecordedTransfersTo(ctx context.Context, n paywatch.Network, token paywatch.Token, address string, fromBlock uint64) (store.RecordedTransfers, error)
	// PaymentByID loads a payment; the final check reads its assignment
	// when its start block is unknown.
	PaymentByID(ctx context.Context, id string) (*store.Payment, error)
	// MailByID, MarkMailSent and RecordMailFailure keep the outgoing
	// e-mail (SendMail).
	MailByID(ctx context.Context, id string) (store.Mail, bool, error)
	MarkMailSent(ctx context.Context, id string, forget bool) error
	RecordMailFailure(ctx context.Context, id, reason string) error
	// QueueChatMessage, ChatMessageByID, RecordChatAttempt, MarkChatSent
	// and MarkChatFailed keep the chat messages (SendChat).
	QueueChatMessage(ctx context.Context, eventID string, text func(store.ChatNotice) string) (store.ChatState, bool, error)
	ChatMessageByID(ctx context.Context, eventID string) (store.ChatMessage, error)
	RecordChatAttempt(ctx context.Context, eventID, errText string) error
	MarkChatSent(ctx context.Context, eventID string, telegramID int64) error
	MarkChatFailed(ctx context.Context, eventID, reason string) error
	MarkChatStarted(ctx context.Context, eventID string) error
	// TelegramOffset, SetTelegramOffset, LinkTelegramChat and
	// UnlinkTelegramChat keep the bot's updates (PollTelegram).
	TelegramOffset(ctx context.Context) (int64, error)
	SetTelegramOffset(ctx context.Context, offset int64) error
	LinkTelegramChat(ctx context.Context, code, chatID string) (string, bool, error)
	UnlinkTelegramChat(ctx context.Context, chatID string) ([]string, error)
}

// Chains gives the chain client of a network; the scanners' registry
// implements it.
type Chains interface {
	Client(n paywatch.Network) (chains.Client, error)
}

// Deps are the Activities' dependencies. Store and Chains are required;
// the rest have defaults.
type Deps struct {
	Store  Store
	Chains Chains
	// HTTPClient sends webhooks; nil means webhooks.NewClientWithResolver(
	// WebhookTimeout, AllowPrivate, Resolver). Tests inject one with a short
	// timeout.
	HTTPClient *http.Client
	// Resolver looks up webhook hosts for the check before every attempt
	// (and at dial time, for the default HTTPClient); nil means the
	// system's. Tests point it at a scripted DNS server.
	Resolver *net.Resolver
	// Clock is the time source of signatures and retry delays; nil means
	// time.Now.
	Clock func() time.Time
	// AllowPrivate lets webhook URLs point at private and reserved
	// addresses (PAYWATCH_WEBHOOK_ALLOW_PRIVATE), for development only.
	AllowPrivate bool
	// RequireHTTPS refuses plain http:// webhook URLs before every attempt
	// (outside paywatch dev, unless PAYWATCH_WEBHOOK_ALLOW_HTTP).
	RequireHTTPS bool
	// Logger logs outside Temporal's activity logger; nil means slog.Default().
	Logger *slog.Logger
	// Mailer sends e-mail; nil files every message in the dev outbox.
	Mailer Mailer
	// Telegram sends chat notifications (PAYWATCH_TELEGRAM_BOT_TOKEN);
	// nil turns them off.
	Telegram *telegram.Client
	// BlockTimes overrides a network's block time for confirmation waits:
	// a devnet chain makes blocks every PAYWATCH_DEVNET_BLOCK_INTERVAL, not
	// at the mainnet pace of paywatch.NetworkInfo.BlockTime.
	BlockTimes map[paywatch.Network]time.Duration
	// Metrics counts webhook attempts and status changes for the
	// service's /metrics; nil counts nothing.
	Metrics Metrics
}

// Metrics is told what the activities did, for the service's metrics
// (package metrics implements it).
type Metrics interface {
	// WebhookAttempt counts one delivery attempt that was made (went to
	// the network: webhooks.Result.Sent), by how it ended.
	WebhookAttempt(outcome webhooks.Outcome)
	// PaymentEntered counts a payment moving into status s; each move is
	// counted once, however often its save is retried.
	PaymentEntered(s paywatch.Status)
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) WebhookAttempt(webhooks.Outcome) {}
func (noMetrics) PaymentEntered(paywatch.Status)  {}

// Activities implements workflows.Activities; register it with
// workflows.Register.
type Activities struct {
	store      Store
	chains     Chains
	sender     *webhooks.Sender
	mailer     Mailer
	telegram   *telegram.Client
	now        func() time.Time
	log        *slog.Logger
	blockTimes map[paywatch.Network]time.Duration
	metrics    Metrics
}

var _ workflows.Activities = (*Activities)(nil)

// New returns Activities over deps.
func New(deps Deps) *Activities {
	a := &Activities{
		store:      deps.Store,
		chains:     deps.Chains,
		now:        deps.Clock,
		log:        deps.Logger,
		blockTimes: deps.BlockTimes,
		mailer:     deps.Mailer,
		telegram:   deps.Telegram,
		metrics:    deps.Metrics,
	}
	if a.metrics == nil {
		a.metrics = noMetrics{}
	}
	if a.now == nil {
		a.now = time.Now
	}
	client := deps.HTTPClient
	if client == nil {
		client = webhooks.NewClientWithResolver(workflows.WebhookTimeout, deps.AllowPrivate, deps.Resolver)
	}
	a.sender = &webhooks.Sender{Client: client, Resolver: deps.Resolver, AllowPrivate: deps.AllowPrivate, RequireHTTPS: deps.RequireHTTPS, Now: a.now}
	if a.log == nil {
		a.log = slog.Default()
	}
	return a
}
