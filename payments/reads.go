package payments

import (
	"context"
	"time"

	"github.com/paywatch/paywatch"
)

// The plain reads and counters the edges need around the use cases: each
// asks the store one question, so that the edges never call it
// themselves and any rule that grows here has one place to live.

// ProjectBySlug returns a project with its owner; ENOTFOUND when there is
// none.
func (s *Service) ProjectBySlug(ctx context.Context, slug string) (*Project, error) {
	return s.store.ProjectBySlug(ctx, slug)
}

// ListProjects returns every project, oldest first (the operator's list).
func (s *Service) ListProjects(ctx context.Context) ([]*Project, error) {
	return s.store.ListProjects(ctx)
}

// PaymentByID returns a payment of any project, for its hosted page.
func (s *Service) PaymentByID(ctx context.Context, id string) (*Payment, error) {
	return s.store.PaymentByID(ctx, id)
}

// PaymentPageInfo returns the shop and item of payment paymentID for its
// hosted page (ENOTFOUND for an unknown id).
func (s *Service) PaymentPageInfo(ctx context.Context, paymentID string) (PaymentPageInfo, error) {
	return s.store.PaymentPageInfo(ctx, paymentID)
}

// PaymentLinkBySlug returns a link with its project; a slug that does not
// exist, or cannot, is ENOTFOUND.
func (s *Service) PaymentLinkBySlug(ctx context.Context, slug string) (*PaymentLink, error) {
	return s.store.PaymentLinkBySlug(ctx, slug)
}

// PaymentLinkToken returns the token a link payment is restricted to: the
// token of the link it was made from, or "" when it has none (or the
// payment is not a link payment).
func (s *Service) PaymentLinkToken(ctx context.Context, paymentID string) (paywatch.Token, error) {
	return s.store.PaymentLinkToken(ctx, paymentID)
}

// WalletOf returns a project's wallet, or nil when it has none.
func (s *Service) WalletOf(ctx context.Context, projectID int64) (*Wallet, error) {
	return s.store.WalletOf(ctx, projectID)
}

// AvailableNetworks returns the networks a project with address mode mode
// and wallet w can take payments on, in API order.
func (s *Service) AvailableNetworks(mode paywatch.AddressMode, w *Wallet) []paywatch.NetworkInfo {
	return s.store.AvailableNetworks(mode, w)
}

// Offered reports whether the service offers network n.
func (s *Service) Offered(n paywatch.Network) bool {
	return s.store.Offered(n)
}

// StaticAddresses lists the static addresses of a project's wallet, by
// network and then in the order they were added.
func (s *Service) StaticAddresses(ctx context.Context, projectID int64) ([]StaticAddress, error) {
	return s.store.StaticAddresses(ctx, projectID)
}

// UnusedRun returns, per family, the longest run of consecutive derivation
// indices of wallet w that never received funds (the operator watches it
// against wallet software's gap limit).
func (s *Service) UnusedRun(ctx context.Context, w *Wallet) (map[paywatch.Family]int, error) {
	return s.store.UnusedRun(ctx, w)
}

// Deliveries returns a project's webhook delivery attempts that f
// selects, newest first.
func (s *Service) Deliveries(ctx context.Context, projectID int64, f DeliveryFilter) ([]Delivery, error) {
	return s.store.ListDeliveries(ctx, projectID, f)
}

// ChatMessages lists a project's payment's chat messages, oldest first.
func (s *Service) ChatMessages(ctx context.Context, projectID int64, paymentID string) ([]ChatMessage, error) {
	return s.store.ChatMessagesOf(ctx, projectID, paymentID)
}

// Outbox returns the newest queued e-mails, up to limit (the dev outbox).
func (s *Service) Outbox(ctx context.Context, limit int) ([]Mail, error) {
	return s.store.ListMail(ctx, limit)
}

// AuthenticateCall authenticates an API key and counts the call against
// its burst window and its owner's day, in one statement
// (store.AuthenticateCall).
func (s *Service) AuthenticateCall(ctx context.Context, c APICall) (CountedCall, error) {
	return s.store.AuthenticateCall(ctx, c)
}

// HitRate counts one request under key in the fixed window of length
// window that holds the store's current time, and returns the count so
// far; every replica shares the counter.
func (s *Service) HitRate(ctx context.Context, key string, window time.Duration) (RateWindow, error) {
	return s.store.HitRate(ctx, key, window)
}

// HitSliding counts one request under key in a sliding window of length
// window and returns the estimated hits of the last window
// (store.HitSliding).
func (s *Service) HitSliding(ctx context.Context, key string, window time.Duration) (RateWindow, error) {
	return s.store.HitSliding(ctx, key, window)
}
