package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// This file and sessions.go, tokens.go and viewers.go hold the queries of
// the dashboard's accounts (package accounts): credentials, sessions,
// e-mailed links and viewers.

// AccountAuth is an account with what signing in needs. The hashes and the
// TOTP secret are for package accounts only; no page shows them.
type AccountAuth struct {
	Account *Account
	// PasswordHash is the argon2id hash; "" until a password is set.
	PasswordHash   string
	EmailConfirmed bool
	// TOTPSecret is the active TOTP secret (base32); "" while two factors
	// are off. It is stored readable: the server computes the same codes
	// as the authenticator app, so it cannot be hashed.
	TOTPSecret string
	// TOTPPendingSecret waits for EnableTOTP's first code.
	TOTPPendingSecret string
	// TOTPLastStep is the newest 30-second step whose code was accepted;
	// -1 when none was.
	TOTPLastStep int64
	// ProtectionKeyHash is the argon2id hash of the protection key; "" when
	// none is set.
	ProtectionKeyHash string
	// OwnsProjects tells whether the account owns any project.
	OwnsProjects bool
}

// authColumns are the columns scanAuth reads, over accounts aliased a.
const authColumns = `a.id, a.email, a.plan, a.status, a.limits, a.created_at, a.updated_at, COALESCE(a.locale, ''),
	COALESCE(a.password_hash, ''), a.email_confirmed_at IS NOT NULL, COALESCE(a.totp_secret, ''),
	COALESCE(a.totp_pending_secret, ''), COALESCE(a.totp_last_step, -1), COALESCE(a.protection_key_hash, ''),
	EXISTS (SELECT 1 FROM projects op WHERE op.owner_id = a.id)`

// scanAuth reads authColumns, then extra.
func scanAuth(row scanner, extra ...any) (*AccountAuth, error) {
	var a Account
	var x AccountAuth
	var limits []byte
	dest := append([]any{&a.ID, &a.Email, &a.Plan, &a.Status, &limits, &a.CreatedAt, &a.UpdatedAt, &a.Locale,
		&x.PasswordHash, &x.EmailConfirmed, &x.TOTPSecret, &x.TOTPPendingSecret, &x.TOTPLastStep,
		&x.ProtectionKeyHash, &x.OwnsProjects}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(limits, &a.Overrides); err != nil {
		return nil, fmt.Errorf("account %d limits: %w", a.ID, err)
	}
	x.Account = &a
	return &x, nil
}

// AccountAuthByEmail returns an account with its credentials; ENOTFOUND if
// there is none.
func (s *Store) AccountAuthByEmail(ctx context.Context, email string) (*AccountAuth, error) {
	x, err := scanAuth(s.pool.QueryRow(ctx, `SELECT `+authColumns+` FROM accounts a WHERE a.email = $1`,
		strings.ToLower(strings.TrimSpace(email))))
	if noRows(err) {
		return nil, notFound(paywatch.MsgAccountNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load account credentials: %w", err)
	}
	return x, nil
}

// AccountAuthByID returns an account with its credentials; ENOTFOUND if
// there is none.
func (s *Store) AccountAuthByID(ctx context.Context, id int64) (*AccountAuth, error) {
	x, err := scanAuth(s.pool.QueryRow(ctx, `SELECT `+authColumns+` FROM accounts a WHERE a.id = $1`, id))
	if noRows(err) {
		return nil, notFound(paywatch.MsgAccountNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load account credentials: %w", err)
	}
	return x, nil
}

// InactiveError returns the 403 of a suspended or closed account, with
// interface.md's texts, or nil for an active one.
// Authenticate answers API keys of such an owner's projects with it too.
func InactiveError(a *Account) error {
	switch a.Status {
	case AccountSuspended:
		return forbidden(paywatch.MsgAccountSuspended)
	case AccountClosed:
		return forbidden(paywatch.MsgAccountClosed)
	}
	return nil
}

// SetPendingTOTP keeps a new TOTP secret aside until EnableTOTP; an
// account with two factors on gives ECONFLICT.
func (s *Store) SetPendingTOTP(ctx context.Context, accountID int64, secret string) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE accounts SET totp_pending_secret = $2, updated_at = $3 WHERE id = $1 AND totp_secret IS NULL`,
		accountID, secret, s.clock())
	if err != nil {
		return fmt.Errorf("store pending TOTP secret: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return conflict(paywatch.MsgTwoFactorOn)
	}
	return nil
}

// SecondFactorProof is what a correct second-factor code proved: a TOTP
// step of Secret, or the hash of a recovery code. Using it records the
// step or consumes the code, so a proof works once.
type SecondFactorProof struct {
	Secret       string
	Step         int64
	RecoveryHash []byte
}

// useProof records a proof in q, reporting false when it was used already
// (or the secret changed meanwhile). The conditional updates make two
// concurrent uses of one code end with exactly one success.
func (s *Store) useProof(ctx context.Context, q pgx.Tx, accountID int64, p SecondFactorProof) (bool, error) {
	if p.RecoveryHash != nil {
		tag, err := q.Exec(ctx, `
			UPDATE account_recovery_codes SET used_at = $3
			WHERE account_id = $1 AND code_hash = $2 AND used_at IS NULL`, accountID, p.RecoveryHash, s.clock())
		if err != nil {
			return false, fmt.Errorf("use recovery code: %w", err)
		}
		return tag.RowsAffected() == 1, nil
	}
	tag, err := q.Exec(ctx, `
		UPDATE accounts SET totp_last_step = $3
		WHERE id = $1 AND totp_secret = $2 AND (totp_last_step IS NULL OR totp_last_step < $3)`,
		accountID, p.Secret, p.Step)
	if err != nil {
		return false, fmt.Errorf("use TOTP step: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// errProofUsed rolls back a transaction whose second-factor proof was
// used already.
var errProofUsed = errors.New("store: second factor used already")

// EnableTOTP turns two factors on: the pending secret becomes the active
// one, step is recorded as used, and the recovery codes (their hashes)
// replace any earlier ones. It reports false when the pending secret is no
// longer secret (replaced, or enabled by a concurrent call).
func (s *Store) EnableTOTP(ctx context.Context, accountID int64, secret string, step int64, recoveryHashes [][]byte) (bool, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		now := s.clock()
		tag, err := tx.Exec(ctx, `
			UPDATE accounts SET totp_secret = totp_pending_secret, totp_pending_secret = NULL,
				totp_last_step = $3, updated_at = $4
			WHERE id = $1 AND totp_pending_secret = $2 AND totp_secret IS NULL`, accountID, secret, step, now)
		if err != nil {
			return fmt.Errorf("enable TOTP: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errProofUsed
		}
		return replaceRecoveryCodes(ctx, tx, accountID, recoveryHashes, now)
	})
	if errors.Is(err, errProofUsed) {
		return false, nil
	}
	return err == nil, err
}

func replaceRecoveryCodes(ctx context.Context, tx pgx.Tx, accountID int64, hashes [][]byte, now time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM account_recovery_codes WHERE account_id = $1`, accountID); err != nil {
		return fmt.Errorf("delete recovery codes: %w", err)
	}
	for _, h := range hashes {
		if _, err := tx.Exec(ctx, `
			INSERT INTO account_recovery_codes (account_id, code_hash, created_at) VALUES ($1, $2, $3)`,
			accountID, h, now); err != nil {
			return fmt.Errorf("store recovery code: %w", err)
		}
	}
	return nil
}

// DisableTOTP turns two factors off once proof is used, deleting the
// secret and the recovery codes; it reports false for a proof used already.
func (s *Store) DisableTOTP(ctx context.Context, accountID int64, proof SecondFactorProof) (bool, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ok, err := s.useProof(ctx, tx, accountID, proof)
		if err != nil {
			return err
		}
		if !ok {
			return errProofUsed
		}
		if _, err := tx.Exec(ctx, `
			UPDATE accounts SET totp_secret = NULL, totp_pending_secret = NULL, totp_last_step = NULL, updated_at = $2
			WHERE id = $1`, accountID, s.clock()); err != nil {
			return fmt.Errorf("disable TOTP: %w", err)
		}
		return replaceRecoveryCodes(ctx, tx, accountID, nil, s.clock())
	})
	if errors.Is(err, errProofUsed) {
		return false, nil
	}
	return err == nil, err
}

// RecoveryCodesLeft counts an account's unused recovery codes.
func (s *Store) RecoveryCodesLeft(ctx context.Context, accountID int64) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM account_recovery_codes WHERE account_id = $1 AND used_at IS NULL`, accountID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count recovery codes: %w", err)
	}
	return n, nil
}

// SetProtectionKeyHash replaces the protection key's hash if it is still
// old ("" for none), reporting false when another change came first.
func (s *Store) SetProtectionKeyHash(ctx context.Context, accountID int64, old, hash string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE accounts SET protection_key_hash = $3, updated_at = $4
		WHERE id = $1 AND COALESCE(protection_key_hash, '') = $2`, accountID, old, hash, s.clock())
	if err != nil {
		return false, fmt.Errorf("set protection key: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ClearProtectionKey removes the protection key of the account with the
// e-mail address and queues, in the same transaction, the mail alert
// builds.
func (s *Store) ClearProtectionKey(ctx context.Context, email string, alert func(*Account) Mail) (*Mail, error) {
	var out *Mail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		a, err := scanAccount(tx.QueryRow(ctx, `
			UPDATE accounts SET protection_key_hash = NULL, updated_at = $2
			WHERE email = $1 AND protection_key_hash IS NOT NULL RETURNING `+accountColumns, email, s.clock()))
		if noRows(err) {
			// No such account, or no key to remove: nothing to tell.
			return nil
		}
		if err != nil {
			return fmt.Errorf("clear protection key: %w", err)
		}
		m, err := s.queueMail(ctx, tx, alert(a))
		out = &m
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ForgiveRate takes back one hit of a window HitRate returned, for limits
// that count only failures: every attempt is counted before it is checked,
// so parallel attempts cannot slip past the limit, and a successful one is
// taken back afterwards.
func (s *Store) ForgiveRate(ctx context.Context, key string, w RateWindow, window time.Duration) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE rate_limits SET count = count - 1 WHERE key = $1 AND window_start = $2 AND count > 0`,
		key, w.Reset.Add(-window))
	if err != nil {
		return fmt.Errorf("forgive rate limit %s: %w", key, err)
	}
	return nil
}
