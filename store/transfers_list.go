package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// TransferState is how a recorded transfer to a project's address stands,
// judged when it is read (ProjectTransfers).
type TransferState string

// The transfer states.
const (
	// TransferMatched: a payment holds the transfer (its transactions list
	// it, confirmed or not); PaymentID names it.
	TransferMatched TransferState = "matched"
	// TransferPending: short of the network's confirmations, or a payment
	// may still take it (one that claimed it is still watched, or a pool +
	// txid payment on the address may still claim its hash).
	TransferPending TransferState = "pending"
	// TransferUnmatched: confirmed, at or above the dust minimum, and no
	// payment took it or can: unmatched funds.
	TransferUnmatched TransferState = "unmatched"
	// TransferBelowMinimum: confirmed, no payment took it, and below the
	// project's dust minimum, which the contract ignores.
	TransferBelowMinimum TransferState = "below_minimum"
)

// Why a transfer is unmatched (ProjectTransfer.Reason), from the payment
// the address last served before the transfer was recorded (or the
// payment that claimed it).
const (
	ReasonNoPayment      = "no_payment"      // no payment had used the address
	ReasonOtherToken     = "other_token"     // the payment was for the other token
	ReasonOtherNetwork   = "other_network"   // the address's payment was on another network of its family
	ReasonAfterPaid      = "after_paid"      // the payment was paid or overpaid already
	ReasonAfterCancelled = "after_cancelled" // the payment was cancelled
	ReasonAfterExpired   = "after_expired"   // expired, its late window (if its mode has one) closed
	ReasonNotTaken       = "not_taken"       // the payment is open but did not take it (a pool amount that matched none)
	ReasonNoMemo         = "no_memo"         // to an address memo payments share, without the memo of any (operations.md §9)
)

// TransferMark is an owner's note that an unmatched transfer is handled.
type TransferMark struct {
	At   time.Time
	By   string
	Note string
}

// ProjectTransfer is a recorded token transfer to one of a project's
// addresses, with how it stands.
type ProjectTransfer struct {
	ProjectID   int64
	ProjectName string
	Network     paywatch.Network
	TxHash      string
	LogIndex    uint32
	BlockNumber uint64
	Token       paywatch.Token
	From, To    string
	Amount      paywatch.Amount
	// Confirmations are the blocks from the transfer's to the network's
	// scanned height (0 before the scanner passed it).
	Confirmations int
	State         TransferState
	// PaymentID is the payment that holds the transfer (matched), or the
	// payment the address served before it (RelatedPaymentID otherwise).
	PaymentID        string
	RelatedPaymentID string
	// Reason says why an unmatched transfer is (Reason* constants).
	Reason string
	// SeenAt is when a scanner recorded it.
	SeenAt  time.Time
	Handled *TransferMark
}

// TransferFilter narrows ProjectTransfers.
type TransferFilter struct {
	// Unmatched, when set, keeps the unmatched transfers (true) or the
	// others (false); Handled, when set, those marked handled or not.
	Unmatched, Handled *bool
	Network            paywatch.Network
	Token              paywatch.Token
	// Address is a recipient, normalised for its family (either family's
	// form matches when Network is empty).
	Addresses                   []string
	CreatedAfter, CreatedBefore *time.Time
	// PaymentID keeps the transfers that payment holds or that came to its
	// address after it (RelatedPaymentID).
	PaymentID string
	Limit     int
	Offset    int
}

// liveSQL is the condition of a payment (alias a) that may still take a
// transfer: in progress, or expired inside the late window of a mode whose
// late funds count (watchedOnAnyNetwork without the address).
func liveSQL(a, late string) string {
	return `(` + a + `.status IN ('pending', 'confirming', 'partial') OR (` + lateOpenSQL(a, late) +
		` AND ` + paywatch.PolicySQL(a, func(p paywatch.Policy) bool { return p.LateFunds }) + `))`
}

// transfersSQL selects a project's transfers ($1), with $2 the start of
// the late window, classified: the rows of the s subquery.
func transfersSQL() string { return classifiedSQL("t.project_id = $1", "$2") }

// classifiedSQL selects the recorded transfers t of a project that match
// where (removed ones never), classified, with late the parameter of the
// late window's start: the rows of the s subquery.
func classifiedSQL(where, late string) string {
	return classifiedFromSQL("chain_transfers t", where, late)
}

// classifiedFromSQL is classifiedSQL over from, a chain_transfers row
// source named t (a page of them, say).
func classifiedFromSQL(from, where, late string) string {
	// Held: the payment counted it, confirmed (countConfirmed marks the
	// claim in the transaction that saves that state). A payment that ended
	// still listing a transfer unconfirmed (paid by an earlier one, or
	// expired) never counted it.
	held := `cp.id IS NOT NULL AND c.counted_at IS NOT NULL`
	// An open payment on the address may still take an unclaimed transfer
	// of its token mined from its start block on: its final check claims
	// what the scanner recorded before the payment's address assignment
	// committed. A pool + micro_amount payment only one within its match
	// window (paywatch.MicroMatch). A pool + txid payment only by claiming
	// the transaction's hash (ClaimTxHash), which it cannot once the hash,
	// or another transfer of the transaction to the address, is claimed
	// for another payment: the rule here is exactly the claim's, so the
	// money turns unmatched once no payment that could claim it remains,
	// and never while one can.
	// Two probes, each on a partial index of the payments that can still
	// take transfers (payments_open_address_idx, payments_expired_address_idx),
	// so that a pool address's thousands of finished payments are not read
	// for every transfer.
	// A memo payment only one carrying its memo (WatchedPayment.Accepts).
	takes := ` AND lp.token = t.token AND COALESCE(lp.start_block, 0) <= t.block_number
	             AND (lp.memo IS NULL OR lp.memo = ANY(t.memos))
	             AND (NOT ` + paywatch.PolicySQL("lp", func(p paywatch.Policy) bool { return p.ExactMatch }) + `
	                  OR abs(t.amount / power(10::numeric, ` + decimalsSQL("t.network", "t.token") + `)
	                         - lp.amount / power(10::numeric, lp.decimals)) < 0.0001)
	             AND (NOT ` + paywatch.PolicySQL("lp", func(p paywatch.Policy) bool { return p.TxIDOnly }) + `
	                  OR (NOT EXISTS (SELECT 1 FROM tx_claims x
	                                  WHERE x.network = t.network AND x.tx_hash = t.tx_hash AND x.payment_id <> lp.id)
	                      AND NOT EXISTS (SELECT 1 FROM transfer_claims o
	                                      WHERE o.network = t.network AND o.tx_hash = t.tx_hash
	                                        AND o.to_address = t.to_address AND o.payment_id <> lp.id)))`
	mayTake := `(EXISTS (
	           SELECT 1 FROM payments lp WHERE lp.network = t.network AND lp.address = t.to_address
	             AND lp.status IN ('pending', 'confirming', 'partial')` + takes + `)
	         OR EXISTS (
	           SELECT 1 FROM payments lp WHERE lp.network = t.network AND lp.address = t.to_address
	             AND ` + lateOpenSQL("lp", late) + `
	             AND ` + paywatch.PolicySQL("lp", func(p paywatch.Policy) bool { return p.LateFunds }) + takes + `))`
	return `
	SELECT s.* FROM (
	SELECT t.network, t.tx_hash, t.log_index, t.block_number, t.token, t.from_address, t.to_address, t.amount::text,
	       ` + decimalsSQL("t.network", "t.token") + ` AS decimals,
	       GREATEST(COALESCE(cc.height, 0) - t.block_number + 1, 0) AS confirmations,
	       CASE
	         WHEN ` + held + ` THEN 'matched'
	         WHEN cc.height IS NULL OR cc.height < t.block_number + ` + confirmationsSQL("t.network") + ` - 1 THEN 'pending'
	         WHEN cp.id IS NOT NULL AND ` + liveSQL("cp", late) + ` THEN 'pending'
	         WHEN cp.id IS NULL AND ` + mayTake + ` THEN 'pending'
	         WHEN ` + belowMinimumSQL() + ` THEN 'below_minimum'
	         ELSE 'unmatched'
	       END AS state,
	       CASE WHEN ` + held + ` THEN cp.id::text END AS payment_id,
	       COALESCE(cp.id, rel.id)::text AS related_id,
	       CASE
	         WHEN COALESCE(cp.id, rel.id) IS NULL THEN 'no_payment'
	         WHEN cp.id IS NULL AND rmemo.id IS NULL AND rsame.memo IS NOT NULL THEN 'no_memo'
	         WHEN cp.id IS NULL AND rel.network <> t.network THEN 'other_network'
	         WHEN COALESCE(cp.token, rel.token) <> t.token THEN 'other_token'
	         WHEN COALESCE(cp.status, rel.status) IN ('paid', 'overpaid') THEN 'after_paid'
	         WHEN COALESCE(cp.status, rel.status) = 'cancelled' THEN 'after_cancelled'
	         WHEN COALESCE(cp.status, rel.status) = 'expired' THEN 'after_expired'
	         ELSE 'not_taken'
	       END AS reason,
	       t.created_at, t.handled_at, t.handled_by, t.handled_note, t.project_id, pr.name AS project_name
	FROM ` + from + `
	JOIN projects pr ON pr.id = t.project_id
	LEFT JOIN chain_cursors cc ON cc.network = t.network
	LEFT JOIN transfer_claims c ON c.network = t.network AND c.tx_hash = t.tx_hash AND c.log_index = t.log_index
	LEFT JOIN payments cp ON cp.id = c.payment_id
	-- The payment the address served last before the transfer's block
	-- (start_block: the head when the address was assigned), on the
	-- transfer's network first (rsame), then on another of its family
	-- (rother): an EVM address is the same on all four, and paying on the
	-- wrong one is a common mistake. Block numbers of two chains do not
	-- compare, so there it is the payment last given the address before
	-- the transfer was seen; one given it later was not the one paid by
	-- mistake. Index probes (payments_address_start_idx, and
	-- payments_address_assigned_idx for rother, so that an old transfer
	-- does not walk every payment given the address after it), not a sort
	-- of every payment on a shared address; rother is read only when rsame
	-- finds none.
	LEFT JOIN LATERAL (
	  SELECT p.id, p.token, p.status, p.network, p.memo FROM payments p
	  WHERE p.network = t.network AND p.address = t.to_address AND p.start_block <= t.block_number
	  ORDER BY p.start_block DESC, p.created_at DESC, p.id DESC LIMIT 1) rsame ON true
	-- On an address that memo payments share (SOLANA), the payment whose
	-- memo the transfer carries, before any other (payments_memo_idx);
	-- none there, and the address's last payment a memo payment: no_memo.
	LEFT JOIN LATERAL (
	  SELECT p.id, p.token, p.status, p.network FROM payments p
	  WHERE cardinality(t.memos) > 0 AND p.network = t.network AND p.address = t.to_address AND p.memo = ANY(t.memos)
	    AND p.start_block <= t.block_number
	  ORDER BY p.start_block DESC, p.created_at DESC, p.id DESC LIMIT 1) rmemo ON true
	LEFT JOIN LATERAL (
	  SELECT o.id, o.token, o.status, o.network FROM unnest(` + otherNetworksSQL("t.network") + `) n(network)
	  CROSS JOIN LATERAL (
	    SELECT p.id, p.token, p.status, p.network, COALESCE(p.address_assigned_at, p.created_at) AS assigned_at FROM payments p
	    WHERE p.network = n.network AND p.address = t.to_address AND p.start_block IS NOT NULL
	      AND COALESCE(p.address_assigned_at, p.created_at) <= t.created_at
	    ORDER BY COALESCE(p.address_assigned_at, p.created_at) DESC, p.id DESC LIMIT 1) o
	  WHERE rsame.id IS NULL
	  ORDER BY o.assigned_at DESC, o.id DESC LIMIT 1) rother ON true
	CROSS JOIN LATERAL (
	  SELECT COALESCE(rmemo.id, rsame.id, rother.id) AS id, COALESCE(rmemo.token, rsame.token, rother.token) AS token,
	         COALESCE(rmemo.status, rsame.status, rother.status) AS status,
	         COALESCE(rmemo.network, rsame.network, rother.network) AS network) rel
	WHERE ` + where + ` AND NOT t.removed
	) s`
}

// ProjectTransfers returns a project's recorded transfers that match f,
// newest first, and how many match in all. Each is classified as it is
// read (TransferState), so that a payment's later progress (a claim, the
// end of a late window, a reorg) shows at once, and transfers recorded
// before classification existed are classified like the others.
func (s *Store) ProjectTransfers(ctx context.Context, projectID int64, f TransferFilter) ([]ProjectTransfer, int, error) {
	args := []any{projectID, s.lateWindowStart()}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	// Conditions on the recorded row go inside (inner), so that only the
	// rows they keep are classified; those on the verdict go outside.
	inner := []string{"t.project_id = $1"}
	where := []string{"true"}
	if f.Unmatched != nil {
		op := "="
		if !*f.Unmatched {
			op = "<>"
		}
		where = append(where, "s.state "+op+" 'unmatched'")
	}
	if f.Handled != nil {
		if *f.Handled {
			inner = append(inner, "t.handled_at IS NOT NULL")
		} else {
			inner = append(inner, "t.handled_at IS NULL")
		}
	}
	if f.Network != "" {
		inner = append(inner, "t.network = "+arg(string(f.Network)))
	}
	if f.Token != "" {
		inner = append(inner, "t.token = "+arg(string(f.Token)))
	}
	if len(f.Addresses) > 0 {
		inner = append(inner, "t.to_address = ANY("+arg(f.Addresses)+"::text[])")
	}
	if f.CreatedAfter != nil {
		inner = append(inner, "t.created_at > "+arg(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		inner = append(inner, "t.created_at < "+arg(*f.CreatedBefore))
	}
	if f.PaymentID != "" {
		p := arg(f.PaymentID)
		inner = append(inner, "t.to_address = (SELECT pa.address FROM payments pa WHERE pa.id::text = "+p+")")
		where = append(where, "(s.payment_id = "+p+" OR s.related_id = "+p+")")
	}
	cond := strings.Join(inner, " AND ")
	query := classifiedSQL(cond, "$2") + ` WHERE ` + strings.Join(where, " AND ")
	countSQL := `SELECT count(*) FROM (` + query + `) n`
	countArgs := slices.Clone(args)
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	order := `ORDER BY %[1]s.created_at DESC, %[1]s.network, %[1]s.tx_hash, %[1]s.log_index`
	window := ` LIMIT ` + arg(limit) + ` OFFSET ` + arg(f.Offset)
	page := query + ` ` + fmt.Sprintf(order, "s") + window
	if len(where) == 1 {
		// No condition on the verdict: the page is cut from the recorded
		// rows first, and only its rows are classified; the total needs no
		// classifying at all.
		from := `(SELECT * FROM chain_transfers t WHERE ` + cond + ` AND NOT t.removed ` + fmt.Sprintf(order, "t") + window + `) t`
		page = classifiedFromSQL(from, "true", "$2") + ` ` + fmt.Sprintf(order, "s")
		countSQL = `SELECT count(*) FROM chain_transfers t WHERE ` + cond + ` AND NOT t.removed AND $2::timestamptz IS NOT NULL`
	}
	rows, err := s.pool.Query(ctx, page, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list transfers: %w", err)
	}
	out, err := scanTransfers(rows)
	if err != nil {
		return nil, 0, err
	}
	var total int
	if err := s.pool.QueryRow(ctx, countSQL, countArgs...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count transfers: %w", err)
	}
	return out, total, nil
}

// ProjectTransfer returns one of a project's transfers: the one of
// transaction txHash on network n at logIndex, or with logIndex nil the
// first of the transaction's (txHash as paywatch.NormalizeTxHash gives
// it). ENOTFOUND when the project has none.
func (s *Store) ProjectTransfer(ctx context.Context, projectID int64, n paywatch.Network, txHash string, logIndex *uint32) (ProjectTransfer, error) {
	args := []any{projectID, s.lateWindowStart(), string(n), txHash}
	cond := "s.network = $3 AND s.tx_hash = $4"
	if logIndex != nil {
		args = append(args, int64(*logIndex))
		cond += " AND s.log_index = $5"
	}
	rows, err := s.pool.Query(ctx, transfersSQL()+` WHERE `+cond+` ORDER BY s.log_index LIMIT 1`, args...)
	if err != nil {
		return ProjectTransfer{}, fmt.Errorf("read transfer: %w", err)
	}
	ts, err := scanTransfers(rows)
	if err != nil {
		return ProjectTransfer{}, err
	}
	if len(ts) == 0 {
		return ProjectTransfer{}, paywatch.Errorf(paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	}
	return ts[0], nil
}

// MarkTransferHandled records that an unmatched transfer of the project
// is handled, by whom and with what note, and returns the transfer: the
// one at logIndex or, with logIndex nil, the transaction's first that is
// unmatched. The mark becomes the transfer's current one (a later mark
// replaces it in the list) and is added to its timeline, which keeps
// every mark (TransferTimeline). ENOTFOUND when the project has no such
// transfer; ECONFLICT when it is not unmatched (a payment holds it or may
// still), or without logIndex when none of the transaction's is.
func (s *Store) MarkTransferHandled(ctx context.Context, projectID int64, n paywatch.Network, txHash string, logIndex *uint32, by, note string) (ProjectTransfer, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		args := []any{projectID, s.lateWindowStart(), string(n), txHash}
		cond := "s.network = $3 AND s.tx_hash = $4"
		if logIndex != nil {
			args = append(args, int64(*logIndex))
			cond += " AND s.log_index = $5"
		}
		// The transaction's rows first, locked: marks of one transfer take
		// turns, and the verdict below is read under the lock.
		lock := `SELECT 1 FROM chain_transfers WHERE project_id = $1 AND network = $2 AND tx_hash = $3`
		if _, err := tx.Exec(ctx, lock+` FOR UPDATE`, projectID, string(n), txHash); err != nil {
			return err
		}
		var state TransferState
		var key struct {
			hash string
			idx  int64
		}
		// Unmatched ones first: a transaction may pay a payment with its
		// first transfer and send more to the address in a later one.
		err := tx.QueryRow(ctx, `SELECT s.tx_hash, s.log_index, s.state FROM (`+transfersSQL()+` WHERE `+cond+
			` ORDER BY s.state <> 'unmatched', s.log_index LIMIT 1) s`, args...).Scan(&key.hash, &key.idx, &state)
		if errors.Is(err, pgx.ErrNoRows) {
			return paywatch.Errorf(paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
		}
		if err != nil {
			return err
		}
		if state != TransferUnmatched {
			return paywatch.Errorf(paywatch.ECONFLICT, paywatch.MsgTransferNotUnmatched)
		}
		err = markTransfer(ctx, tx, projectID, n, key.hash, key.idx, TransferMark{At: s.clock().UTC(), By: by, Note: note})
		if err == nil {
			idx := uint32(key.idx)
			logIndex, txHash = &idx, key.hash
		}
		return err
	})
	if err != nil {
		var pe *paywatch.Error
		if errors.As(err, &pe) {
			return ProjectTransfer{}, err
		}
		return ProjectTransfer{}, fmt.Errorf("mark transfer handled: %w", err)
	}
	return s.ProjectTransfer(ctx, projectID, n, txHash, logIndex)
}

// scanTransfers reads transfersSQL rows.
func scanTransfers(rows pgx.Rows) ([]ProjectTransfer, error) {
	defer rows.Close()
	out := []ProjectTransfer{}
	for rows.Next() {
		var (
			t                   ProjectTransfer
			network, token      string
			amount              string
			decimals            *int
			logIndex, block     int64
			confs               int64
			state               string
			paymentID, related  *string
			reason              string
			handledAt           *time.Time
			handledBy, handNote *string
		)
		if err := rows.Scan(&network, &t.TxHash, &logIndex, &block, &token, &t.From, &t.To, &amount, &decimals, &confs,
			&state, &paymentID, &related, &reason, &t.SeenAt, &handledAt, &handledBy, &handNote, &t.ProjectID, &t.ProjectName); err != nil {
			return nil, fmt.Errorf("read transfers: %w", err)
		}
		d := 0
		if decimals != nil {
			d = *decimals
		}
		a, err := amountOf(amount, d)
		if err != nil {
			return nil, fmt.Errorf("read transfers: %w", err)
		}
		t.Network, t.Token, t.Amount = paywatch.Network(network), paywatch.Token(token), a
		t.LogIndex, t.BlockNumber, t.Confirmations = uint32(logIndex), uint64(block), int(confs)
		t.State = TransferState(state)
		if paymentID != nil {
			t.PaymentID = *paymentID
		}
		if related != nil && t.PaymentID == "" {
			t.RelatedPaymentID = *related
		}
		if t.State == TransferUnmatched || t.State == TransferBelowMinimum {
			t.Reason = reason
		}
		t.SeenAt = t.SeenAt.UTC()
		if handledAt != nil {
			t.Handled = &TransferMark{At: handledAt.UTC()}
			if handledBy != nil {
				t.Handled.By = *handledBy
			}
			if handNote != nil {
				t.Handled.Note = *handNote
			}
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read transfers: %w", err)
	}
	return out, nil
}
