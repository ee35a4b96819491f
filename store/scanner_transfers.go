package store

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// maxRecentTransfers bounds RecentTransfers: the reorg check looks at a
// window of the newest blocks, where a sane chain has far fewer.
const maxRecentTransfers = 10_000

// RecentTransfers returns network n's recorded transfers that are still
// canonical as far as the store knows, in blocks from fromBlock on, oldest
// first (at most 10,000).
func (s *Store) RecentTransfers(ctx context.Context, n paywatch.Network, fromBlock uint64) ([]paywatch.Transfer, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT tx_hash, log_index, block_number, block_hash, token, from_address, to_address, amount::text, memos
		FROM chain_transfers
		WHERE network = $1 AND block_number >= $2 AND NOT removed
		ORDER BY block_number, tx_hash, log_index
		LIMIT $3`,
		string(n), int64(fromBlock), maxRecentTransfers)
	if err != nil {
		return nil, fmt.Errorf("recent %s transfers: %w", n, err)
	}
	defer rows.Close()
	var out []paywatch.Transfer
	for rows.Next() {
		var t paywatch.Transfer
		var logIndex, block int64
		var token, amount string
		if err := rows.Scan(&t.TxHash, &logIndex, &block, &t.BlockHash, &token, &t.From, &t.To, &amount, &t.Memos); err != nil {
			return nil, fmt.Errorf("recent %s transfers: %w", n, err)
		}
		t.LogIndex, t.BlockNumber, t.Token = uint32(logIndex), uint64(block), paywatch.Token(token)
		t.Memos = memosOf(t.Memos)
		var ok bool
		if t.Amount, ok = new(big.Int).SetString(amount, 10); !ok {
			return nil, fmt.Errorf("recent %s transfers: bad amount %q", n, amount)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent %s transfers: %w", n, err)
	}
	return out, nil
}

// RecordedTransfers is what the scanner has recorded of the transfers to
// one address: the blocks it has read and what it found in them.
type RecordedTransfers struct {
	// Scanned is false when the network has no cursor: the scanner has
	// read nothing, and Height and Transfers are zero.
	Scanned bool
	// Height is the network's cursor: every block up to it has been read.
	Height uint64
	// RecordedAt is when the scanner last moved the cursor.
	RecordedAt time.Time
	// Transfers are the recorded, still canonical transfers in blocks up
	// to Height, oldest first.
	Transfers []paywatch.Transfer
}

// RecordedTransfersTo returns network n's recorded, still canonical
// transfers of token to address (normalised) in blocks from fromBlock up to
// the network's cursor, with the cursor's height, read together (one
// snapshot), so a caller can ask the chain for the blocks after the cursor
// alone. The scanner records every transfer that concerns a watched
// payment, so for a watched payment's own address this is every transfer
// of its token there since its start block.
func (s *Store) RecordedTransfersTo(ctx context.Context, n paywatch.Network, token paywatch.Token, address string, fromBlock uint64) (RecordedTransfers, error) {
	var out RecordedTransfers
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return out, fmt.Errorf("recorded %s transfers: begin: %w", n, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	out, err = recordedTransfersTo(ctx, tx, n, token, address, fromBlock)
	if err != nil {
		return RecordedTransfers{}, fmt.Errorf("recorded %s transfers to %s: %w", n, address, err)
	}
	return out, nil
}

// recordedTransfersTo reads the cursor, then the transfers under it.
func recordedTransfersTo(ctx context.Context, tx pgx.Tx, n paywatch.Network, token paywatch.Token, address string, fromBlock uint64) (RecordedTransfers, error) {
	var out RecordedTransfers
	var height int64
	err := tx.QueryRow(ctx, `SELECT height, updated_at FROM chain_cursors WHERE network = $1`, string(n)).Scan(&height, &out.RecordedAt)
	if noRows(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Scanned, out.Height = true, uint64(height)
	if fromBlock > out.Height {
		return out, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT tx_hash, log_index, block_number, block_hash, from_address, amount::text, memos
		FROM chain_transfers
		WHERE network = $1 AND to_address = $2 AND token = $3
		  AND block_number >= $4 AND block_number <= $5 AND NOT removed
		ORDER BY block_number, log_index, tx_hash`,
		string(n), address, string(token), int64(fromBlock), height)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		t := paywatch.Transfer{Network: n, Token: token, To: address}
		var logIndex, block int64
		var amount string
		if err := rows.Scan(&t.TxHash, &logIndex, &block, &t.BlockHash, &t.From, &amount, &t.Memos); err != nil {
			return out, err
		}
		t.LogIndex, t.BlockNumber = uint32(logIndex), uint64(block)
		t.Memos = memosOf(t.Memos)
		var ok bool
		if t.Amount, ok = new(big.Int).SetString(amount, 10); !ok {
			return out, fmt.Errorf("bad amount %q", amount)
		}
		out.Transfers = append(out.Transfers, t)
	}
	return out, rows.Err()
}

// ChainTransferByKey returns one recorded transfer; ok is false if it is
// not recorded.
func (s *Store) ChainTransferByKey(ctx context.Context, n paywatch.Network, k paywatch.TransferKey) (paywatch.Transfer, bool, error) {
	t := paywatch.Transfer{Network: n, TxHash: k.TxHash, LogIndex: k.LogIndex}
	var block int64
	var token, amount string
	err := s.pool.QueryRow(ctx, `
		SELECT block_number, block_hash, token, from_address, to_address, amount::text, removed, memos
		FROM chain_transfers WHERE network = $1 AND tx_hash = $2 AND log_index = $3`,
		string(n), k.TxHash, int64(k.LogIndex)).Scan(&block, &t.BlockHash, &token, &t.From, &t.To, &amount, &t.Removed, &t.Memos)
	if noRows(err) {
		return paywatch.Transfer{}, false, nil
	}
	if err != nil {
		return paywatch.Transfer{}, false, fmt.Errorf("read %s transfer %s/%d: %w", n, k.TxHash, k.LogIndex, err)
	}
	t.BlockNumber, t.Token = uint64(block), paywatch.Token(token)
	t.Memos = memosOf(t.Memos)
	var ok bool
	if t.Amount, ok = new(big.Int).SetString(amount, 10); !ok {
		return paywatch.Transfer{}, false, fmt.Errorf("read %s transfer %s/%d: bad amount %q", n, k.TxHash, k.LogIndex, amount)
	}
	return t, true, nil
}

// memosOf is a recorded transfer's memos as the chain clients give them:
// nil for none.
func memosOf(m []string) []string {
	if len(m) == 0 {
		return nil
	}
	return m
}
