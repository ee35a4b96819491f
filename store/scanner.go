package store

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// This file is the chain scanners' side of the store: their cursors, the
// one query per batch that matches recipients against watched addresses,
// the recorded transfers and the chain status of /health.

// ChainCursor is one network's scan progress.
type ChainCursor struct {
	Network paywatch.Network
	// Height is the last block whose transfers are recorded.
	Height uint64
	// BlockHash is the hash of block Height when it was scanned; "" if
	// unknown.
	BlockHash string
	// Head is the chain head the scanner saw with its last batch.
	Head      uint64
	UpdatedAt time.Time
}

// ChainCursor returns the cursor of network n; ok is false when n has never
// been scanned (or its cursor was reset).
func (s *Store) ChainCursor(ctx context.Context, n paywatch.Network) (ChainCursor, bool, error) {
	c := ChainCursor{Network: n}
	var height, head int64
	err := s.pool.QueryRow(ctx, `
		SELECT height, block_hash, head, updated_at FROM chain_cursors WHERE network = $1`,
		string(n)).Scan(&height, &c.BlockHash, &head, &c.UpdatedAt)
	if noRows(err) {
		return ChainCursor{}, false, nil
	}
	if err != nil {
		return ChainCursor{}, false, fmt.Errorf("read %s cursor: %w", n, err)
	}
	c.Height, c.Head = uint64(height), uint64(head)
	return c, true, nil
}

// ResetChainCursor forgets the cursor of network n, so its scanner starts
// afresh at the chain head (or at the earliest watched payment's start
// block). `paywatch dev` resets the cursors of its devnet chains, which
// start from genesis on every run.
func (s *Store) ResetChainCursor(ctx context.Context, n paywatch.Network) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM chain_cursors WHERE network = $1`, string(n)); err != nil {
		return fmt.Errorf("reset %s cursor: %w", n, err)
	}
	return nil
}

// watchedCondition returns the SQL condition of a payment p the scanners
// watch, with $1 the network and the parameter late the start of the late
// window (now − 24 h): an address on the network, and either in progress or
// expired inside the late window of a mode whose late funds count
// (per_payment and pool + txid; interface.md "States and transitions").
// Cancelled, paid and overpaid payments are never watched: their workflows
// have ended or ignore transfers.
func watchedCondition(late string) string {
	return `
	p.network = $1 AND p.address IS NOT NULL
	AND (
		p.status IN ('pending', 'confirming', 'partial')
		OR (p.status = 'expired' AND p.expires_at > ` + late + ` AND ` + paywatch.PolicySQL("p", func(p paywatch.Policy) bool { return p.LateFunds }) + `)
	)`
}

// EarliestWatchedBlock returns the smallest start block of the payments
// watched on network n; ok is false when none is. A scanner without a cursor
// starts there, so a payment created before the network's first scan is not
// missed.
func (s *Store) EarliestWatchedBlock(ctx context.Context, n paywatch.Network) (uint64, bool, error) {
	var earliest *int64
	err := s.pool.QueryRow(ctx, `
		SELECT min(p.start_block) FROM payments p
		WHERE `+watchedCondition("$2")+` AND p.start_block > 0`,
		string(n), s.lateWindowStart()).Scan(&earliest)
	if err != nil {
		return 0, false, fmt.Errorf("earliest watched block on %s: %w", n, err)
	}
	if earliest == nil {
		return 0, false, nil
	}
	return uint64(*earliest), true, nil
}

// lateWindowStart is the oldest expires_at whose payment still takes late
// funds.
func (s *Store) lateWindowStart() time.Time {
	return s.clock().Add(-paywatch.LateWindow)
}

// WatchedPayment is a payment watching an address, as the scanners match
// transfers against it.
type WatchedPayment struct {
	PaymentID string
	Token     paywatch.Token
	// StartBlock is the chain head when the address was assigned: earlier
	// transfers to a reused address (per_user, dedicated, pool) belong to
	// earlier payments.
	StartBlock uint64
	// TxidOnly marks a pool + txid payment: only transactions claimed for it
	// (ClaimedTxHashes) concern it.
	TxidOnly bool
	// ClaimedTxHashes are the hashes, among those WatchedAddresses was
	// asked about, that this payment has claimed.
	ClaimedTxHashes []string
	// Amount is the payment's expected amount, with its micro offset.
	Amount paywatch.Amount
	// Micro marks a pool + micro_amount payment: only a single transfer
	// within the match window of Amount can be its (ClaimOwner).
	Micro bool
}

// Accepts reports whether a transfer of token in transaction txHash at
// height block concerns the payment.
func (w WatchedPayment) Accepts(token paywatch.Token, txHash string, block uint64) bool {
	if token != w.Token || block < w.StartBlock {
		return false
	}
	return !w.TxidOnly || slices.Contains(w.ClaimedTxHashes, txHash)
}

// WatchedAddresses returns, for those of addresses (normalised) that
// watched payments on network n use, the payments watching each one. A pool
// address is shared: every payment on it is listed. txHashes are the
// transactions of the batch being matched; a pool + txid payment is listed
// only if it claimed one of them (the others ignore transfers they did not
// claim, and a busy pool address may have thousands of them).
//
// It is one query, on the (network, address) index and the tx_claims
// primary key, whatever the number of watched addresses: the scanners call
// it once per batch with the batch's distinct recipients.
func (s *Store) WatchedAddresses(ctx context.Context, n paywatch.Network, addresses, txHashes []string) (map[string][]WatchedPayment, error) {
	return s.watchedAddresses(ctx, s.pool, n, addresses, txHashes)
}

// rowsQuerier is what pgxpool.Pool and pgx.Tx share for multi-row reads.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// watchedAddresses is WatchedAddresses on q (the pool, or a transaction
// that claims transfers).
func (s *Store) watchedAddresses(ctx context.Context, q rowsQuerier, n paywatch.Network, addresses, txHashes []string) (map[string][]WatchedPayment, error) {
	out := map[string][]WatchedPayment{}
	if len(addresses) == 0 {
		return out, nil
	}
	if txHashes == nil {
		txHashes = []string{}
	}
	rows, err := q.Query(ctx, `
		WITH claims AS (
			SELECT c.payment_id, array_agg(c.tx_hash ORDER BY c.tx_hash) AS hashes
			FROM tx_claims c
			WHERE c.network = $1 AND c.tx_hash = ANY($4::text[])
			GROUP BY c.payment_id
		)
		SELECT p.address, p.id::text, p.token, COALESCE(p.start_block, 0), p.address_mode, COALESCE(p.pool_matching, ''),
		       COALESCE(c.hashes, '{}'), p.amount::text, p.decimals
		FROM payments p
		LEFT JOIN claims c ON c.payment_id = p.id
		WHERE `+watchedCondition("$3")+` AND p.address = ANY($2::text[])
		  AND (NOT `+paywatch.PolicySQL("p", func(p paywatch.Policy) bool { return p.TxIDOnly })+` OR c.hashes IS NOT NULL)
		ORDER BY p.address, p.created_at, p.id`,
		string(n), addresses, s.lateWindowStart(), txHashes)
	if err != nil {
		return nil, fmt.Errorf("watched addresses on %s: %w", n, err)
	}
	defer rows.Close()
	for rows.Next() {
		var addr, token, amount string
		var mode paywatch.AddressMode
		var matching paywatch.PoolMatching
		var start int64
		var decimals int
		var w WatchedPayment
		if err := rows.Scan(&addr, &w.PaymentID, &token, &start, &mode, &matching, &w.ClaimedTxHashes, &amount, &decimals); err != nil {
			return nil, fmt.Errorf("watched addresses on %s: %w", n, err)
		}
		policy := paywatch.PolicyOf(mode, matching)
		w.TxidOnly, w.Micro = policy.TxIDOnly, policy.ExactMatch
		w.Token, w.StartBlock = paywatch.Token(token), uint64(start)
		if w.Amount, err = amountOf(amount, decimals); err != nil {
			return nil, fmt.Errorf("watched addresses on %s: %w", n, err)
		}
		if !w.TxidOnly {
			w.ClaimedTxHashes = nil
		}
		out[addr] = append(out[addr], w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("watched addresses on %s: %w", n, err)
	}
	return out, nil
}

// ChainTransfer is a recorded token transfer (a chain_transfers row).
type ChainTransfer struct {
	TxHash      string
	LogIndex    uint32
	BlockNumber uint64
	BlockHash   string
	Token       paywatch.Token
	From, To    string
	// Amount is in the token's base units.
	Amount *big.Int
	// Removed is set once the transfer left the canonical chain.
	Removed bool
}

// TransferKey identifies a transfer on a network.
type TransferKey struct {
	TxHash   string
	LogIndex uint32
}

// Key returns the transfer's key.
func (t ChainTransfer) Key() TransferKey { return TransferKey{t.TxHash, t.LogIndex} }

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
	Transfers []ChainTransfer
	// Claims propose the payment each matching transfer counts for
	// (ClaimOwner); a transfer claimed before keeps its payment.
	Claims []TransferClaim
}

// RecordResult says what RecordScan changed.
type RecordResult struct {
	// Inserted counts transfers recorded for the first time.
	Inserted int
	// Moved counts transfers already recorded that now sit in another block
	// (re-mined after a reorg) or had been marked removed.
	Moved int
}

// RecordScan records a batch's transfers, each once (unique by network, tx
// hash and log index; a transfer seen again in another block gets that
// block), and moves the network's cursor to the batch's height, in one
// transaction: the cursor never passes a transfer that is not recorded.
//
// The batch's claims are recorded in the same transaction (ClaimTransfers
// explains them); owners maps every claimed transfer to the payment it
// counts for, which is the proposed one unless an earlier claim gave the
// transfer to another.
//
// beforeCommit, if set, runs inside the transaction after the writes and
// before the commit, with the owners; the scanners signal the payment
// workflows there. If it fails, nothing is recorded and the cursor stays,
// so the batch is scanned and signalled again; if the process dies after it
// but before the commit, the same happens. Either way every recorded
// transfer has been signalled, and the workflows ignore repeats.
func (s *Store) RecordScan(ctx context.Context, b ScanBatch, beforeCommit func(ctx context.Context, owners map[TransferKey]string) error) (RecordResult, error) {
	var res RecordResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = recordTransfers(ctx, tx, b.Network, b.Transfers, s.clock())
		if err != nil {
			return err
		}
		owners, err := claimTransfers(ctx, tx, b.Network, b.Claims, nil, s.clock())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO chain_cursors (network, height, block_hash, head, updated_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (network) DO UPDATE SET
				height = EXCLUDED.height, block_hash = EXCLUDED.block_hash,
				head = EXCLUDED.head, updated_at = EXCLUDED.updated_at`,
			string(b.Network), int64(b.Height), b.BlockHash, int64(max(b.Head, b.Height)), s.clock()); err != nil {
			return fmt.Errorf("advance %s cursor to %d: %w", b.Network, b.Height, err)
		}
		if beforeCommit != nil {
			return beforeCommit(ctx, owners)
		}
		return nil
	})
	if err != nil {
		return RecordResult{}, err
	}
	return res, nil
}

// recordTransfers inserts transfers with one statement.
func recordTransfers(ctx context.Context, tx pgx.Tx, n paywatch.Network, ts []ChainTransfer, now time.Time) (RecordResult, error) {
	var res RecordResult
	if len(ts) == 0 {
		return res, nil
	}
	// ON CONFLICT DO UPDATE cannot touch one row twice in a statement.
	seen := make(map[TransferKey]bool, len(ts))
	var (
		hashes, blockHashes, tokens, froms, tos, amounts []string
		logIndexes, blocks                               []int64
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
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO chain_transfers (network, tx_hash, log_index, block_number, block_hash, token,
		                             from_address, to_address, amount, created_at)
		SELECT $1, t.tx_hash, t.log_index, t.block_number, t.block_hash, t.token,
		       t.from_address, t.to_address, t.amount::numeric, $10
		FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
		     AS t(tx_hash, log_index, block_number, block_hash, token, from_address, to_address, amount)
		ON CONFLICT (network, tx_hash, log_index) DO UPDATE SET
			block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, removed = false
		WHERE chain_transfers.block_hash <> EXCLUDED.block_hash OR chain_transfers.removed
		RETURNING (xmax = 0)`,
		string(n), hashes, logIndexes, blocks, blockHashes, tokens, froms, tos, amounts, now)
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

// maxRecentTransfers bounds RecentTransfers: the reorg check looks at a
// window of the newest blocks, where a sane chain has far fewer.
const maxRecentTransfers = 10_000

// RecentTransfers returns network n's recorded transfers that are still
// canonical as far as the store knows, in blocks from fromBlock on, oldest
// first (at most 10,000).
func (s *Store) RecentTransfers(ctx context.Context, n paywatch.Network, fromBlock uint64) ([]ChainTransfer, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT tx_hash, log_index, block_number, block_hash, token, from_address, to_address, amount::text
		FROM chain_transfers
		WHERE network = $1 AND block_number >= $2 AND NOT removed
		ORDER BY block_number, tx_hash, log_index
		LIMIT $3`,
		string(n), int64(fromBlock), maxRecentTransfers)
	if err != nil {
		return nil, fmt.Errorf("recent %s transfers: %w", n, err)
	}
	defer rows.Close()
	var out []ChainTransfer
	for rows.Next() {
		var t ChainTransfer
		var logIndex, block int64
		var token, amount string
		if err := rows.Scan(&t.TxHash, &logIndex, &block, &t.BlockHash, &token, &t.From, &t.To, &amount); err != nil {
			return nil, fmt.Errorf("recent %s transfers: %w", n, err)
		}
		t.LogIndex, t.BlockNumber, t.Token = uint32(logIndex), uint64(block), paywatch.Token(token)
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
	// Transfers are the recorded, still canonical transfers in blocks up
	// to Height, oldest first.
	Transfers []ChainTransfer
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
	err := tx.QueryRow(ctx, `SELECT height FROM chain_cursors WHERE network = $1`, string(n)).Scan(&height)
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
		SELECT tx_hash, log_index, block_number, block_hash, from_address, amount::text
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
		t := ChainTransfer{Token: token, To: address}
		var logIndex, block int64
		var amount string
		if err := rows.Scan(&t.TxHash, &logIndex, &block, &t.BlockHash, &t.From, &amount); err != nil {
			return out, err
		}
		t.LogIndex, t.BlockNumber = uint32(logIndex), uint64(block)
		var ok bool
		if t.Amount, ok = new(big.Int).SetString(amount, 10); !ok {
			return out, fmt.Errorf("bad amount %q", amount)
		}
		out.Transfers = append(out.Transfers, t)
	}
	return out, rows.Err()
}

// PaymentsWithoutWorkflow returns, for those of ids (payment ids) whose
// workflow is not recorded as started (payments.workflow_started), when
// their row was created. The API writes a payment's row before it starts
// the workflow, and the reconciler starts the workflows whose start failed:
// a scanner whose signal finds no workflow asks this whether the workflow
// has ended (not listed) or is yet to start (listed). Unknown ids are not
// listed.
func (s *Store) PaymentsWithoutWorkflow(ctx context.Context, ids []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id::text, created_at FROM payments
		WHERE id = ANY($1::uuid[]) AND NOT workflow_started`, ids)
	if err != nil {
		return nil, fmt.Errorf("payments without workflow: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var created time.Time
		if err := rows.Scan(&id, &created); err != nil {
			return nil, fmt.Errorf("payments without workflow: %w", err)
		}
		out[id] = created
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("payments without workflow: %w", err)
	}
	return out, nil
}

// MarkTransfersRemoved flags recorded transfers of network n as no longer
// canonical (a reorg dropped them). Unknown keys are ignored.
func (s *Store) MarkTransfersRemoved(ctx context.Context, n paywatch.Network, keys []TransferKey) error {
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

// ChainTransferByKey returns one recorded transfer; ok is false if it is
// not recorded.
func (s *Store) ChainTransferByKey(ctx context.Context, n paywatch.Network, k TransferKey) (ChainTransfer, bool, error) {
	t := ChainTransfer{TxHash: k.TxHash, LogIndex: k.LogIndex}
	var block int64
	var token, amount string
	err := s.pool.QueryRow(ctx, `
		SELECT block_number, block_hash, token, from_address, to_address, amount::text, removed
		FROM chain_transfers WHERE network = $1 AND tx_hash = $2 AND log_index = $3`,
		string(n), k.TxHash, int64(k.LogIndex)).Scan(&block, &t.BlockHash, &token, &t.From, &t.To, &amount, &t.Removed)
	if noRows(err) {
		return ChainTransfer{}, false, nil
	}
	if err != nil {
		return ChainTransfer{}, false, fmt.Errorf("read %s transfer %s/%d: %w", n, k.TxHash, k.LogIndex, err)
	}
	t.BlockNumber, t.Token = uint64(block), paywatch.Token(token)
	var ok bool
	if t.Amount, ok = new(big.Int).SetString(amount, 10); !ok {
		return ChainTransfer{}, false, fmt.Errorf("read %s transfer %s/%d: bad amount %q", n, k.TxHash, k.LogIndex, amount)
	}
	return t, true, nil
}

// ChainStatus is one network's scan progress as /health reports it.
type ChainStatus struct {
	Network paywatch.Network
	// Head is the newest block the scanner saw.
	Head uint64
	// Scanned is the last block whose transfers are recorded.
	Scanned uint64
	// LagBlocks is Head − Scanned.
	LagBlocks uint64
	// UpdatedAt is when the scanner last recorded progress; zero for a
	// network not scanned yet.
	UpdatedAt time.Time
}

// ChainStatus returns the scan progress of the offered networks (see
// WithNetworks), in API order; a network not scanned yet has zeros. Without
// WithNetworks it lists the networks that have a cursor.
func (s *Store) ChainStatus(ctx context.Context) ([]ChainStatus, error) {
	rows, err := s.pool.Query(ctx, `SELECT network, height, head, updated_at FROM chain_cursors`)
	if err != nil {
		return nil, fmt.Errorf("chain status: %w", err)
	}
	defer rows.Close()
	byNetwork := map[paywatch.Network]ChainStatus{}
	for rows.Next() {
		var n string
		var height, head int64
		var updated time.Time
		if err := rows.Scan(&n, &height, &head, &updated); err != nil {
			return nil, fmt.Errorf("chain status: %w", err)
		}
		st := ChainStatus{Network: paywatch.Network(n), Head: uint64(head), Scanned: uint64(height), UpdatedAt: updated}
		st.Head = max(st.Head, st.Scanned)
		st.LagBlocks = st.Head - st.Scanned
		byNetwork[st.Network] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("chain status: %w", err)
	}
	out := []ChainStatus{}
	for _, info := range paywatch.Networks() {
		st, ok := byNetwork[info.Network]
		switch {
		case s.offered != nil && slices.Contains(s.offered, info.Network):
			if !ok {
				st = ChainStatus{Network: info.Network}
			}
			out = append(out, st)
		case s.offered == nil && ok:
			out = append(out, st)
		}
	}
	return out, nil
}
