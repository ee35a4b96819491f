// Package accounts holds the use cases of a merchant's identity in the
// dashboard: registration with a confirmed address, sign-in with a password
// and an optional second factor (TOTP or a one-time recovery code),
// server-side sessions, password reset, the operator-created account's
// first password, viewer invitations and the protection key. Like payments,
// it is an application layer: the dashboard decodes a form, calls it, and
// shows its answer; no rule lives in the pages. Its state is in PostgreSQL
// through store, and every e-mail it sends is queued in the transaction that
// makes the token the e-mail carries, so a crash loses no mail.
package accounts

import (
	"context"
	"log/slog"
	"time"

	"github.com/paywatch/paywatch/store"
)

// Deps are the collaborators of the account use cases.
type Deps struct {
	Store *store.Store
	// StartMail starts the delivery of a message already queued in the
	// store (payments.Service.StartMail); nil leaves it to the reconciler.
	StartMail func(ctx context.Context, id string)
	// BaseURL is PAYWATCH_BASE_URL; e-mailed links point under
	// BaseURL + "/dashboard".
	BaseURL string
	// RequireTwoFactor makes owners enable two factors before they can use
	// the owner pages (the operator's choice, PAYWATCH_REQUIRE_2FA).
	RequireTwoFactor bool
	// Logger receives authentication failures with the client IP, never a
	// password, code or token.
	Logger *slog.Logger
	// Now is the clock of TOTP codes; nil means time.Now. Expiries of
	// sessions, links and rate-limit windows follow the store's clock
	// (store.WithClock), so tests set both.
	Now func() time.Time
}

// Service runs the account use cases. It is safe for concurrent use.
type Service struct {
	deps Deps
}

// New returns the account use cases over deps.
func New(deps Deps) *Service {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Service{deps: deps}
}

// Session is a signed-in browser: a server-side row found by the hash of the
// cookie's token.
type Session struct {
	// Token is the cookie value; set only when the session is created.
	Token string
	// Account is the signed-in account, read fresh on every request.
	Account *store.Account
	// CSRF is the session's anti-forgery token, embedded in every form.
	CSRF string
	// TwoFactorEnabled tells whether the account has TOTP on.
	TwoFactorEnabled bool
	// ProtectionKeySet tells whether the account has a protection key.
	ProtectionKeySet bool
	// OwnsProjects tells whether the account owns any project; see
	// TwoFactorRequired.
	OwnsProjects bool
	// ExpiresAt is the absolute expiry (12 hours after sign-in), for the
	// cookie; a session idle for 2 hours ends sooner.
	ExpiresAt time.Time
}

// SignInResult is the outcome of a correct password: either a session, or,
// when the account has two factors on, a pending sign-in that SecondFactor
// completes.
type SignInResult struct {
	Session *Session
	// Pending is the token of the pending second step (its own short-lived
	// cookie); empty when Session is set.
	Pending string
}

// Role is what an account may do in a project.
type Role string

// The roles of operations.md §6.
const (
	RoleNone   Role = ""
	RoleOwner  Role = "owner"
	RoleViewer Role = "viewer"
)

// ProjectRole is a project an account can open, with its role there.
type ProjectRole struct {
	Project *store.Project
	Role    Role
}

// Viewer is an account invited to a project, or an invitation still open.
type Viewer struct {
	Email     string
	Accepted  bool
	CreatedAt time.Time
}
