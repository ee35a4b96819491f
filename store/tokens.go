package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// TokenPurpose says what an e-mailed link does.
type TokenPurpose string

// The purposes of e-mailed links.
const (
	TokenConfirm     TokenPurpose = "confirm"      // confirms a registration
	TokenSetPassword TokenPurpose = "set_password" // an operator-created account's first password
	TokenReset       TokenPurpose = "reset"        // a password reset
	TokenInvite      TokenPurpose = "invite"       // an invitation to view a project
)

// NewToken is a single-use link to store. Only the SHA-256 of the link's
// token is stored.
type NewToken struct {
	Purpose TokenPurpose
	Hash    []byte
	// Email is the normalised address the link is sent to.
	Email string
	// ProjectID is the project of an invitation; 0 otherwise.
	ProjectID int64
	// PasswordHash is a registration's password, until it is confirmed.
	PasswordHash string
	TTL          time.Duration
}

// linkGone is the answer for a link that is unknown, used or expired.
func linkGone() error {
	return paywatch.Errorf(paywatch.EGONE, "%s", paywatch.MsgLinkGone)
}

// nullID maps 0 to NULL.
func nullID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// storeToken inserts t in tx after deleting the earlier open links of the
// same purpose, address (and project), so only the newest link works. An
// advisory lock on the address serialises two issues at once.
func (s *Store) storeToken(ctx context.Context, tx pgx.Tx, t NewToken, accountID int64) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		"account_tokens:"+string(t.Purpose)+":"+t.Email); err != nil {
		return fmt.Errorf("lock links: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		DELETE FROM account_tokens
		WHERE purpose = $1 AND email = $2 AND used_at IS NULL AND project_id IS NOT DISTINCT FROM $3`,
		t.Purpose, t.Email, nullID(t.ProjectID)); err != nil {
		return fmt.Errorf("invalidate earlier links: %w", err)
	}
	var pw *string
	if t.PasswordHash != "" {
		pw = &t.PasswordHash
	}
	now := s.clock()
	if _, err := tx.Exec(ctx, `
		INSERT INTO account_tokens (token_hash, purpose, email, account_id, project_id, password_hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		t.Hash, t.Purpose, t.Email, nullID(accountID), nullID(t.ProjectID), pw, now, now.Add(t.TTL)); err != nil {
		return fmt.Errorf("store link: %w", err)
	}
	return nil
}

// TokenMail builds the e-mail of a link. a is the account that has the
// link's address, nil if there is none. It returns the e-mail to queue
// (nil for none) and whether to store the link: false queues the e-mail
// alone, such as the notice to an address that registers again.
type TokenMail func(a *Account) (m *Mail, keep bool)

// IssueToken stores a link and queues its e-mail in one transaction, so
// neither exists without the other, and returns the queued e-mail (nil if
// build gave none) for its delivery to be started.
func (s *Store) IssueToken(ctx context.Context, t NewToken, build TokenMail) (*Mail, error) {
	var queued *Mail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		a, err := scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE email = $1`, t.Email))
		if noRows(err) {
			a, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("load account: %w", err)
		}
		m, keep := build(a)
		if keep {
			var accountID int64
			if a != nil {
				accountID = a.ID
			}
			if err := s.storeToken(ctx, tx, t, accountID); err != nil {
				return err
			}
		}
		if m != nil {
			q, err := s.queueMail(ctx, tx, *m)
			if err != nil {
				return err
			}
			queued = &q
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return queued, nil
}

// ReissueConfirmation replaces the newest open registration of an address,
// made within maxAge, by a new link t (keeping its password) and queues the
// e-mail build makes. It returns nil without a queued e-mail when there is
// no such registration or the address has an account by now.
func (s *Store) ReissueConfirmation(ctx context.Context, t NewToken, maxAge time.Duration, build func() Mail) (*Mail, error) {
	var queued *Mail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE email = $1)`, t.Email).Scan(&exists); err != nil {
			return fmt.Errorf("load account: %w", err)
		}
		if exists {
			return nil
		}
		err := tx.QueryRow(ctx, `
			SELECT password_hash FROM account_tokens
			WHERE purpose = 'confirm' AND email = $1 AND used_at IS NULL AND created_at > $2
			ORDER BY created_at DESC LIMIT 1`, t.Email, s.clock().Add(-maxAge)).Scan(&t.PasswordHash)
		if noRows(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("load registration: %w", err)
		}
		t.Purpose = TokenConfirm
		if err := s.storeToken(ctx, tx, t, 0); err != nil {
			return err
		}
		q, err := s.queueMail(ctx, tx, build())
		if err != nil {
			return err
		}
		queued = &q
		return nil
	})
	if err != nil {
		return nil, err
	}
	return queued, nil
}

// consumeToken marks an open link of one of the purposes used and returns
// its row; EGONE when it is unknown, used or expired. The row lock makes
// two concurrent uses end with exactly one winner.
func (s *Store) consumeToken(ctx context.Context, tx pgx.Tx, hash []byte, purposes ...TokenPurpose) (email string, accountID, projectID *int64, passwordHash *string, err error) {
	names := make([]string, len(purposes))
	for i, p := range purposes {
		names[i] = string(p)
	}
	err = tx.QueryRow(ctx, `
		UPDATE account_tokens SET used_at = $2
		WHERE token_hash = $1 AND purpose = ANY($3) AND used_at IS NULL AND expires_at > $2
		RETURNING email, account_id, project_id, password_hash`, hash, s.clock(), names).
		Scan(&email, &accountID, &projectID, &passwordHash)
	if noRows(err) {
		return "", nil, nil, nil, linkGone()
	}
	if err != nil {
		return "", nil, nil, nil, fmt.Errorf("use link: %w", err)
	}
	return email, accountID, projectID, passwordHash, nil
}

// createDashboardAccount adds an active free account with a confirmed
// address and a password, unless the address has one by now; it returns
// the account's id either way.
func (s *Store) createDashboardAccount(ctx context.Context, tx pgx.Tx, email, passwordHash string) (int64, error) {
	now := s.clock()
	var id int64
	err := tx.QueryRow(ctx, `
		INSERT INTO accounts (email, plan, status, password_hash, email_confirmed_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5, $5)
		ON CONFLICT (email) DO NOTHING RETURNING id`,
		email, paywatch.PlanFree, AccountActive, passwordHash, now).Scan(&id)
	if noRows(err) {
		err = tx.QueryRow(ctx, `SELECT id FROM accounts WHERE email = $1`, email).Scan(&id)
	}
	if err != nil {
		return 0, fmt.Errorf("create account: %w", err)
	}
	return id, nil
}

// ConfirmRegistration uses a confirmation link: the account is created
// (plan free, active, with the registration's password) in the
// transaction that uses the link, and the address is returned. An address
// that got an account meanwhile keeps it as it is. check sees the
// registration's password hash first; its error refuses the link and
// leaves it unused.
func (s *Store) ConfirmRegistration(ctx context.Context, hash []byte, check func(passwordHash string) error) (string, error) {
	var email string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		e, _, _, pw, err := s.consumeToken(ctx, tx, hash, TokenConfirm)
		if err != nil {
			return err
		}
		// A refused check rolls the consumption back: the link still works
		// with the right password.
		if err := check(*pw); err != nil {
			return err
		}
		email = e
		if _, err := s.createDashboardAccount(ctx, tx, email, *pw); err != nil {
			return err
		}
		// The other open registrations of the address hold passwords that
		// no longer matter.
		if _, err := tx.Exec(ctx, `
			DELETE FROM account_tokens WHERE purpose = 'confirm' AND email = $1 AND used_at IS NULL`, email); err != nil {
			return fmt.Errorf("delete other registrations: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return email, nil
}

// SetPasswordByToken uses a reset or set-password link: it sets the
// account's password (which also confirms its address), ends every session
// of the account and withdraws its other open reset and set-password
// links, all in one transaction.
func (s *Store) SetPasswordByToken(ctx context.Context, hash []byte, passwordHash string, check func(protectionKeyHash string) error) (*Account, error) {
	var out *Account
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		_, accountID, _, _, err := s.consumeToken(ctx, tx, hash, TokenReset, TokenSetPassword)
		if err != nil {
			return err
		}
		if accountID == nil {
			return linkGone()
		}
		if check != nil {
			// Refused, the transaction rolls back: the link stays usable.
			var key string
			if err := tx.QueryRow(ctx, `SELECT COALESCE(protection_key_hash, '') FROM accounts WHERE id = $1`, *accountID).Scan(&key); err != nil && !noRows(err) {
				return err
			}
			if err := check(key); err != nil {
				return err
			}
		}
		now := s.clock()
		out, err = scanAccount(tx.QueryRow(ctx, `
			UPDATE accounts SET password_hash = $2, email_confirmed_at = COALESCE(email_confirmed_at, $3), updated_at = $3
			WHERE id = $1 RETURNING `+accountColumns, *accountID, passwordHash, now))
		if noRows(err) {
			return linkGone()
		}
		if err != nil {
			return fmt.Errorf("set password: %w", err)
		}
		if err := deleteSessions(ctx, tx, out.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			DELETE FROM account_tokens WHERE account_id = $1 AND purpose IN ('reset', 'set_password') AND used_at IS NULL`,
			out.ID); err != nil {
			return fmt.Errorf("withdraw other links: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
