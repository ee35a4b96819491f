package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// StatusChange is one step of a payment's status timeline (migration
// 00013): the status it entered, what had been paid then, and when.
type StatusChange struct {
	Status paywatch.Status
	// PaidAmount is the confirmed amount at that moment, at the payment's
	// decimals then.
	PaidAmount paywatch.Amount
	At         time.Time
}

// createdPayment writes the first step of a new payment's timeline,
// pending at its creation, in the transaction that creates it, and returns
// the payment as that transaction wrote it, in one statement.
func createdPayment(ctx context.Context, tx pgx.Tx, paymentID string) (*Payment, error) {
	p, err := scanPayment(tx.QueryRow(ctx, `
		WITH first_step AS (
			INSERT INTO payment_status_changes (payment_id, status, paid_amount, decimals, state_version, at)
			SELECT id, status, paid_amount, decimals, state_version, created_at FROM payments WHERE id = $1
			ON CONFLICT (payment_id, state_version) DO NOTHING
		)`+paymentSelect+` WHERE pay.id = $1`, paymentID))
	if err != nil {
		return nil, fmt.Errorf("record and reload created payment: %w", err)
	}
	return p, nil
}

// recordStatusChange adds the payment's current status to its timeline
// when it differs from the last one recorded, in the transaction that has
// just saved a newer state (and so holds the payment's row lock: saves of
// one payment take turns, and each sees the rows of those before it). A
// replayed save never gets here, and the (payment_id, state_version) key
// keeps it from adding a row if it did. changed reports whether it added
// one: the save moved the payment into a new status.
func recordStatusChange(ctx context.Context, tx pgx.Tx, paymentID string) (changed bool, err error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO payment_status_changes (payment_id, status, paid_amount, decimals, state_version, at)
		SELECT p.id, p.status, p.paid_amount, p.decimals, p.state_version, p.updated_at FROM payments p
		WHERE p.id = $1 AND p.status IS DISTINCT FROM (
			-- The payment's last row is its newest state_version too (saves
			-- only add rows for newer states): this walks the unique
			-- (payment_id, state_version) index. ORDER BY id walked the
			-- primary key back through every later payment's rows, a
			-- scan that grew with the table (issue 15).
			SELECT c.status FROM payment_status_changes c WHERE c.payment_id = p.id ORDER BY c.state_version DESC LIMIT 1)
		ON CONFLICT (payment_id, state_version) DO NOTHING`, paymentID)
	if err != nil {
		return false, fmt.Errorf("record status change: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// PaymentTimeline returns the statuses a project's payment went through,
// oldest first; another project's payment is ENOTFOUND "Payment not
// found". Payments created before the timeline existed show their
// creation and their current status only.
func (s *Store) PaymentTimeline(ctx context.Context, projectID int64, paymentID string) ([]StatusChange, error) {
	if !paywatch.ValidPaymentID(paymentID) {
		return nil, notFound(paywatch.MsgPaymentNotFound)
	}
	var out []StatusChange
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payments WHERE id = $1 AND project_id = $2)`,
			paymentID, projectID).Scan(&exists); err != nil {
			return fmt.Errorf("load payment: %w", err)
		}
		if !exists {
			return notFound(paywatch.MsgPaymentNotFound)
		}
		rows, err := tx.Query(ctx, `
			SELECT status, paid_amount::text, decimals, at FROM payment_status_changes
			WHERE payment_id = $1 ORDER BY id`, paymentID)
		if err != nil {
			return fmt.Errorf("load timeline: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (StatusChange, error) {
			var c StatusChange
			var paid string
			var decimals int
			if err := r.Scan(&c.Status, &paid, &decimals, &c.At); err != nil {
				return c, err
			}
			c.At = c.At.UTC()
			var err error
			c.PaidAmount, err = amountOf(paid, decimals)
			return c, err
		})
		if err != nil {
			return fmt.Errorf("load timeline: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
