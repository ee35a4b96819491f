package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// This file is the store's side of confirmations pushed at the exact block
// (issue 15): awaited_confirmations holds every transfer a payment counts
// that still waits for its network's confirmations. The payment's state
// save keeps it in step (awaitConfirmations); the network's scanner reads
// the rows whose block is deep enough at the head it just saw
// (DueConfirmations), signals each payment once and marks its rows
// (MarkConfirmationsSignalled).

// AwaitedConfirmation is a transfer a payment counts that waits for its
// confirmations, in the block the payment last saw it in.
type AwaitedConfirmation struct {
	PaymentID   string
	Network     paywatch.Network
	TxHash      string
	LogIndex    uint32
	BlockNumber uint64
	BlockHash   string
}

// awaitsConfirmations reports whether a payment in status s can still count
// a transfer that gets its confirmations: open, or expired in its late
// window (an expired payment whose window closed has ended its workflow,
// and a signal to it is dropped).
func awaitsConfirmations(s paywatch.Status) bool {
	switch s {
	case paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPartial, paywatch.StatusExpired:
		return true
	}
	return false
}

// awaitConfirmations makes the payment's awaited_confirmations rows those
// of its unconfirmed transactions, in the transaction that saves its state
// (only a save that applied: an older one must not bring back rows). A
// transfer whose block changed (mined again after a reorg) takes its new
// block and is signalled again; an unchanged one keeps its signalled_at, so
// a save that changes something else does not signal it twice.
func awaitConfirmations(ctx context.Context, tx pgx.Tx, st paywatch.PaymentState) error {
	var (
		hashes, blockHashes []string
		indexes, blocks     []int64
	)
	if st.Network != "" && awaitsConfirmations(st.Status) {
		for _, t := range st.Transactions {
			if t.Confirmed {
				continue
			}
			hashes = append(hashes, t.TxHash)
			indexes = append(indexes, int64(t.LogIndex))
			blocks = append(blocks, int64(t.BlockNumber))
			blockHashes = append(blockHashes, t.BlockHash)
		}
	}
	// One statement: the rows of transfers no longer awaited go, the others
	// are written. The two sets are disjoint, so the CTE's delete and the
	// insert never touch one row.
	if _, err := tx.Exec(ctx, `
		WITH awaited AS (
			SELECT * FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::text[])
			       AS u(tx_hash, log_index, block_number, block_hash)
		), gone AS (
			DELETE FROM awaited_confirmations a
			WHERE a.payment_id = $1::uuid
			  AND NOT EXISTS (SELECT 1 FROM awaited u WHERE u.tx_hash = a.tx_hash AND u.log_index = a.log_index)
		)
		INSERT INTO awaited_confirmations AS a (payment_id, network, tx_hash, log_index, block_number, block_hash)
		SELECT $1::uuid, $2::text, u.tx_hash, u.log_index, u.block_number, u.block_hash
		FROM awaited u
		ORDER BY u.tx_hash, u.log_index
		ON CONFLICT (payment_id, network, tx_hash, log_index) DO UPDATE
		SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, signalled_at = NULL
		WHERE a.block_number <> EXCLUDED.block_number OR a.block_hash <> EXCLUDED.block_hash`,
		st.PaymentID, string(st.Network), hashes, indexes, blocks, blockHashes); err != nil {
		return fmt.Errorf("await confirmations: %w", err)
	}
	return nil
}

// DueConfirmations returns up to limit awaited transfers of network n not
// yet signalled whose block is at most upTo: those that have the network's
// confirmations at the head the scanner saw (upTo = head − confirmations +
// 1). The oldest blocks come first.
func (s *Store) DueConfirmations(ctx context.Context, n paywatch.Network, upTo uint64, limit int) ([]AwaitedConfirmation, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT payment_id::text, tx_hash, log_index, block_number, block_hash
		FROM awaited_confirmations
		WHERE network = $1 AND signalled_at IS NULL AND block_number <= $2
		ORDER BY block_number, payment_id, tx_hash, log_index
		LIMIT $3`, string(n), int64(upTo), limit)
	if err != nil {
		return nil, fmt.Errorf("due confirmations on %s: %w", n, err)
	}
	defer rows.Close()
	var out []AwaitedConfirmation
	for rows.Next() {
		a := AwaitedConfirmation{Network: n}
		var logIndex, block int64
		if err := rows.Scan(&a.PaymentID, &a.TxHash, &logIndex, &block, &a.BlockHash); err != nil {
			return nil, fmt.Errorf("due confirmations on %s: %w", n, err)
		}
		a.LogIndex, a.BlockNumber = uint32(logIndex), uint64(block)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("due confirmations on %s: %w", n, err)
	}
	return out, nil
}

// MarkConfirmationsSignalled records that the payments were signalled
// about these transfers in these blocks; a row whose block changed since
// (mined again) stays due.
func (s *Store) MarkConfirmationsSignalled(ctx context.Context, as []AwaitedConfirmation) error {
	if len(as) == 0 {
		return nil
	}
	var (
		payments, networks, hashes, blockHashes []string
		indexes, blocks                         []int64
	)
	for _, a := range as {
		payments = append(payments, a.PaymentID)
		networks = append(networks, string(a.Network))
		hashes = append(hashes, a.TxHash)
		indexes = append(indexes, int64(a.LogIndex))
		blocks = append(blocks, int64(a.BlockNumber))
		blockHashes = append(blockHashes, a.BlockHash)
	}
	// The rows are locked in key order, the order a state save writes
	// them in, so the two cannot deadlock.
	if _, err := s.pool.Exec(ctx, `
		WITH marked AS (
			SELECT a.payment_id, a.network, a.tx_hash, a.log_index
			FROM awaited_confirmations a
			JOIN unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[])
			     AS u(payment_id, network, tx_hash, log_index, block_number, block_hash)
			  ON a.payment_id = u.payment_id AND a.network = u.network AND a.tx_hash = u.tx_hash
			 AND a.log_index = u.log_index AND a.block_number = u.block_number AND a.block_hash = u.block_hash
			ORDER BY a.payment_id, a.network, a.tx_hash, a.log_index
			FOR UPDATE OF a
		)
		UPDATE awaited_confirmations a SET signalled_at = $7
		FROM marked m
		WHERE a.payment_id = m.payment_id AND a.network = m.network AND a.tx_hash = m.tx_hash AND a.log_index = m.log_index`,
		payments, networks, hashes, indexes, blocks, blockHashes, s.now().UTC()); err != nil {
		return fmt.Errorf("mark confirmations signalled: %w", err)
	}
	return nil
}
