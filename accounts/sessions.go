package accounts

import (
	"context"
	"crypto/subtle"
	"strconv"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// sessionEnded is the answer for a session that is unknown or expired.
func sessionEnded() error {
	return paywatch.Errorf(paywatch.EUNAUTHORIZED, "%s", paywatch.MsgSessionEnded)
}

// idKey is an account or project id in a rate-limit key.
func idKey(id int64) string { return strconv.FormatInt(id, 10) }

// Authenticate returns the session of a cookie token.
//
// An unknown token, or a session past its 12 hours or idle for 2, is
// EUNAUTHORIZED MsgSessionEnded; a session of an account suspended or
// closed since is EFORBIDDEN with interface.md's texts, for the dashboard
// to show. The account is read fresh, and the session's last use is
// written at most once a minute.
func (s *Service) Authenticate(ctx context.Context, token string) (*Session, error) {
	return s.authenticate(ctx, token, touchEvery)
}

// AuthenticatePoll returns the session of a cookie token as Authenticate
// does, for a request a page's script makes by itself (the live status of
// a payment or of the payment list): it is not the user's use of the
// session, so it leaves the last use alone, and a page left open does not
// keep a session alive past its 2 idle hours.
func (s *Service) AuthenticatePoll(ctx context.Context, token string) (*Session, error) {
	return s.authenticate(ctx, token, 0)
}

// authenticate loads a session, writing its last use at most once per
// touch (0: never).
func (s *Service) authenticate(ctx context.Context, token string, touch time.Duration) (*Session, error) {
	if token == "" {
		return nil, sessionEnded()
	}
	rec, err := s.deps.Store.SessionByHash(ctx, hashToken(token), SessionIdle, touch)
	if err != nil {
		return nil, err
	}
	if err := store.InactiveError(rec.Auth.Account); err != nil {
		return nil, err
	}
	return &Session{
		Account:          rec.Auth.Account,
		CSRF:             rec.CSRF,
		TwoFactorEnabled: rec.Auth.TOTPSecret != "",
		ProtectionKeySet: rec.Auth.ProtectionKeyHash != "",
		OwnsProjects:     rec.Auth.OwnsProjects,
		ExpiresAt:        rec.ExpiresAt,
	}, nil
}

// TwoFactorRequired tells whether the session's owner must turn two
// factors on before using the owner pages: the operator asked for it
// (Deps.RequireTwoFactor), the account owns a project and has no TOTP yet.
// The dashboard then shows only the two-factor set-up (and sign-out);
// viewers and accounts without projects are not held up.
func (s *Service) TwoFactorRequired(sess *Session) bool {
	return s.deps.RequireTwoFactor && sess != nil && sess.OwnsProjects && !sess.TwoFactorEnabled
}

// SignOut ends one session.
func (s *Service) SignOut(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	return s.deps.Store.DeleteSession(ctx, hashToken(token))
}

// SignOutEverywhere ends every session of an account.
func (s *Service) SignOutEverywhere(ctx context.Context, accountID int64) error {
	return s.deps.Store.DeleteSessions(ctx, accountID)
}

// CheckCSRF tells whether a form's anti-forgery token is the session's,
// comparing in constant time.
func (s *Session) CheckCSRF(token string) bool {
	return s != nil && s.CSRF != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}
