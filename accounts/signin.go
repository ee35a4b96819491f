package accounts

import (
	"context"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/store"
)

// Session lifetimes.
const (
	// SessionTTL is a session's absolute lifetime.
	SessionTTL = 12 * time.Hour
	// SessionIdle ends a session nobody used for this long.
	SessionIdle = store.SessionIdle
	// PendingTTL is how long a sign-in waits for its second factor.
	PendingTTL = 5 * time.Minute
	// touchEvery bounds how often a session's last use is written.
	touchEvery = time.Minute
)

// invalidCredentials is the one answer for a wrong address or password.
func invalidCredentials() error {
	return paywatch.Errorf(paywatch.EUNAUTHORIZED, "%s", paywatch.MsgInvalidCredentials)
}

// SignIn checks an e-mail address and password.
func (s *Service) SignIn(ctx context.Context, email, password, ip, userAgent string) (SignInResult, error) {
	email = normalEmail(email)
	if _, err := s.hit(ctx, limitSignInIP, ip); err != nil {
		s.deps.Logger.Warn("dashboard sign-in refused: too many from this IP", "email", email, "ip", ip)
		return SignInResult{}, err
	}
	if _, err := s.hit(ctx, limitSignInEmail, email); err != nil {
		s.deps.Logger.Warn("dashboard sign-in refused: too many for this address", "email", email, "ip", ip)
		return SignInResult{}, err
	}
	auth, err := s.deps.Store.AccountAuthByEmail(ctx, email)
	if paywatch.ErrorCode(err) == paywatch.ENOTFOUND {
		matchSecret(password, "")
		s.deps.Logger.Warn("dashboard sign-in failed: unknown address", "email", email, "ip", ip)
		return SignInResult{}, invalidCredentials()
	}
	if err != nil {
		return SignInResult{}, err
	}
	if !matchSecret(password, auth.PasswordHash) {
		reason := "dashboard sign-in failed: wrong password"
		if auth.PasswordHash == "" {
			reason = "dashboard sign-in failed: no password set yet"
		}
		s.deps.Logger.Warn(reason, "email", email, "ip", ip)
		return SignInResult{}, invalidCredentials()
	}
	if err := store.InactiveError(auth.Account); err != nil {
		s.deps.Logger.Warn("dashboard sign-in refused: account "+string(auth.Account.Status), "email", email, "ip", ip)
		return SignInResult{}, err
	}
	if auth.TOTPSecret != "" {
		pending, hash := newToken()
		if _, err := s.deps.Store.CreateSession(ctx, store.NewSession{
			TokenHash: hash, AccountID: auth.Account.ID, CSRF: randomString(), Pending: true,
			TTL: PendingTTL, IP: ip, UserAgent: storable(userAgent, 300),
		}); err != nil {
			return SignInResult{}, err
		}
		return SignInResult{Pending: pending}, nil
	}
	sess, err := s.newSession(ctx, auth, ip, userAgent)
	if err != nil {
		return SignInResult{}, err
	}
	return SignInResult{Session: sess}, nil
}

// newSession stores a new session for auth's account: every sign-in gets
// a new token, so a token planted before sign-in never becomes valid.
func (s *Service) newSession(ctx context.Context, auth *store.AccountAuth, ip, userAgent string) (*Session, error) {
	sess, ns := s.sessionFor(auth, ip, userAgent)
	expires, err := s.deps.Store.CreateSession(ctx, ns)
	if err != nil {
		return nil, err
	}
	sess.ExpiresAt = expires
	// The account's language is its browser's at its latest sign-in:
	// mail to it (a reset, a security alert) speaks it, whoever asks.
	if l := locale.FromContext(ctx); string(l) != auth.Account.Locale {
		if err := s.deps.Store.SetAccountLocale(ctx, auth.Account.ID, string(l)); err != nil {
			s.deps.Logger.Warn("account language not recorded", "accountId", auth.Account.ID, "error", err)
		}
	}
	return sess, nil
}

// sessionFor makes a new session of auth's account and the row to store.
func (s *Service) sessionFor(auth *store.AccountAuth, ip, userAgent string) (*Session, store.NewSession) {
	userAgent = storable(userAgent, 300)
	token, hash := newToken()
	sess := &Session{
		Token:            token,
		Account:          auth.Account,
		CSRF:             randomString(),
		TwoFactorEnabled: auth.TOTPSecret != "",
		ProtectionKeySet: auth.ProtectionKeyHash != "",
		OwnsProjects:     auth.OwnsProjects,
	}
	return sess, store.NewSession{
		TokenHash: hash, AccountID: auth.Account.ID, CSRF: sess.CSRF,
		TTL: SessionTTL, IP: ip, UserAgent: userAgent,
	}
}

// SecondFactor completes a pending sign-in with a TOTP code or a recovery
// code, and returns a new session.
func (s *Service) SecondFactor(ctx context.Context, pending, code, ip, userAgent string) (*Session, error) {
	if pending == "" {
		return nil, sessionEnded()
	}
	pendingHash := hashToken(pending)
	accountID, err := s.deps.Store.PendingSession(ctx, pendingHash)
	if err != nil {
		return nil, err
	}
	if _, err := s.hit(ctx, limitTwoFactor, idKey(accountID)); err != nil {
		s.deps.Logger.Warn("dashboard second factor refused: too many codes", "accountId", accountID, "ip", ip)
		return nil, err
	}
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil {
		return nil, err
	}
	if err := store.InactiveError(auth.Account); err != nil {
		return nil, err
	}
	if auth.TOTPSecret == "" {
		// Two factors were turned off meanwhile: sign in again.
		return nil, sessionEnded()
	}
	proof, ok := s.proof(auth, code)
	if !ok {
		s.deps.Logger.Warn("dashboard second factor failed: wrong code", "email", auth.Account.Email, "ip", ip)
		return nil, invalidCode()
	}
	sess, ns := s.sessionFor(auth, ip, userAgent)
	expires, ok, err := s.deps.Store.CompleteSignIn(ctx, pendingHash, proof, ns)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.deps.Logger.Warn("dashboard second factor failed: code used already", "email", auth.Account.Email, "ip", ip)
		return nil, invalidCode()
	}
	sess.ExpiresAt = expires
	// The account's language is its browser's at its latest sign-in:
	// mail to it (a reset, a security alert) speaks it, whoever asks.
	if l := locale.FromContext(ctx); string(l) != auth.Account.Locale {
		if err := s.deps.Store.SetAccountLocale(ctx, auth.Account.ID, string(l)); err != nil {
			s.deps.Logger.Warn("account language not recorded", "accountId", auth.Account.ID, "error", err)
		}
	}
	return sess, nil
}
