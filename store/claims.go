package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// This file keeps the rule that a transfer counts for one payment at most,
// in every address mode: the payment it counts for is chosen once, by
// ClaimOwner, and recorded in transfer_claims, whose primary key (network,
// tx hash, log index) decides between a scanner and a payment's final check
// that claim the same transfer at the same time. The log index is the key
// the transfer was first recorded under (transfer_identity.go), so a claim
// stays with its transfer when a reorg mines it again at another index.

// TransferClaim proposes the payment a transfer counts for.
type TransferClaim struct {
	Transfer  paywatch.Transfer
	PaymentID string
}

// ClaimOwner returns the payment, among watchers (the payments watching
// t.To, oldest first, as WatchedAddresses lists them), that transfer t
// counts for: of those that accept its token, block and hash, the owner of
// the address (any mode but pool + micro_amount), or else the micro_amount
// payment nearest its amount within the match window, the oldest on a tie
// (paywatch.PickClaimant). ok is false when none takes it.
func ClaimOwner(watchers []WatchedPayment, t paywatch.Transfer) (paymentID string, ok bool) {
	var cands []paywatch.ClaimCandidate
	// A transfer carrying a payment's memo is that payment's, even if a
	// payment of another mode still watches the address (a project that
	// changed its address mode, its old payments in their late windows).
	memoed := slices.ContainsFunc(watchers, func(w WatchedPayment) bool { return w.Memo != "" && w.Accepts(t) })
	for _, w := range watchers {
		if w.Accepts(t) && (!memoed || w.Memo != "") {
			cands = append(cands, paywatch.ClaimCandidate{PaymentID: w.PaymentID, Expected: w.Amount, Micro: w.Micro})
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	amount := paywatch.NewAmount(t.Amount, cands[0].Expected.Decimals())
	i := paywatch.PickClaimant(amount, cands)
	if i < 0 {
		return "", false
	}
	return cands[i].PaymentID, true
}

// ClaimTransfers claims transfers of network n to the addresses of watched
// payments, as the scanner does for a batch, and returns those that count
// for a payment, in the order of ts, each under the key it is recorded with
// (identifyTransfers: ts may carry the chain's log indexes) and with the
// payment it counts for: the one an earlier claim recorded, or the one
// ClaimOwner picks now among the payments watching its address. A
// payment's final check calls it with what it found on chain, so a
// transfer the scanner has not seen is claimed by the same rule and never
// counts twice. Transfers seen for the first time are recorded
// (IdentifyTransfers), so that the scanner gives them the same key.
func (s *Store) ClaimTransfers(ctx context.Context, n paywatch.Network, ts []paywatch.Transfer) ([]ClaimedTransfer, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	var out []ClaimedTransfer
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ids, err := identifyTransfers(ctx, tx, n, ts)
		if err != nil {
			return err
		}
		if err := recordIdentities(ctx, tx, n, ids, s.clock()); err != nil {
			return err
		}
		var addrs, hashes []string
		keys := make([]paywatch.TransferKey, 0, len(ids))
		var memos []string
		for _, t := range ids {
			addrs = append(addrs, t.To)
			hashes = append(hashes, t.TxHash)
			keys = append(keys, t.Key())
			memos = append(memos, t.Memos...)
		}
		slices.Sort(addrs)
		slices.Sort(hashes)
		slices.Sort(memos)
		watched, err := s.watchedAddresses(ctx, tx, n, slices.Compact(addrs), slices.Compact(hashes), slices.Compact(memos))
		if err != nil {
			return err
		}
		var claims []TransferClaim
		for _, t := range ids {
			if id, ok := ClaimOwner(watched[t.To], t); ok {
				claims = append(claims, TransferClaim{Transfer: t, PaymentID: id})
			}
		}
		owners, err := claimTransfers(ctx, tx, n, claims, keys, s.clock())
		if err != nil {
			return err
		}
		all := make([]TransferClaim, len(ids))
		for i, t := range ids {
			all[i] = TransferClaim{Transfer: t}
		}
		out = claimedBy(all, owners)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimTransfers records claims that no earlier claim beat and returns the
// owner of every claimed transfer and of every key in also that has a claim.
// A claim that loses to a concurrent one waits for it (ON CONFLICT) and then
// reads its owner.
func claimTransfers(ctx context.Context, tx pgx.Tx, n paywatch.Network, claims []TransferClaim, also []paywatch.TransferKey, now time.Time) (map[paywatch.TransferKey]string, error) {
	owners := map[paywatch.TransferKey]string{}
	if len(claims) == 0 && len(also) == 0 {
		return owners, nil
	}
	var (
		hashes, payments, tos, tokens, amounts []string
		indexes                                []int64
	)
	seen := map[paywatch.TransferKey]bool{}
	for _, c := range claims {
		t := c.Transfer
		if seen[t.Key()] || t.Amount == nil {
			continue
		}
		seen[t.Key()] = true
		hashes = append(hashes, t.TxHash)
		indexes = append(indexes, int64(t.LogIndex))
		payments = append(payments, c.PaymentID)
		tos = append(tos, t.To)
		tokens = append(tokens, string(t.Token))
		amounts = append(amounts, t.Amount.String())
	}
	if len(hashes) > 0 {
		// Sorted by key, so two transactions claiming overlapping sets lock
		// the rows in one order and cannot deadlock.
		if _, err := tx.Exec(ctx, `
			INSERT INTO transfer_claims (network, tx_hash, log_index, payment_id, to_address, token, amount, created_at)
			SELECT $1, c.tx_hash, c.log_index, c.payment_id::uuid, c.to_address, c.token, c.amount::numeric, $8
			FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[])
			     AS c(tx_hash, log_index, payment_id, to_address, token, amount)
			ORDER BY c.tx_hash, c.log_index
			ON CONFLICT (network, tx_hash, log_index) DO NOTHING`,
			string(n), hashes, indexes, payments, tos, tokens, amounts, now); err != nil {
			return nil, fmt.Errorf("claim %d %s transfers: %w", len(hashes), n, err)
		}
	}
	for _, k := range also {
		if !seen[k] {
			seen[k] = true
			hashes = append(hashes, k.TxHash)
			indexes = append(indexes, int64(k.LogIndex))
		}
	}
	rows, err := tx.Query(ctx, `
		SELECT c.tx_hash, c.log_index, c.payment_id::text
		FROM transfer_claims c
		JOIN unnest($2::text[], $3::bigint[]) AS k(tx_hash, log_index)
		  ON c.tx_hash = k.tx_hash AND c.log_index = k.log_index
		WHERE c.network = $1`, string(n), hashes, indexes)
	if err != nil {
		return nil, fmt.Errorf("read %s transfer claims: %w", n, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k paywatch.TransferKey
		var idx int64
		var owner string
		if err := rows.Scan(&k.TxHash, &idx, &owner); err != nil {
			return nil, fmt.Errorf("read %s transfer claims: %w", n, err)
		}
		k.LogIndex = uint32(idx)
		owners[k] = owner
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s transfer claims: %w", n, err)
	}
	return owners, nil
}

// TransferOwners returns, for those of keys that have a claim on network n,
// the payment each counts for.
func (s *Store) TransferOwners(ctx context.Context, n paywatch.Network, keys []paywatch.TransferKey) (map[paywatch.TransferKey]string, error) {
	var owners map[paywatch.TransferKey]string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		owners, err = claimTransfers(ctx, tx, n, nil, keys, s.clock())
		return err
	})
	return owners, err
}
