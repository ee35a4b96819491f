package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// ClaimTxHash claims a transaction hash on a network for a payment (pool +
// txid): the first valid claim wins, and the primary key of tx_claims
// decides races between concurrent claims. Claiming again for the same
// payment succeeds, so the activity can retry; a hash claimed by another
// payment gives a *paywatch.Error with code ECONFLICT and paywatch.MsgTxHashClaimed.
//
// ts are the transaction's transfers to the payment's address that the
// payment is to count. They are claimed for it in transfer_claims, in the
// same database transaction, as the scanners and final checks claim what
// they credit (ClaimTransfers): one transfer pays one payment whichever
// path sees it first, also across a mode switch that left a micro_amount
// and a txid payment on one pool address (issue 24). A transfer another
// payment claimed refuses the hash with the same 409, and so does any
// transfer of the transaction to the payment's address claimed by another
// payment, so a caller that passes no transfers (an activity scheduled by
// an older worker) is held to the same rule.
func (s *Store) ClaimTxHash(ctx context.Context, n paywatch.Network, txHash, paymentID string, ts []paywatch.Transfer) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var owner string
		err := tx.QueryRow(ctx, `
			INSERT INTO tx_claims (network, tx_hash, payment_id, created_at)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (network, tx_hash) DO NOTHING
			RETURNING payment_id::text`,
			string(n), txHash, paymentID, s.now().UTC()).Scan(&owner)
		switch {
		case noRows(err):
			// Lost the insert: a claim exists (the conflicting row is
			// committed, since ON CONFLICT waited for it).
			if err := tx.QueryRow(ctx, `SELECT payment_id::text FROM tx_claims WHERE network = $1 AND tx_hash = $2`,
				string(n), txHash).Scan(&owner); err != nil {
				return fmt.Errorf("read claim of tx hash %s: %w", txHash, err)
			}
			if !strings.EqualFold(owner, paymentID) {
				return paywatch.Errorf(paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
			}
		case err != nil:
			return fmt.Errorf("claim tx hash %s: %w", txHash, err)
		}
		claims := make([]TransferClaim, 0, len(ts))
		for _, t := range ts {
			claims = append(claims, TransferClaim{Transfer: t, PaymentID: paymentID})
		}
		owners, err := claimTransfers(ctx, tx, n, claims, nil, s.now().UTC())
		if err != nil {
			return err
		}
		for _, o := range owners {
			if !strings.EqualFold(o, paymentID) {
				return paywatch.Errorf(paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
			}
		}
		var taken bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (
				SELECT 1 FROM transfer_claims c JOIN payments p ON p.id = $3::uuid
				WHERE c.network = $1 AND c.tx_hash = $2 AND c.to_address = p.address AND c.payment_id <> p.id)`,
			string(n), txHash, paymentID).Scan(&taken); err != nil {
			return fmt.Errorf("read transfer claims of tx hash %s: %w", txHash, err)
		}
		if taken {
			return paywatch.Errorf(paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
		}
		return nil
	})
}
