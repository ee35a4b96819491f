package store

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// This file gives every transfer one key for life (issue 24, item 4).
//
// A chain names a log by its index in the block, and that index changes
// when a reorg mines the transaction again at another position: one log
// later, a transaction paying X then Y has X's transfer at the index Y's
// had. Keyed by the chain's index, X's transfer would take the record and
// the claim of Y's, and count for Y's payment. So the key a transfer is
// first recorded under stays its key: a transfer seen again is matched to
// the recorded transfers of its transaction by what it moves (recipient,
// token and amount), never by its index alone, and keeps their key. Two
// transfers of one transaction that move the same amount of the same token
// to the same address are interchangeable, so whichever of them takes a
// key, the money each key stands for is the same. A key names at most one
// (recipient, token, amount) for as long as the database lives, whatever
// the chain does: the whole class of "index reused by another transfer"
// is closed, on every network family.
//
// Every path that hands a transfer to a payment workflow gets its key here
// first and records it before handing it out (the scanner's RecordScan,
// the final check's IdentifyTransfers and ClaimTransfers, the pool + txid
// verification's IdentifyTransfers), under a per-transaction advisory lock,
// so the scanner, a final check and a verification that see one
// transaction at once give each of its transfers the same key.

// transferIdentity is what a recorded key stands for.
type transferIdentity struct {
	to, token, amount string
}

// identityOf returns what transfer t moves.
func identityOf(t paywatch.Transfer) transferIdentity {
	return transferIdentity{to: t.To, token: string(t.Token), amount: t.Amount.String()}
}

// IdentifyTransfers gives transfers of network n, as a chain client
// returned them, the keys they are recorded under (identifyTransfers), and
// records those seen for the first time, so that a later sighting, by the
// scanner or anyone, gets the same key. It returns ts with those keys, in
// the same order; the blocks stay the ones the chain gave.
func (s *Store) IdentifyTransfers(ctx context.Context, n paywatch.Network, ts []paywatch.Transfer) ([]paywatch.Transfer, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	var out []paywatch.Transfer
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if out, err = identifyTransfers(ctx, tx, n, ts); err != nil {
			return err
		}
		return recordIdentities(ctx, tx, n, out, s.clock())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockTransactions takes the per-transaction advisory locks of the
// distinct hashes of ts for the rest of tx, in one order, so that two
// transactions locking overlapping sets cannot deadlock.
func lockTransactions(ctx context.Context, tx pgx.Tx, n paywatch.Network, ts []paywatch.Transfer) error {
	keys := make([]int64, 0, len(ts))
	for _, t := range ts {
		h := fnv.New64a()
		_, _ = h.Write([]byte("transfer-identity\x00" + string(n) + "\x00" + t.TxHash))
		keys = append(keys, int64(h.Sum64()))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k`, keys); err != nil {
		return fmt.Errorf("lock %d %s transactions: %w", len(keys), n, err)
	}
	return nil
}

// identifyTransfers locks the transactions of ts (lockTransactions) and
// returns ts, in the same order, each with the key it is recorded under in
// chain_transfers or transfer_claims, or the key it will be recorded under
// when it was never seen. ts carry the chain's log indexes; transfers of
// one transaction are matched to its recorded keys in three passes:
//
//  1. a recorded key equal to the chain's index that stands for the same
//     recipient, token and amount (the usual case: the same transfer seen
//     again, or mined again at the same position);
//  2. else the lowest recorded key of the transaction that stands for the
//     same recipient, token and amount and that no transfer of ts took
//     (mined again at another position);
//  3. else a new key: the chain's index if no record uses it, or the
//     nearest free one above it.
//
// A key whose records disagree about what it stands for (written before
// this rule) is never matched and never reused. Transfers of ts with the
// same hash and index are one transfer and get one key.
func identifyTransfers(ctx context.Context, tx pgx.Tx, n paywatch.Network, ts []paywatch.Transfer) ([]paywatch.Transfer, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	if err := lockTransactions(ctx, tx, n, ts); err != nil {
		return nil, err
	}
	hashes := make([]string, 0, len(ts))
	for _, t := range ts {
		if t.Amount == nil {
			return nil, fmt.Errorf("identify transfer %s/%d: no amount", t.TxHash, t.LogIndex)
		}
		hashes = append(hashes, t.TxHash)
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	rows, err := tx.Query(ctx, `
		SELECT tx_hash, log_index, to_address, token, amount::text FROM chain_transfers
		WHERE network = $1 AND tx_hash = ANY($2::text[])
		UNION
		SELECT tx_hash, log_index, to_address, token, amount::text FROM transfer_claims
		WHERE network = $1 AND tx_hash = ANY($2::text[])`, string(n), hashes)
	if err != nil {
		return nil, fmt.Errorf("read recorded %s transfers: %w", n, err)
	}
	defer rows.Close()
	// recorded[hash][key] is what the key stands for; conflicted keys are
	// in use but stand for nothing that can be matched.
	recorded := map[string]map[uint32]transferIdentity{}
	conflicted := map[paywatch.TransferKey]bool{}
	for rows.Next() {
		var (
			hash string
			key  int64
			id   transferIdentity
		)
		if err := rows.Scan(&hash, &key, &id.to, &id.token, &id.amount); err != nil {
			return nil, fmt.Errorf("read recorded %s transfers: %w", n, err)
		}
		k := uint32(key)
		if recorded[hash] == nil {
			recorded[hash] = map[uint32]transferIdentity{}
		}
		if prev, ok := recorded[hash][k]; ok && prev != id {
			conflicted[paywatch.TransferKey{TxHash: hash, LogIndex: k}] = true
		}
		recorded[hash][k] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read recorded %s transfers: %w", n, err)
	}

	// The distinct transfers of ts (by chain key), in chain order within
	// each transaction.
	chainKeys := make([]paywatch.TransferKey, 0, len(ts))
	idOf := map[paywatch.TransferKey]transferIdentity{}
	for _, t := range ts {
		if _, ok := idOf[t.Key()]; !ok {
			idOf[t.Key()] = identityOf(t)
			chainKeys = append(chainKeys, t.Key())
		}
	}
	slices.SortFunc(chainKeys, func(a, b paywatch.TransferKey) int {
		return cmp.Or(cmp.Compare(a.TxHash, b.TxHash), cmp.Compare(a.LogIndex, b.LogIndex))
	})
	keyOf := map[paywatch.TransferKey]uint32{}
	taken := map[paywatch.TransferKey]bool{}
	matches := func(hash string, k uint32, id transferIdentity) bool {
		rec, ok := recorded[hash][k]
		key := paywatch.TransferKey{TxHash: hash, LogIndex: k}
		return ok && rec == id && !conflicted[key] && !taken[key]
	}
	assign := func(ck paywatch.TransferKey, k uint32) {
		keyOf[ck] = k
		taken[paywatch.TransferKey{TxHash: ck.TxHash, LogIndex: k}] = true
	}
	// Pass 1: the same transfer at the same index.
	for _, ck := range chainKeys {
		if matches(ck.TxHash, ck.LogIndex, idOf[ck]) {
			assign(ck, ck.LogIndex)
		}
	}
	// Pass 2: the same transfer at another index.
	for _, ck := range chainKeys {
		if _, ok := keyOf[ck]; ok {
			continue
		}
		recKeys := make([]uint32, 0, len(recorded[ck.TxHash]))
		for k := range recorded[ck.TxHash] {
			recKeys = append(recKeys, k)
		}
		slices.Sort(recKeys)
		for _, k := range recKeys {
			if matches(ck.TxHash, k, idOf[ck]) {
				assign(ck, k)
				break
			}
		}
	}
	// Pass 3: a transfer never seen.
	for _, ck := range chainKeys {
		if _, ok := keyOf[ck]; ok {
			continue
		}
		k := ck.LogIndex
		for {
			_, used := recorded[ck.TxHash][k]
			if !used && !taken[paywatch.TransferKey{TxHash: ck.TxHash, LogIndex: k}] {
				break
			}
			k++ // wraps at 2^32; a transaction has far fewer logs
		}
		assign(ck, k)
	}
	out := make([]paywatch.Transfer, len(ts))
	for i, t := range ts {
		t.LogIndex = keyOf[t.Key()]
		out[i] = t
	}
	return out, nil
}

// recordIdentities records transfers, with the keys identifyTransfers gave
// them, that have no record yet; a recorded one keeps its record as it is
// (only the scanner's RecordScan moves a record to another block, or back
// from removed, since only the scanner checks recorded blocks for reorgs).
func recordIdentities(ctx context.Context, tx pgx.Tx, n paywatch.Network, ts []paywatch.Transfer, now time.Time) error {
	_, err := insertTransfers(ctx, tx, n, ts, now, false)
	return err
}
