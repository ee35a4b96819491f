package accounts

import (
	"context"
	"unicode/utf8"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// wrongProtectionKey is the answer for a protection key that does not
// match.
func wrongProtectionKey() error {
	return paywatch.Errorf(paywatch.EFORBIDDEN, "%s", paywatch.MsgWrongProtectionKey)
}

// SetProtectionKey sets or replaces the account's protection key; a
// replacement needs the current one, and the first key the account's
// password (current either way).
//
// The check of the current key counts toward the same limit as
// CheckProtectionKey's.
func (s *Service) SetProtectionKey(ctx context.Context, accountID int64, current, key string) error {
	if n := utf8.RuneCountInString(key); n < MinProtectionKeyLength || n > MaxProtectionKeyLength {
		return paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgProtectionKeyLength)
	}
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil {
		return err
	}
	// The first key needs the account's password, so that a stolen
	// session alone cannot set one and then pass every guarded action.
	if auth.ProtectionKeyHash != "" {
		if err := s.checkProtectionKey(ctx, accountID, auth.ProtectionKeyHash, current); err != nil {
			return err
		}
	} else if err := s.checkProtectionKey(ctx, accountID, auth.PasswordHash, current); err != nil {
		if paywatch.ErrorCode(err) == paywatch.EFORBIDDEN {
			return paywatch.Errorf(paywatch.EFORBIDDEN, "%s", paywatch.MsgWrongPassword)
		}
		return err
	}
	// A key equal to the password would fall with it: whoever learns the
	// password (the one secret a phishing page asks for) would pass every
	// guarded action too.
	if matchSecret(key, auth.PasswordHash) {
		return paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgProtectionKeyIsPassword)
	}
	hash, err := hashSecret(key)
	if err != nil {
		return err
	}
	ok, err := s.deps.Store.SetProtectionKeyHash(ctx, accountID, auth.ProtectionKeyHash, hash)
	if err != nil {
		return err
	}
	if !ok {
		// Another change came first: current was checked against a key
		// that is no longer the key.
		return wrongProtectionKey()
	}
	return nil
}

// CheckProtectionKey verifies the protection key before a guarded action
// (key regeneration, wallet deletion); wrong attempts are limited.
//
// Without a key it is EFORBIDDEN MsgSetProtectionKey; a wrong key is
// EFORBIDDEN MsgWrongProtectionKey; a sixth wrong key within 15 minutes,
// right or wrong, is ERATELIMIT "Too many requests".
func (s *Service) CheckProtectionKey(ctx context.Context, accountID int64, key string) error {
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil {
		return err
	}
	if auth.ProtectionKeyHash == "" {
		return paywatch.Errorf(paywatch.EFORBIDDEN, "%s", paywatch.MsgSetProtectionKey)
	}
	return s.checkProtectionKey(ctx, accountID, auth.ProtectionKeyHash, key)
}

// checkProtectionKey compares key with hash under the limit of wrong
// attempts: the attempt is counted before the comparison and taken back
// when it was right.
func (s *Service) checkProtectionKey(ctx context.Context, accountID int64, hash, key string) error {
	w, err := s.hit(ctx, limitProtectionKey, idKey(accountID))
	if err != nil {
		return err
	}
	if !matchSecret(key, hash) {
		s.deps.Logger.Warn("protection key refused: wrong key", "accountId", accountID)
		return wrongProtectionKey()
	}
	return s.deps.Store.ForgiveRate(ctx, limitProtectionKey.prefix+idKey(accountID), w, limitProtectionKey.window)
}

// ClearProtectionKey removes an account's protection key, for an owner who
// lost it (the operator's PATCH /v1/accounts/{email} with
// "protection_key": null). The owner sets a new one with their password,
// and is told by e-mail, in the transaction that clears it.
func (s *Service) ClearProtectionKey(ctx context.Context, email string) error {
	m, err := s.deps.Store.ClearProtectionKey(ctx, email, func(a *store.Account) store.Mail {
		l := accountLang(a)
		return store.Mail{
			To:      a.Email,
			Subject: l.T("mail.key_removed.subject"),
			Text: l.T("mail.key_removed.text", "Email", a.Email,
				"At", s.deps.Now().UTC().Format("2006-01-02 15:04:05"), "Dashboard", s.dashboardURL()),
		}
	})
	if err != nil {
		return err
	}
	s.startMail(ctx, m)
	return nil
}
