package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// Event is one webhook event as the merchant's event log shows it
// (operations.md §8, GET /v1/events): the event, its exact payload and
// where its delivery stands.
type Event struct {
	EventID   string
	Event     paywatch.Event
	PaymentID string
	Sequence  int
	CreatedAt time.Time
	// State is the outcome of the event's latest delivery: pending until
	// an attempt is made (no webhook URL yet, or a redelivery about to
	// start), then retrying, delivered or failed; skipped when the daily
	// quota left it unsent.
	State WebhookState
	// Attempts counts the requests made to the receiver over every
	// delivery of the event, redeliveries included; the logged "attempt"
	// of a quota skip sent nothing and does not count.
	Attempts int
	// Payload is the body every delivery sends.
	Payload json.RawMessage
}

// EventFilter selects a project's webhook events.
type EventFilter struct {
	Limit  int
	Offset int
	// PaymentID keeps one payment's events; nil for all. An id that is not
	// a payment id matches none.
	PaymentID *string
	// CreatedAfter keeps events raised strictly after it.
	CreatedAfter *time.Time
	// State keeps the events in one delivery state.
	State *WebhookState
}

// ValidWebhookState reports whether st is one of the delivery states.
func ValidWebhookState(st WebhookState) bool {
	switch st {
	case WebhookPending, WebhookDelivered, WebhookFailed, WebhookRetrying, WebhookSkipped:
		return true
	}
	return false
}

// ListEvents returns a page of a project's webhook events, newest first
// (events of one payment raised at the same instant by sequence), and the
// total number matching the filter, both read from one snapshot so that
// the page and the total agree.
func (s *Store) ListEvents(ctx context.Context, projectID int64, f EventFilter) ([]Event, int, error) {
	out := []Event{}
	if f.PaymentID != nil && !paywatch.ValidPaymentID(*f.PaymentID) {
		return out, 0, nil
	}
	where := []string{"e.project_id = $1"}
	args := []any{projectID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.PaymentID != nil {
		where = append(where, "e.payment_id = "+arg(*f.PaymentID)+"::uuid")
	}
	if f.CreatedAfter != nil {
		where = append(where, "e.created_at > "+arg(*f.CreatedAfter))
	}
	if f.State != nil {
		where = append(where, "e.state = "+arg(string(*f.State)))
	}
	cond := strings.Join(where, " AND ")
	var total int
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_events e WHERE `+cond, args...).Scan(&total); err != nil {
			return err
		}
		// The query is built first: arg appends to args, which the call
		// below must read only afterwards.
		page := `
			SELECT e.event_id::text, e.event, COALESCE(e.payment_id::text, ''), e.sequence, e.created_at, e.state,
			       (SELECT count(*) FROM webhook_attempts a WHERE a.event_id = e.event_id AND a.state <> 'skipped'),
			       e.payload::text
			FROM webhook_events e WHERE ` + cond + `
			ORDER BY e.created_at DESC, e.sequence DESC, e.event_id DESC
			LIMIT ` + arg(f.Limit) + ` OFFSET ` + arg(f.Offset)
		rows, err := tx.Query(ctx, page, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ev Event
			var payload string
			if err := rows.Scan(&ev.EventID, &ev.Event, &ev.PaymentID, &ev.Sequence, &ev.CreatedAt, &ev.State,
				&ev.Attempts, &payload); err != nil {
				return err
			}
			ev.CreatedAt = ev.CreatedAt.UTC()
			ev.Payload = json.RawMessage(payload)
			out = append(out, ev)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook events: %w", err)
	}
	return out, total, nil
}
