package store

import (
	"context"
	"errors"
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
func (s *Store) ClaimTxHash(ctx context.Context, n paywatch.Network, txHash, paymentID string) error {
	var owner string
	err := s.pool.QueryRow(ctx, `
		INSERT INTO tx_claims (network, tx_hash, payment_id, created_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (network, tx_hash) DO NOTHING
		RETURNING payment_id::text`,
		string(n), txHash, paymentID, s.now().UTC()).Scan(&owner)
	if err == nil {
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("claim tx hash %s: %w", txHash, err)
	}
	// Lost the insert: a claim exists (the conflicting row is committed,
	// since ON CONFLICT waited for it).
	if err := s.pool.QueryRow(ctx, `SELECT payment_id::text FROM tx_claims WHERE network = $1 AND tx_hash = $2`,
		string(n), txHash).Scan(&owner); err != nil {
		return fmt.Errorf("read claim of tx hash %s: %w", txHash, err)
	}
	if strings.EqualFold(owner, paymentID) {
		return nil
	}
	return paywatch.Errorf(paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
}
