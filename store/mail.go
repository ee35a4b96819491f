package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// Mail is an outgoing e-mail (a mail_messages row).
type Mail struct {
	ID      string
	To      string
	Subject string
	Text    string
	HTML    string
	// Sent is set once the message was handed to the SMTP server, or, in
	// the dev outbox, once it was filed there.
	Sent      bool
	SentAt    *time.Time
	CreatedAt time.Time
}

// newMailID returns a random UUID (version 4) for a message.
func newMailID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// QueueMail records m as pending and returns it with its id.
func (s *Store) QueueMail(ctx context.Context, m Mail) (Mail, error) {
	return s.queueMail(ctx, s.pool, m)
}

// queueMail is QueueMail on q, which may be a transaction.
func (s *Store) queueMail(ctx context.Context, q querier, m Mail) (Mail, error) {
	m.ID = newMailID()
	err := q.QueryRow(ctx, `
		INSERT INTO mail_messages (id, to_address, subject, text_body, html_body, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
		m.ID, m.To, m.Subject, m.Text, m.HTML, s.clock().UTC()).Scan(&m.CreatedAt)
	if err != nil {
		return Mail{}, fmt.Errorf("queue mail: %w", err)
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

const mailSelect = `SELECT id::text, to_address, subject, text_body, html_body, state = 'sent', sent_at, created_at FROM mail_messages`

func scanMail(row pgx.Row) (Mail, error) {
	var m Mail
	if err := row.Scan(&m.ID, &m.To, &m.Subject, &m.Text, &m.HTML, &m.Sent, &m.SentAt, &m.CreatedAt); err != nil {
		return Mail{}, err
	}
	m.CreatedAt = m.CreatedAt.UTC()
	if m.SentAt != nil {
		t := m.SentAt.UTC()
		m.SentAt = &t
	}
	return m, nil
}

// MailByID returns a message; ok is false if there is none.
func (s *Store) MailByID(ctx context.Context, id string) (Mail, bool, error) {
	if !paywatch.ValidPaymentID(id) {
		return Mail{}, false, nil
	}
	m, err := scanMail(s.pool.QueryRow(ctx, mailSelect+` WHERE id = $1`, id))
	if noRows(err) {
		return Mail{}, false, nil
	}
	if err != nil {
		return Mail{}, false, fmt.Errorf("read mail %s: %w", id, err)
	}
	return m, true, nil
}

// MarkMailStarted records that a message's delivery workflow was started,
// so the reconciler looks only at messages no process started.
func (s *Store) MarkMailStarted(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE mail_messages SET started = true WHERE id = $1`, id); err != nil {
		return fmt.Errorf("mark mail %s started: %w", id, err)
	}
	return nil
}

// SentBodyRemoved replaces the text of a message handed to an SMTP server.
const SentBodyRemoved = "(sent; the text is not kept, since it may hold a sign-in link)"

// MarkMailSent records that a message went out. forget drops its text:
// a message an SMTP server took may carry a confirmation, reset or
// invitation link that works until it expires, and the row need not keep
// it. The dev outbox (forget false) is the mailbox, so it keeps the text.
func (s *Store) MarkMailSent(ctx context.Context, id string, forget bool) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE mail_messages SET state = 'sent', sent_at = $2, attempts = attempts + 1, last_error = NULL,
			text_body = CASE WHEN $3 THEN $4 ELSE text_body END,
			html_body = CASE WHEN $3 THEN '' ELSE html_body END
		WHERE id = $1 AND state = 'pending'`, id, s.clock().UTC(), forget, SentBodyRemoved)
	if err != nil {
		return fmt.Errorf("mark mail %s sent: %w", id, err)
	}
	return nil
}

// RecordMailFailure counts a failed attempt to send a message.
func (s *Store) RecordMailFailure(ctx context.Context, id, reason string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE mail_messages SET attempts = attempts + 1, last_error = left($2, 500) WHERE id = $1`, id, reason)
	if err != nil {
		return fmt.Errorf("record mail %s failure: %w", id, err)
	}
	return nil
}

// ListMail returns the newest messages, up to limit.
func (s *Store) ListMail(ctx context.Context, limit int) ([]Mail, error) {
	rows, err := s.pool.Query(ctx, mailSelect+` ORDER BY created_at DESC, id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list mail: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Mail, error) { return scanMail(r) })
}

// PendingMail returns the ids of messages whose delivery no process
// started, queued at least minAge ago, oldest first, up to limit. (A
// started delivery retries by itself, however long its message fails.)
func (s *Store) PendingMail(ctx context.Context, minAge time.Duration, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id::text FROM mail_messages WHERE state = 'pending' AND NOT started AND created_at <= $1
		ORDER BY created_at LIMIT $2`, s.clock().UTC().Add(-minAge), limit)
	if err != nil {
		return nil, fmt.Errorf("list pending mail: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
