package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paywatch/paywatch"
)

// NewSession is a dashboard session to store: a signed-in browser, or a
// sign-in waiting for its second factor (Pending).
type NewSession struct {
	// TokenHash is the SHA-256 of the cookie's token.
	TokenHash []byte
	AccountID int64
	CSRF      string
	Pending   bool
	// TTL is the absolute lifetime from now.
	TTL       time.Duration
	IP        string
	UserAgent string
}

// SessionRecord is a stored session with its account, read fresh.
type SessionRecord struct {
	Auth       *AccountAuth
	CSRF       string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// sessionEnded is the answer for a session that is unknown or expired.
func sessionEnded() error {
	return paywatch.Errorf(paywatch.EUNAUTHORIZED, "%s", paywatch.MsgSessionEnded)
}

// CreateSession stores a new session and returns when it expires.
func (s *Store) CreateSession(ctx context.Context, ns NewSession) (time.Time, error) {
	return s.createSession(ctx, s.pool, ns)
}

func (s *Store) createSession(ctx context.Context, q querier, ns NewSession) (time.Time, error) {
	now := s.clock()
	expires := now.Add(ns.TTL)
	var ignored bool
	err := q.QueryRow(ctx, `
		INSERT INTO dashboard_sessions (token_hash, account_id, pending, csrf_token, ip, user_agent,
			created_at, last_seen_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, left($6, 500), $7, $7, $8) RETURNING true`,
		ns.TokenHash, ns.AccountID, ns.Pending, ns.CSRF, ns.IP, ns.UserAgent, now, expires).Scan(&ignored)
	if err != nil {
		return time.Time{}, fmt.Errorf("create session: %w", err)
	}
	return expires, nil
}

// SessionByHash returns the full (not pending) session of a token hash
// with its account. A session unknown, past its absolute expiry, or idle
// longer than idle gives EUNAUTHORIZED MsgSessionEnded. last_seen_at moves
// at most once per touch, so most requests only read; touch 0 never moves
// it, for requests that are not the user's own use of the session.
func (s *Store) SessionByHash(ctx context.Context, hash []byte, idle, touch time.Duration) (*SessionRecord, error) {
	now := s.clock()
	var r SessionRecord
	auth, err := scanAuth(s.pool.QueryRow(ctx, `
		SELECT `+authColumns+`, ds.csrf_token, ds.created_at, ds.last_seen_at, ds.expires_at
		FROM dashboard_sessions ds JOIN accounts a ON a.id = ds.account_id
		WHERE ds.token_hash = $1 AND NOT ds.pending AND ds.expires_at > $2 AND ds.last_seen_at > $3`,
		hash, now, now.Add(-idle)), &r.CSRF, &r.CreatedAt, &r.LastSeenAt, &r.ExpiresAt)
	if noRows(err) {
		return nil, sessionEnded()
	}
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	r.Auth = auth
	r.CreatedAt, r.LastSeenAt, r.ExpiresAt = r.CreatedAt.UTC(), r.LastSeenAt.UTC(), r.ExpiresAt.UTC()
	if touch > 0 && now.Sub(r.LastSeenAt) >= touch {
		if _, err := s.pool.Exec(ctx, `
			UPDATE dashboard_sessions SET last_seen_at = $2 WHERE token_hash = $1 AND last_seen_at < $2`,
			hash, now); err != nil {
			return nil, fmt.Errorf("touch session: %w", err)
		}
		r.LastSeenAt = now
	}
	return &r, nil
}

// PendingSession returns the account of a sign-in waiting for its second
// factor; EUNAUTHORIZED MsgSessionEnded when it is unknown, used or
// expired.
func (s *Store) PendingSession(ctx context.Context, hash []byte) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `
		SELECT account_id FROM dashboard_sessions WHERE token_hash = $1 AND pending AND expires_at > $2`,
		hash, s.clock()).Scan(&id)
	if noRows(err) {
		return 0, sessionEnded()
	}
	if err != nil {
		return 0, fmt.Errorf("load pending sign-in: %w", err)
	}
	return id, nil
}

// CompleteSignIn replaces a pending sign-in by the full session ns once
// proof is used, in one transaction: it reports false, leaving the pending
// sign-in in place, when the proof was used already, and gives
// EUNAUTHORIZED MsgSessionEnded when the pending sign-in is gone (a
// concurrent completion won).
func (s *Store) CompleteSignIn(ctx context.Context, pendingHash []byte, proof SecondFactorProof, ns NewSession) (time.Time, bool, error) {
	var expires time.Time
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var accountID int64
		err := tx.QueryRow(ctx, `
			DELETE FROM dashboard_sessions WHERE token_hash = $1 AND pending AND expires_at > $2
			RETURNING account_id`, pendingHash, s.clock()).Scan(&accountID)
		if noRows(err) || (err == nil && accountID != ns.AccountID) {
			return sessionEnded()
		}
		if err != nil {
			return fmt.Errorf("consume pending sign-in: %w", err)
		}
		ok, err := s.useProof(ctx, tx, accountID, proof)
		if err != nil {
			return err
		}
		if !ok {
			return errProofUsed
		}
		expires, err = s.createSession(ctx, tx, ns)
		return err
	})
	if errors.Is(err, errProofUsed) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return expires, true, nil
}

// DeleteSession ends one session (or pending sign-in).
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM dashboard_sessions WHERE token_hash = $1`, hash); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteSessions ends every session and pending sign-in of an account.
func (s *Store) DeleteSessions(ctx context.Context, accountID int64) error {
	return deleteSessions(ctx, s.pool, accountID)
}

// authExecer is a pool or a transaction.
type authExecer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func deleteSessions(ctx context.Context, q authExecer, accountID int64) error {
	if _, err := q.Exec(ctx, `DELETE FROM dashboard_sessions WHERE account_id = $1`, accountID); err != nil {
		return fmt.Errorf("delete sessions: %w", err)
	}
	return nil
}

// SessionIdle is how long a dashboard session lasts without a request;
// accounts ends idle sessions, and the reconciler prunes them.
const SessionIdle = 2 * time.Hour

// PruneAuth deletes sessions idle longer than idle or past their expiry,
// links that expired more than a week ago, and Telegram link codes that
// expired more than a day ago; the reconciler may call it
// now and then so the tables stay small.
func (s *Store) PruneAuth(ctx context.Context, idle time.Duration) error {
	now := s.clock()
	if _, err := s.pool.Exec(ctx, `
		DELETE FROM dashboard_sessions WHERE expires_at <= $1 OR last_seen_at <= $2`, now, now.Add(-idle)); err != nil {
		return fmt.Errorf("prune sessions: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM account_tokens WHERE expires_at < $1`, now.Add(-7*24*time.Hour)); err != nil {
		return fmt.Errorf("prune account links: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM telegram_link_codes WHERE expires_at < $1`, now.Add(-24*time.Hour)); err != nil {
		return fmt.Errorf("prune telegram link codes: %w", err)
	}
	return nil
}
