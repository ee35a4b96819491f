package store

import (
	"context"
	"fmt"

	"github.com/paywatch/paywatch"
)

// PaymentPageInfo is what a hosted payment page names besides the payment
// itself: who is paid and for what.
type PaymentPageInfo struct {
	// Shop is the project's display name (its name).
	Shop string
	// LinkTitle is the title of the payment link the payment was made
	// through; "" for a payment created through the API.
	LinkTitle string
}

// PaymentPageInfo returns the shop and item of payment paymentID for its
// hosted page (404 for an unknown id).
func (s *Store) PaymentPageInfo(ctx context.Context, paymentID string) (PaymentPageInfo, error) {
	if !paywatch.ValidPaymentID(paymentID) {
		return PaymentPageInfo{}, notFound(paywatch.MsgPaymentNotFound)
	}
	var info PaymentPageInfo
	var title *string
	err := s.pool.QueryRow(ctx, `
		SELECT pr.name, l.title
		FROM payments p
		JOIN projects pr ON pr.id = p.project_id
		LEFT JOIN payment_links l ON l.id = p.payment_link_id
		WHERE p.id = $1`, paymentID).Scan(&info.Shop, &title)
	if noRows(err) {
		return PaymentPageInfo{}, notFound(paywatch.MsgPaymentNotFound)
	}
	if err != nil {
		return PaymentPageInfo{}, fmt.Errorf("load payment page info: %w", err)
	}
	info.LinkTitle = deref(title)
	return info, nil
}
