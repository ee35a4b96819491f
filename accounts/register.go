package accounts

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/store"
)

// How long e-mailed links work.
const (
	ConfirmTTL     = 24 * time.Hour
	ResetTTL       = time.Hour
	SetPasswordTTL = 7 * 24 * time.Hour
	InviteTTL      = 7 * 24 * time.Hour
	// registrationMaxAge is how long ResendConfirmation finds an open
	// registration (it keeps the password typed at registration).
	registrationMaxAge = 7 * 24 * time.Hour
)

// Register starts a registration: it e-mails a single-use, expiring
// confirmation link, and the account (plan free) exists once the link is
// opened. An address that already has an account gets an e-mail saying so
// instead, and the answer is the same, so the form reveals nothing.
func (s *Service) Register(ctx context.Context, email, password, ip string) error {
	email, err := paywatch.NormalizeEmail(email)
	if err != nil {
		return err
	}
	if err := validatePassword(password); err != nil {
		return err
	}
	if _, err := s.hit(ctx, limitMailIP, ip); err != nil {
		return err
	}
	if _, err := s.hit(ctx, limitRegisterEmail, email); err != nil {
		return err
	}
	// Hashed even for a taken address, so both answers take as long.
	pw, err := hashSecret(password)
	if err != nil {
		return err
	}
	token, hash := newToken()
	m, err := s.deps.Store.IssueToken(ctx,
		store.NewToken{Purpose: store.TokenConfirm, Hash: hash, Email: email, PasswordHash: pw, TTL: ConfirmTTL},
		func(a *store.Account) (*store.Mail, bool) {
			if a != nil {
				m := s.registeredAgainMail(accountLang(a), email)
				return &m, false
			}
			m := s.confirmMail(locale.FromContext(ctx), email, token)
			return &m, true
		})
	if err != nil {
		return err
	}
	s.startMail(ctx, m)
	return nil
}

// ResendConfirmation e-mails the confirmation link of an open registration
// again, with a new token; unknown addresses get the same answer.
func (s *Service) ResendConfirmation(ctx context.Context, email, ip string) error {
	email, err := paywatch.NormalizeEmail(email)
	if err != nil {
		return err
	}
	if _, err := s.hit(ctx, limitMailIP, ip); err != nil {
		return err
	}
	if _, err := s.hit(ctx, limitResendEmail, email); err != nil {
		return err
	}
	token, hash := newToken()
	m, err := s.deps.Store.ReissueConfirmation(ctx,
		store.NewToken{Hash: hash, Email: email, TTL: ConfirmTTL}, registrationMaxAge,
		func() store.Mail { return s.confirmMail(locale.FromContext(ctx), email, token) })
	if err != nil {
		return err
	}
	s.startMail(ctx, m)
	return nil
}

// Confirm opens a confirmation link: it creates the account and returns its
// e-mail address.
//
// The link alone is not enough: password must be the one given at
// registration. Otherwise whoever registered someone else's address first
// would get the account the moment its owner clicked the link, with a
// password only the intruder knows. Tries are limited per link.
func (s *Service) Confirm(ctx context.Context, token, password string) (string, error) {
	if token == "" {
		return "", linkGone()
	}
	hash := hashToken(token)
	if _, err := s.hit(ctx, limitConfirm, hex.EncodeToString(hash)); err != nil {
		return "", err
	}
	return s.deps.Store.ConfirmRegistration(ctx, hash, func(hash string) error {
		if !matchSecret(password, hash) {
			return paywatch.Errorf(paywatch.EUNAUTHORIZED, "%s", paywatch.MsgConfirmPassword)
		}
		return nil
	})
}

// AccountCreated e-mails an operator-created account a link to set its
// password.
func (s *Service) AccountCreated(ctx context.Context, a *store.Account) error {
	token, hash := newToken()
	m, err := s.deps.Store.IssueToken(ctx,
		store.NewToken{Purpose: store.TokenSetPassword, Hash: hash, Email: a.Email, TTL: SetPasswordTTL},
		func(found *store.Account) (*store.Mail, bool) {
			if found == nil {
				return nil, false
			}
			m := s.setPasswordMail(locale.FromContext(ctx), found, token)
			return &m, true
		})
	if err != nil {
		return err
	}
	s.startMail(ctx, m)
	return nil
}

// RequestPasswordReset e-mails a reset link to an account's address;
// unknown addresses get the same answer.
func (s *Service) RequestPasswordReset(ctx context.Context, email, ip string) error {
	email, err := paywatch.NormalizeEmail(email)
	if err != nil {
		return err
	}
	if _, err := s.hit(ctx, limitMailIP, ip); err != nil {
		return err
	}
	if _, err := s.hit(ctx, limitResetEmail, email); err != nil {
		return err
	}
	token, hash := newToken()
	m, err := s.deps.Store.IssueToken(ctx,
		store.NewToken{Purpose: store.TokenReset, Hash: hash, Email: email, TTL: ResetTTL},
		func(a *store.Account) (*store.Mail, bool) {
			if a == nil || a.Status == store.AccountClosed {
				return nil, false
			}
			m := s.resetMail(accountLang(a), email, token)
			return &m, true
		})
	if err != nil {
		return err
	}
	s.startMail(ctx, m)
	return nil
}

// SetPassword opens a reset or set-password link and sets the password; it
// signs the account out everywhere.
func (s *Service) SetPassword(ctx context.Context, token, password string) error {
	if token == "" {
		return linkGone()
	}
	if err := validatePassword(password); err != nil {
		return err
	}
	pw, err := hashSecret(password)
	if err != nil {
		return err
	}
	// The password must not be the protection key: each guards what the
	// other cannot (issue 28, item 15).
	_, err = s.deps.Store.SetPasswordByToken(ctx, hashToken(token), pw, func(keyHash string) error {
		if keyHash != "" && matchSecret(password, keyHash) {
			return paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgPasswordIsProtectionKey)
		}
		return nil
	})
	return err
}
