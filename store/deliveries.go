package store

import (
	"context"
	"fmt"
	"time"

	"github.com/paywatch/paywatch"
)

// Delivery is one webhook delivery attempt as operators see it
// (operations.md §2 webhook-deliveries). An event skipped without an
// attempt appears once with Attempt 0. A pending event with no attempt yet
// (queued moments ago, or waiting for the project's first webhook URL) is
// not listed: nothing was tried, and the log's states (delivered, failed,
// retrying, skipped) have none for "waiting", so it must not show as
// retrying for as long as the project has no URL.
type Delivery struct {
	ID           string
	EventID      string // the handle of a redelivery
	Event        string
	PaymentID    string
	Attempt      int
	StatusCode   *int
	ResponseBody *string
	State        string
	CreatedAt    time.Time
}

// DeliveryFilter selects deliveries of a project.
type DeliveryFilter struct {
	PaymentID string // "" for all payments
	Limit     int
	Offset    int
}

// ListDeliveries returns a project's webhook delivery attempts, newest
// first.
func (s *Store) ListDeliveries(ctx context.Context, projectID int64, f DeliveryFilter) ([]Delivery, error) {
	var paymentID *string
	if f.PaymentID != "" {
		if !paywatch.ValidPaymentID(f.PaymentID) {
			return []Delivery{}, nil
		}
		paymentID = &f.PaymentID
	}
	rows, err := s.pool.Query(ctx, `
		SELECT COALESCE(a.id::text, e.event_id::text), e.event_id::text, e.event, COALESCE(e.payment_id::text, ''), COALESCE(a.attempt, 0),
		       a.status_code, a.response_body,
		       COALESCE(a.state, e.state), COALESCE(a.created_at, e.created_at)
		FROM webhook_events e LEFT JOIN webhook_attempts a ON a.event_id = e.event_id
		WHERE e.project_id = $1 AND ($2::uuid IS NULL OR e.payment_id = $2::uuid)
		  AND (a.id IS NOT NULL OR e.state <> 'pending')
		ORDER BY COALESCE(a.created_at, e.created_at) DESC, e.sequence DESC, a.attempt DESC NULLS LAST
		LIMIT $3 OFFSET $4`, projectID, paymentID, f.Limit, f.Offset)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	out := []Delivery{}
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.ID, &d.EventID, &d.Event, &d.PaymentID, &d.Attempt, &d.StatusCode, &d.ResponseBody, &d.State, &d.CreatedAt); err != nil {
			return nil, err
		}
		d.CreatedAt = d.CreatedAt.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}
