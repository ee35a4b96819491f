package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paywatch/paywatch"
)

// WebhookState is the delivery state of a webhook event and of each of its
// attempts (operations.md §2 webhook-deliveries).
type WebhookState string

// The webhook delivery states. Events start pending; attempts are never
// pending.
const (
	WebhookPending   WebhookState = "pending"
	WebhookDelivered WebhookState = "delivered"
	WebhookFailed    WebhookState = "failed"
	WebhookRetrying  WebhookState = "retrying"
	WebhookSkipped   WebhookState = "skipped"
)

// MaxWebhookResponseBody is how many characters of a receiver's answer are
// stored per attempt.
const MaxWebhookResponseBody = 256

// quotaSkippedBody is the logged "response" of an event skipped by quota.
const quotaSkippedBody = "daily webhook quota exhausted"

// WebhookEvent is a webhook to queue: its stable id, the payment, the
// event, its sequence and the exact payload.
type WebhookEvent struct {
	EventID   string
	PaymentID string
	Event     paywatch.Event
	Sequence  int
	Payload   json.RawMessage
}

// QueueWebhookEvent records a webhook event and applies the owner account's
// daily webhook quota in the same transaction. payment.partial,
// payment.expired and payment.cancelled count once, here, against the
// account's webhooks_per_day (plan limit or override; a negative override
// means unlimited) for the current UTC date; over quota the event is marked
// skipped, with a skipped attempt in the log, and is never sent.
// payment.completed and payment.overpaid are exempt and do not count. A
// project without an owner has no quota. Queueing the same event id again
// changes nothing and returns its state, so retries never count twice.
func (s *Store) QueueWebhookEvent(ctx context.Context, ev WebhookEvent) (WebhookState, error) {
	now := s.now().UTC()
	var state WebhookState
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var projectID int64
		err := tx.QueryRow(ctx, `
			INSERT INTO webhook_events (event_id, project_id, payment_id, event, sequence, payload, state, created_at, updated_at)
			SELECT $1, p.project_id, p.id, $3, $4, $5::jsonb, 'pending', $6, $6 FROM payments p WHERE p.id = $2
			ON CONFLICT DO NOTHING
			RETURNING project_id`,
			ev.EventID, ev.PaymentID, string(ev.Event), ev.Sequence, string(ev.Payload), now).Scan(&projectID)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT state FROM webhook_events WHERE event_id = $1`, ev.EventID).Scan(&state)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("payment %s not found", ev.PaymentID)
			}
			return err
		}
		if err != nil {
			return err
		}
		state = WebhookPending
		if ev.Event.QuotaExempt() {
			return nil
		}
		within, err := countQuota(ctx, tx, projectID, "webhooks", now, webhookQuota)
		if err != nil || within {
			return err
		}
		state = WebhookSkipped
		return recordAttempt(ctx, tx, WebhookAttempt{EventID: ev.EventID, Attempt: 1, ResponseBody: quotaSkippedBody, State: WebhookSkipped}, now)
	})
	if err != nil {
		return "", fmt.Errorf("queue webhook %s: %w", ev.EventID, err)
	}
	return state, nil
}

// webhookQuota returns the account that owns a project and its daily
// webhook limit (negative for unlimited); accountID is 0 for a project
// without an owner, which has no quota.
func webhookQuota(ctx context.Context, tx pgx.Tx, projectID int64) (accountID, limit int64, err error) {
	var plan string
	var overrides []byte
	err = tx.QueryRow(ctx, `
		SELECT a.id, a.plan, a.limits FROM projects pr JOIN accounts a ON a.id = pr.owner_id
		WHERE pr.id = $1`, projectID).Scan(&accountID, &plan, &overrides)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	var o paywatch.LimitOverrides
	if len(overrides) > 0 {
		if err := json.Unmarshal(overrides, &o); err != nil {
			return 0, 0, fmt.Errorf("account %d limits: %w", accountID, err)
		}
	}
	return accountID, paywatch.EffectiveLimits(paywatch.Plan(plan), o).WebhooksPerDay, nil
}

// PrepareRedelivery readies one of a project's webhook events to be sent
// again now and returns it with its canonical id, the number its first
// new attempt is logged under and its new delivery generation: attempts
// continue the event's numbering, so the deliveries log keeps the earlier
// ones. The event becomes pending again, whatever its state, so that a
// redelivery whose workflow fails to start is still picked up by the
// reconciler; and it moves to a new generation, so that the run it
// replaces, whose last attempt may still be in flight, can neither send
// the event again nor set its state (RecordWebhookAttempt): a late
// "failed" from that run never undoes the accepted redelivery. A skipped event counts toward its owner's daily webhook quota
// now (operations.md §8), even past the limit: the operator or merchant
// asked for it explicitly. An unknown event, a malformed id and another
// project's event are all ENOTFOUND "Event not found".
func (s *Store) PrepareRedelivery(ctx context.Context, projectID int64, eventID string) (PendingWebhook, error) {
	if !paywatch.ValidPaymentID(eventID) {
		return PendingWebhook{}, notFound(paywatch.MsgEventNotFound)
	}
	now := s.now().UTC()
	var p PendingWebhook
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var state WebhookState
		err := tx.QueryRow(ctx, `
			SELECT event_id::text, state FROM webhook_events WHERE event_id = $1 AND project_id = $2 FOR UPDATE`,
			eventID, projectID).Scan(&p.EventID, &state)
		if noRows(err) {
			return notFound(paywatch.MsgEventNotFound)
		}
		if err != nil {
			return err
		}
		if state == WebhookSkipped {
			accountID, limit, err := webhookQuota(ctx, tx, projectID)
			if err != nil {
				return err
			}
			if accountID != 0 && limit >= 0 {
				if _, err := tx.Exec(ctx, `
					INSERT INTO daily_usage (account_id, day, kind, count) VALUES ($1, $2::date, 'webhooks', 1)
					ON CONFLICT (account_id, day, kind) DO UPDATE SET count = daily_usage.count + 1`,
					accountID, now.Format(time.DateOnly)); err != nil {
					return err
				}
			}
		}
		if err := tx.QueryRow(ctx, `
			UPDATE webhook_events SET state = 'pending', generation = generation + 1, updated_at = $2
			WHERE event_id = $1 RETURNING generation`, p.EventID, now).Scan(&p.Generation); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT COALESCE(max(attempt), 0) + 1 FROM webhook_attempts WHERE event_id = $1`,
			p.EventID).Scan(&p.NextAttempt)
	})
	if err != nil {
		return PendingWebhook{}, fmt.Errorf("prepare redelivery of %s: %w", eventID, err)
	}
	return p, nil
}

// PendingWebhook is a pending event to start a delivery for.
type PendingWebhook struct {
	EventID string
	// NextAttempt is the number its next attempt is logged under.
	NextAttempt int
	// Generation is the event's delivery generation, which the run started
	// for it carries: 0 for its first delivery, one more for each
	// redelivery.
	Generation int
	// Replace is set for a redelivery whose run was never started (its
	// start failed, or its process died first): the run started now
	// replaces whatever run holds the event's workflow ID, which can only
	// be one the redelivery replaced, so that it need not wait for that
	// run's next scheduled attempt to end it.
	Replace bool
}

// MarkWebhookStarted records that the run of an event's delivery
// generation was started, so that PendingWebhooks no longer asks for it to
// replace the running one.
func (s *Store) MarkWebhookStarted(ctx context.Context, eventID string, generation int) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE webhook_events SET started_generation = $2 WHERE event_id = $1 AND started_generation < $2`, eventID, generation)
	if err != nil {
		return fmt.Errorf("mark webhook %s started: %w", eventID, err)
	}
	return nil
}

// PendingWebhooks lists up to limit pending events, oldest first, whose
// project has a webhook URL now: events raised while the project had none,
// and redeliveries whose workflow did not start. projectID 0 lists every
// project's; minAge leaves out events changed more recently, which their
// own workflow is about to deliver.
func (s *Store) PendingWebhooks(ctx context.Context, projectID int64, minAge time.Duration, limit int) ([]PendingWebhook, error) {
	return s.PendingWebhooksAged(ctx, projectID, minAge, minAge, limit)
}

// PendingWebhooksAged is PendingWebhooks with a minimum age of its own,
// paymentMinAge, for the first delivery of a payment's event (generation
// 0), which the payment workflow that queued it may be making still: a
// lean payment run makes the first attempt itself. Redeliveries and
// transfer.unmatched events keep minAge.
func (s *Store) PendingWebhooksAged(ctx context.Context, projectID int64, minAge, paymentMinAge time.Duration, limit int) ([]PendingWebhook, error) {
	now := s.now().UTC()
	rows, err := s.pool.Query(ctx, `
		SELECT e.event_id::text,
		       COALESCE((SELECT max(a.attempt) FROM webhook_attempts a WHERE a.event_id = e.event_id), 0) + 1,
		       e.generation, e.started_generation < e.generation
		FROM webhook_events e JOIN projects p ON p.id = e.project_id
		WHERE e.state = 'pending' AND COALESCE(p.webhook_url, '') <> ''
		  AND ($1::bigint = 0 OR e.project_id = $1) AND e.updated_at <= $2
		  AND (e.payment_id IS NULL OR e.generation > 0 OR e.updated_at <= $4)
		ORDER BY e.created_at, e.event_id
		LIMIT $3`, projectID, now.Add(-minAge), limit, now.Add(-paymentMinAge))
	if err != nil {
		return nil, fmt.Errorf("list pending webhooks: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (PendingWebhook, error) {
		var p PendingWebhook
		err := r.Scan(&p.EventID, &p.NextAttempt, &p.Generation, &p.Replace)
		return p, err
	})
}

// WebhookPaymentInfo is what a webhook payload takes from the payments row
// rather than from the workflow: the merchant's references and metadata.
type WebhookPaymentInfo struct {
	ProjectID       int64
	ExternalRef     string
	ExternalOrderID *string
	// Metadata is the merchant's JSON object, nil if none.
	Metadata  json.RawMessage
	CreatedAt time.Time
	// Link is set for payments made through a payment link.
	Link *WebhookLinkInfo
	// Memo is a memo payment's memo (SOLANA), nil otherwise.
	Memo *string
}

// WebhookLinkInfo holds the payment-link fields of a link payment's
// webhooks.
type WebhookLinkInfo struct {
	PaymentLinkID   string
	PaymentLinkSlug string
	BuyerEmail      *string
	BuyerName       *string
	BuyerNote       *string
}

// WebhookPaymentInfo reads the payload fields a webhook takes from the
// payment row. It reads the row as JSON, so the payment-link columns
// (payment_link_id, buyer_email, buyer_name, buyer_note and, if present,
// payment_link_slug) are picked up as soon as a migration adds them; the
// link's slug is otherwise looked up in a payment_links table if one exists.
func (s *Store) WebhookPaymentInfo(ctx context.Context, paymentID string) (WebhookPaymentInfo, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT to_jsonb(p) FROM payments p WHERE p.id = $1`, paymentID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookPaymentInfo{}, paywatch.Errorf(paywatch.ENOTFOUND, paywatch.MsgPaymentNotFound)
	}
	if err != nil {
		return WebhookPaymentInfo{}, fmt.Errorf("read payment %s: %w", paymentID, err)
	}
	var row struct {
		ProjectID       int64           `json:"project_id"`
		ExternalRef     string          `json:"external_ref"`
		ExternalOrderID *string         `json:"external_order_id"`
		Metadata        json.RawMessage `json:"metadata"`
		CreatedAt       time.Time       `json:"created_at"`
		PaymentLinkID   json.RawMessage `json:"payment_link_id"`
		PaymentLinkSlug *string         `json:"payment_link_slug"`
		BuyerEmail      *string         `json:"buyer_email"`
		BuyerName       *string         `json:"buyer_name"`
		BuyerNote       *string         `json:"buyer_note"`
		Memo            *string         `json:"memo"`
	}
	if err := json.Unmarshal(raw, &row); err != nil {
		return WebhookPaymentInfo{}, fmt.Errorf("decode payment %s: %w", paymentID, err)
	}
	info := WebhookPaymentInfo{
		ProjectID:       row.ProjectID,
		ExternalRef:     row.ExternalRef,
		ExternalOrderID: row.ExternalOrderID,
		CreatedAt:       row.CreatedAt.UTC(),
		Memo:            row.Memo,
	}
	if m := strings.TrimSpace(string(row.Metadata)); m != "" && m != "null" {
		info.Metadata = row.Metadata
	}
	linkID := strings.Trim(strings.TrimSpace(string(row.PaymentLinkID)), `"`)
	if linkID == "" || linkID == "null" {
		return info, nil
	}
	link := &WebhookLinkInfo{PaymentLinkID: linkID, BuyerEmail: row.BuyerEmail, BuyerName: row.BuyerName, BuyerNote: row.BuyerNote}
	if row.PaymentLinkSlug != nil {
		link.PaymentLinkSlug = *row.PaymentLinkSlug
	} else {
		err := s.pool.QueryRow(ctx, `SELECT slug FROM payment_links WHERE id::text = $1`, linkID).Scan(&link.PaymentLinkSlug)
		var pgErr *pgconn.PgError
		if err != nil && !errors.Is(err, pgx.ErrNoRows) && !(errors.As(err, &pgErr) && pgErr.Code == "42P01") {
			return WebhookPaymentInfo{}, fmt.Errorf("read payment link of %s: %w", paymentID, err)
		}
	}
	info.Link = link
	return info, nil
}

// WebhookDelivery is what one delivery attempt needs, read afresh for every
// attempt so that a changed webhook URL or a regenerated secret applies.
type WebhookDelivery struct {
	EventID string
	Event   paywatch.Event
	// Payload is the exact body to send.
	Payload []byte
	State   WebhookState
	// Generation is the event's delivery generation (PendingWebhook): a
	// run of an older one was replaced by a redelivery and sends nothing.
	Generation int
	// URL and Secret are the project's current webhook URL and secret; ""
	// when unset.
	URL    string
	Secret string
}

// WebhookDelivery reads an event with its project's current webhook URL
// and secret.
func (s *Store) WebhookDelivery(ctx context.Context, eventID string) (WebhookDelivery, error) {
	var d WebhookDelivery
	var url, secret *string
	err := s.pool.QueryRow(ctx, `
		SELECT e.event_id::text, e.event, e.payload::text, e.state, e.generation, pr.webhook_url, pr.webhook_secret
		FROM webhook_events e JOIN projects pr ON pr.id = e.project_id
		WHERE e.event_id = $1`, eventID).Scan(&d.EventID, &d.Event, &d.Payload, &d.State, &d.Generation, &url, &secret)
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookDelivery{}, paywatch.Errorf(paywatch.ENOTFOUND, "webhook event %s not found", eventID)
	}
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("read webhook event %s: %w", eventID, err)
	}
	if url != nil {
		d.URL = *url
	}
	if secret != nil {
		d.Secret = *secret
	}
	return d, nil
}

// WebhookAttempt is one delivery attempt as the deliveries log shows it.
type WebhookAttempt struct {
	EventID string
	// Attempt counts from 1.
	Attempt int
	// StatusCode is the receiver's HTTP status, 0 if there was no answer.
	StatusCode int
	// ResponseBody is the receiver's answer (or why there was none); it is
	// cut to MaxWebhookResponseBody characters.
	ResponseBody string
	State        WebhookState
	// Generation is the delivery generation of the run that made the
	// attempt (PendingWebhook.Generation).
	Generation int
}

// RecordWebhookAttempt logs an attempt and sets the event's state to the
// attempt's. Recording the same attempt again (an activity retried after a
// crash) overwrites it; a delivered or skipped event keeps its state. An
// attempt of an older generation than the event's, made by a run that a
// redelivery replaced and logged after the redelivery was accepted, leaves
// the event's state alone and is logged only under a number still free:
// the redelivery's own attempts take their numbers, and its state stands.
func (s *Store) RecordWebhookAttempt(ctx context.Context, a WebhookAttempt) error {
	now := s.now().UTC()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return recordAttempt(ctx, tx, a, now)
	})
	if err != nil {
		return fmt.Errorf("record webhook attempt %s #%d: %w", a.EventID, a.Attempt, err)
	}
	return nil
}

func recordAttempt(ctx context.Context, tx pgx.Tx, a WebhookAttempt, now time.Time) error {
	var code *int
	if a.StatusCode != 0 {
		code = &a.StatusCode
	}
	// The event's row lock orders this write with PrepareRedelivery's: a
	// redelivery is either before it (and this attempt is stale) or after.
	var generation int
	err := tx.QueryRow(ctx, `SELECT generation FROM webhook_events WHERE event_id = $1 FOR UPDATE`, a.EventID).Scan(&generation)
	if err != nil && !noRows(err) {
		return err
	}
	stale := err == nil && a.Generation < generation
	onConflict := `DO UPDATE SET status_code = EXCLUDED.status_code,
			response_body = EXCLUDED.response_body, state = EXCLUDED.state, created_at = EXCLUDED.created_at`
	if stale {
		onConflict = `DO NOTHING`
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO webhook_attempts (event_id, attempt, status_code, response_body, state, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (event_id, attempt) `+onConflict,
		a.EventID, a.Attempt, code, CutResponseBody(a.ResponseBody), string(a.State), now); err != nil {
		return err
	}
	if stale {
		return nil
	}
	_, err = tx.Exec(ctx, `
		UPDATE webhook_events SET state = $2, updated_at = $3
		WHERE event_id = $1 AND state NOT IN ('delivered', 'skipped')`, a.EventID, string(a.State), now)
	return err
}

// CutResponseBody returns at most MaxWebhookResponseBody characters of a
// receiver's answer, as valid UTF-8 without NUL bytes (which PostgreSQL
// text cannot hold).
func CutResponseBody(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxWebhookResponseBody {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxWebhookResponseBody {
			return s[:i]
		}
		n++
	}
	return s
}

// WebhookAttempts lists an event's attempts in order, for tests and
// operators.
func (s *Store) WebhookAttempts(ctx context.Context, eventID string) ([]WebhookAttempt, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT event_id::text, attempt, COALESCE(status_code, 0), COALESCE(response_body, ''), state
		FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`, eventID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookAttempt, error) {
		var a WebhookAttempt
		err := r.Scan(&a.EventID, &a.Attempt, &a.StatusCode, &a.ResponseBody, &a.State)
		return a, err
	})
}
