package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// ScanBatch is one scanned range of blocks and the transfers in it that
// concern watched payments.
type ScanBatch struct {
	Network paywatch.Network
	// Height is the last block of the range: the new cursor.
	Height uint64
	// BlockHash is the hash of block Height as the scanner saw it.
	BlockHash string
	// Head is the chain head when the range was read.
	Head uint64
	// Transfers are the matching transfers of the range.
	Transfers []paywatch.Transfer
	// Claims propose the payment each matching transfer counts for
	// (ClaimOwner); a transfer claimed before keeps its payment.
	Claims []TransferClaim
	// LagAllowance is how far behind the head the scanner keeps its cursor
	// by design (an idle EVM scanner: chains.RecentBlocks); /health allows
	// that much lag on top of its limit.
	LagAllowance uint64
	// Generation is the scan lease the batch was read under
	// (AcquireScanLease): the batch is recorded only while it is still the
	// network's newest, and ErrScanLeaseLost refuses it otherwise. 0
	// records without the check, for tools and tests that own the network
	// alone.
	Generation uint64
	// Accounts are the cursors of the accounts read per account (SOLANA's
	// token accounts: chains.AccountReader), moved with the network's.
	Accounts []AccountCursor
}

// RecordResult says what RecordScan changed.
type RecordResult struct {
	// Inserted counts transfers recorded for the first time.
	Inserted int
	// Moved counts transfers already recorded that now sit in another block
	// (re-mined after a reorg) or had been marked removed.
	Moved int
}

// ClaimedTransfer is a transfer with the key it is recorded under
// (identifyTransfers) and the payment it counts for.
type ClaimedTransfer struct {
	Transfer  paywatch.Transfer
	PaymentID string
}

// RecordScan records a batch's transfers, each once under the key it was
// first recorded with (identifyTransfers: a transfer mined again at another
// log index keeps its key, and a key never passes to another transfer),
// a transfer seen again in another block taking that block, and moves the
// network's cursor to the batch's height, in one transaction: the cursor
// never passes a transfer that is not recorded.
//
// The batch's claims are recorded in the same transaction (ClaimTransfers
// explains them); a claim counts for the proposed payment unless an earlier
// claim gave the transfer to another.
//
// beforeCommit, if set, runs inside the transaction after the writes and
// before the commit, with every claimed transfer of the batch under its
// recorded key, with the payment it counts for; the scanners signal the
// payment workflows there. If it fails, nothing is recorded and the cursor
// stays, so the batch is scanned and signalled again; if the process dies
// after it but before the commit, the same happens. Either way every
// recorded transfer has been signalled, and the workflows ignore repeats.
//
// A batch with a Generation is recorded only if no newer scan of the
// network has taken the lease since (ErrScanLeaseLost, before anything is
// written or beforeCommit runs).
func (s *Store) RecordScan(ctx context.Context, b ScanBatch, beforeCommit func(ctx context.Context, claimed []ClaimedTransfer) error) (RecordResult, error) {
	var res RecordResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The lease first: a refused batch records and signals nothing.
		if err := holdScanLease(ctx, tx, b.Network, b.Generation); err != nil {
			return err
		}
		// One identification for the transfers and the claims, which name
		// the same transfers by their chain keys.
		all := slices.Clone(b.Transfers)
		for _, c := range b.Claims {
			all = append(all, c.Transfer)
		}
		ids, err := identifyTransfers(ctx, tx, b.Network, all)
		if err != nil {
			return err
		}
		transfers := ids[:len(b.Transfers)]
		claims := make([]TransferClaim, len(b.Claims))
		for i, c := range b.Claims {
			claims[i] = TransferClaim{Transfer: ids[len(b.Transfers)+i], PaymentID: c.PaymentID}
		}
		res, err = recordTransfers(ctx, tx, b.Network, transfers, s.clock())
		if err != nil {
			return err
		}
		owners, err := claimTransfers(ctx, tx, b.Network, claims, nil, s.clock())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO chain_cursors (network, height, block_hash, head, updated_at, lag_allowance)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (network) DO UPDATE SET
				height = EXCLUDED.height, block_hash = EXCLUDED.block_hash,
				head = EXCLUDED.head, updated_at = EXCLUDED.updated_at, lag_allowance = EXCLUDED.lag_allowance`,
			string(b.Network), int64(b.Height), b.BlockHash, int64(max(b.Head, b.Height)), s.clock(), int64(b.LagAllowance)); err != nil {
			return fmt.Errorf("advance %s cursor to %d: %w", b.Network, b.Height, err)
		}
		if err := saveAccountCursors(ctx, tx, b.Network, b.Accounts, s.clock()); err != nil {
			return err
		}
		if beforeCommit != nil {
			return beforeCommit(ctx, claimedBy(claims, owners))
		}
		return nil
	})
	if err != nil {
		return RecordResult{}, err
	}
	return res, nil
}

// claimedBy lists the distinct transfers of claims that count for a
// payment, each with its owner (which may not be the proposed one).
func claimedBy(claims []TransferClaim, owners map[paywatch.TransferKey]string) []ClaimedTransfer {
	var out []ClaimedTransfer
	seen := map[paywatch.TransferKey]bool{}
	for _, c := range claims {
		k := c.Transfer.Key()
		owner, ok := owners[k]
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ClaimedTransfer{Transfer: c.Transfer, PaymentID: owner})
	}
	return out
}

// recordTransfers records transfers with one statement: new ones are
// inserted, and recorded ones seen in another block, or marked removed, take
// the block they are in now.
func recordTransfers(ctx context.Context, tx pgx.Tx, n paywatch.Network, ts []paywatch.Transfer, now time.Time) (RecordResult, error) {
	return insertTransfers(ctx, tx, n, ts, now, true)
}

// insertTransfers inserts transfers with one statement; recorded ones take
// their new block only if move is set. The keys are those of
// identifyTransfers, so a recorded key always stands for the same
// recipient, token and amount, and only the block is ever updated.
func insertTransfers(ctx context.Context, tx pgx.Tx, n paywatch.Network, ts []paywatch.Transfer, now time.Time, move bool) (RecordResult, error) {
	var res RecordResult
	if len(ts) == 0 {
		return res, nil
	}
	// ON CONFLICT DO UPDATE cannot touch one row twice in a statement.
	seen := make(map[paywatch.TransferKey]bool, len(ts))
	var (
		hashes, blockHashes, tokens, froms, tos, amounts, memos []string
		logIndexes, blocks                                      []int64
	)
	for _, t := range ts {
		if seen[t.Key()] {
			continue
		}
		seen[t.Key()] = true
		if t.Amount == nil || t.Amount.Sign() < 0 {
			return res, fmt.Errorf("record transfer %s/%d: bad amount %v", t.TxHash, t.LogIndex, t.Amount)
		}
		hashes = append(hashes, t.TxHash)
		logIndexes = append(logIndexes, int64(t.LogIndex))
		blocks = append(blocks, int64(t.BlockNumber))
		blockHashes = append(blockHashes, t.BlockHash)
		tokens = append(tokens, string(t.Token))
		froms = append(froms, t.From)
		tos = append(tos, t.To)
		amounts = append(amounts, t.Amount.String())
		m, err := json.Marshal(append([]string{}, t.Memos...))
		if err != nil {
			return res, err
		}
		memos = append(memos, string(m))
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO chain_transfers (network, tx_hash, log_index, block_number, block_hash, token,
		                             from_address, to_address, amount, created_at, project_id, memos)
		SELECT $1, t.tx_hash, t.log_index, t.block_number, t.block_hash, t.token,
		       t.from_address, t.to_address, t.amount::numeric, $10,
		       (SELECT COALESCE(w.project_id, w.deleted_from) FROM address_owners o JOIN wallets w ON w.id = o.wallet_id
		        WHERE o.family = $12 AND o.address = t.to_address),
		       ARRAY(SELECT jsonb_array_elements_text(t.memos::jsonb))
		FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $13::text[])
		     AS t(tx_hash, log_index, block_number, block_hash, token, from_address, to_address, amount, memos)
		ON CONFLICT (network, tx_hash, log_index) DO UPDATE SET
			block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, removed = false,
			project_id = COALESCE(chain_transfers.project_id, EXCLUDED.project_id)
		WHERE $11 AND (chain_transfers.block_hash <> EXCLUDED.block_hash OR chain_transfers.removed)
		RETURNING (xmax = 0)`,
		string(n), hashes, logIndexes, blocks, blockHashes, tokens, froms, tos, amounts, now, move, string(n.Family()), memos)
	if err != nil {
		return res, fmt.Errorf("record %d %s transfers: %w", len(hashes), n, err)
	}
	defer rows.Close()
	for rows.Next() {
		var inserted bool
		if err := rows.Scan(&inserted); err != nil {
			return res, err
		}
		if inserted {
			res.Inserted++
		} else {
			res.Moved++
		}
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("record %d %s transfers: %w", len(hashes), n, err)
	}
	return res, nil
}

// MarkTransfersRemoved flags recorded transfers of network n as no longer
// canonical (a reorg dropped them). Unknown keys are ignored.
func (s *Store) MarkTransfersRemoved(ctx context.Context, n paywatch.Network, keys []paywatch.TransferKey) error {
	if len(keys) == 0 {
		return nil
	}
	hashes := make([]string, len(keys))
	indexes := make([]int64, len(keys))
	for i, k := range keys {
		hashes[i], indexes[i] = k.TxHash, int64(k.LogIndex)
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE chain_transfers t SET removed = true
		FROM unnest($2::text[], $3::bigint[]) AS k(tx_hash, log_index)
		WHERE t.network = $1 AND t.tx_hash = k.tx_hash AND t.log_index = k.log_index`,
		string(n), hashes, indexes)
	if err != nil {
		return fmt.Errorf("mark %d %s transfers removed: %w", len(keys), n, err)
	}
	return nil
}
