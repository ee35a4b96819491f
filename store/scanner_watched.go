package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// watchedCondition returns the SQL condition of a payment p the scanners
// watch, with $1 the network and the parameter late the start of the late
// window (now − 24 h): an address on the network, and either in progress or
// expired inside the late window of a mode whose late funds count
// (per_payment and pool + txid; interface.md "States and transitions").
// Cancelled, paid and overpaid payments are never watched: their workflows
// have ended or ignore transfers.
func watchedCondition(late string) string {
	return `
	p.network = $1 AND ` + watchedOnAnyNetwork(late)
}

// watchedOnAnyNetwork is watchedCondition on every network: the payments p
// whose address still takes transfers. A mode switch (applySettings) and
// a static address registration (PutWallet) are refused while one would
// share its address.
func watchedOnAnyNetwork(late string) string {
	return `p.address IS NOT NULL
	AND (
		p.status IN ('pending', 'confirming', 'partial')
		OR (` + lateOpenSQL("p", late) + ` AND ` + paywatch.PolicySQL("p", func(p paywatch.Policy) bool { return p.LateFunds }) + `)
	)`
}

// lateOpenSQL is the condition of an expired payment (alias a) whose late
// window its workflow has not closed (late_closed, saved with the state
// that closes it), with late the parameter of lateWindowStart: the
// workflow's verdict decides, not the clock, since the close waits for the
// chain's answer (up to a day of an outage) and counts what the chain
// held before the window's end. Whether the payment's mode takes late
// funds at all is the caller's to add.
func lateOpenSQL(a, late string) string {
	return `(` + a + `.status = 'expired' AND NOT ` + a + `.late_closed AND ` + a + `.expires_at > ` + late + `)`
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

// Waiting reports whether a payment waits on network n: one in progress
// (pending, confirming or partial), or a counted transfer still awaiting
// its confirmations. It is the idle scanner's wake check: index reads
// (payments_waiting_idx, awaited_confirmations_due_idx), whatever the
// number of finished payments. An expired payment inside its late window
// does not keep its network at block pace (issue 37): its window's close
// reads the chain up to the window's end itself, so a late transfer the
// scanner reads only at the idle pace still counts.
//
// A payment whose workflow still judges late transfers by when their
// signals arrive (a run of the release before, not late_by_chain) keeps
// its network at block pace through its late window, as it did.
//
// It is planned for its network at each call (pgx.QueryExecModeExec): a
// cached generic plan, which PostgreSQL picks after five calls, does not
// know the network, and where one network holds most open payments it
// reads the whole table for every other (23 ms at 67,000 payments,
// growing with them, at every idle poll of every idle network).
func (s *Store) Waiting(ctx context.Context, n paywatch.Network) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM payments p
			WHERE p.network = $1 AND p.address IS NOT NULL AND p.status IN ('pending', 'confirming', 'partial'))
		OR EXISTS (SELECT 1 FROM awaited_confirmations a WHERE a.network = $1 AND a.signalled_at IS NULL)
		OR EXISTS (SELECT 1 FROM payments p WHERE `+watchedCondition("$2")+` AND p.status = 'expired' AND NOT p.late_by_chain
			AND p.expires_at > $3)`, pgx.QueryExecModeExec,
		string(n), s.lateWindowStart(), s.clock().Add(-paywatch.LateWindow-paywatch.ConfirmingGrace)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("payments waiting on %s: %w", n, err)
	}
	return ok, nil
}

// lateWindowStart is the oldest expires_at whose payment may still take
// late funds while its workflow has not closed the window (lateOpenSQL):
// paywatch.LateHold ago.
func (s *Store) lateWindowStart() time.Time {
	return s.clock().Add(-paywatch.LateHold)
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
	// Memo is a memo payment's memo (SOLANA: its Solana Pay reference):
	// only a transfer carrying it concerns the payment. "" for the others.
	Memo string
}

// Accepts reports whether transfer t concerns the payment: its token,
// mined from the payment's start block on, carrying the payment's memo
// if it has one, and in a transaction a pool + txid payment claimed.
func (w WatchedPayment) Accepts(t paywatch.Transfer) bool {
	if t.Token != w.Token || t.BlockNumber < w.StartBlock {
		return false
	}
	if w.Memo != "" && !slices.Contains(t.Memos, w.Memo) {
		return false
	}
	return !w.TxidOnly || slices.Contains(w.ClaimedTxHashes, t.TxHash)
}

// WatchedAddresses returns, for those of addresses (normalised) that
// watched payments on network n use, the payments watching each one. A pool
// address is shared: every payment on it is listed. txHashes are the
// transactions of the batch being matched; a pool + txid payment is listed
// only if it claimed one of them (the others ignore transfers they did not
// claim, and a busy pool address may have thousands of them).
//
// memos are the memos the batch's transfers carry: a memo payment is
// listed only if its memo is one of them, so the thousand memo payments a
// SOLANA wallet may hold open are not read for each of its transfers.
//
// It is one query, on the (network, address) index and the tx_claims
// primary key, whatever the number of watched addresses: the scanners call
// it once per batch with the batch's distinct recipients.
func (s *Store) WatchedAddresses(ctx context.Context, n paywatch.Network, addresses, txHashes, memos []string) (map[string][]WatchedPayment, error) {
	return s.watchedAddresses(ctx, s.pool, n, addresses, txHashes, memos)
}

// rowsQuerier is what pgxpool.Pool and pgx.Tx share for multi-row reads.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// watchedAddresses is WatchedAddresses on q (the pool, or a transaction
// that claims transfers).
func (s *Store) watchedAddresses(ctx context.Context, q rowsQuerier, n paywatch.Network, addresses, txHashes, memos []string) (map[string][]WatchedPayment, error) {
	out := map[string][]WatchedPayment{}
	if len(addresses) == 0 {
		return out, nil
	}
	if txHashes == nil {
		txHashes = []string{}
	}
	if memos == nil {
		memos = []string{}
	}
	rows, err := q.Query(ctx, `
		WITH claims AS (
			SELECT c.payment_id, array_agg(c.tx_hash ORDER BY c.tx_hash) AS hashes
			FROM tx_claims c
			WHERE c.network = $1 AND c.tx_hash = ANY($4::text[])
			GROUP BY c.payment_id
		)
		SELECT p.address, p.id::text, p.token, COALESCE(p.start_block, 0), p.address_mode, COALESCE(p.pool_matching, ''),
		       COALESCE(c.hashes, '{}'), p.amount::text, p.decimals, COALESCE(p.memo, '')
		FROM payments p
		LEFT JOIN claims c ON c.payment_id = p.id
		WHERE `+watchedCondition("$3")+` AND p.address = ANY($2::text[])
		  AND (NOT `+paywatch.PolicySQL("p", func(p paywatch.Policy) bool { return p.TxIDOnly })+` OR c.hashes IS NOT NULL)
		  AND (p.memo IS NULL OR p.memo = ANY($5::text[]))
		ORDER BY p.address, p.created_at, p.id`,
		string(n), addresses, s.lateWindowStart(), txHashes, memos)
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
		if err := rows.Scan(&addr, &w.PaymentID, &token, &start, &mode, &matching, &w.ClaimedTxHashes, &amount, &decimals, &w.Memo); err != nil {
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
