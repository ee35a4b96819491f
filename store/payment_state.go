package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// PaymentTransaction is one element of payments.transactions, the JSON the
// payment workflow saves: the API's Transaction fields (tx_hash, amount as a
// display decimal string, from, confirmed, confirmations) plus where the
// transfer was seen.
type PaymentTransaction struct {
	TxHash        string `json:"tx_hash"`
	LogIndex      uint32 `json:"log_index"`
	BlockNumber   uint64 `json:"block_number"`
	BlockHash     string `json:"block_hash"`
	From          string `json:"from"`
	Amount        string `json:"amount"`
	Confirmations int    `json:"confirmations"`
	Confirmed     bool   `json:"confirmed"`
}

// PaymentTransactions converts the workflow's transactions to their stored
// form.
func PaymentTransactions(txs []paywatch.Transaction) []PaymentTransaction {
	out := make([]PaymentTransaction, 0, len(txs))
	for _, t := range txs {
		out = append(out, PaymentTransaction{
			TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash,
			From: t.From, Amount: t.Amount.String(), Confirmations: t.Confirmations, Confirmed: t.Confirmed,
		})
	}
	return out
}

// transactionsOf reads payments.transactions, whose amounts are at the
// payment's decimals. A row it cannot read is an error, never an empty list.
func transactionsOf(raw []byte, decimals int) ([]paywatch.Transaction, error) {
	var stored []PaymentTransaction
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &stored); err != nil {
			return nil, fmt.Errorf("read transactions: %w", err)
		}
	}
	out := make([]paywatch.Transaction, 0, len(stored))
	for _, t := range stored {
		a, err := paywatch.ParseAmount(t.Amount, decimals)
		if err != nil {
			return nil, fmt.Errorf("read transaction %s: %w", t.TxHash, err)
		}
		out = append(out, paywatch.Transaction{
			TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash,
			From: t.From, Amount: a, Confirmations: t.Confirmations, Confirmed: t.Confirmed,
		})
	}
	return out, nil
}

// SavePaymentState writes the workflow's view of a payment: status,
// network, token, address, amounts, transactions, tx_hash, paid_at,
// late_payment and updated_at. It is idempotent and ordered by
// st.Version: a save only applies when its version is newer than the
// stored one, so a retried or overtaken save never undoes a later one.
// A save that changes the status adds a step to the payment's timeline
// (PaymentTimeline) in the same transaction, and the unconfirmed
// transactions become the payment's awaited confirmations
// (awaitConfirmations). applied reports whether the row changed.
func (s *Store) SavePaymentState(ctx context.Context, st paywatch.PaymentState) (applied bool, err error) {
	saved, err := s.SavePaymentStateResult(ctx, st)
	return saved.Applied, err
}

// SavedState is what one save of a payment's state did.
type SavedState struct {
	// Applied reports whether the row changed: the save was newer than
	// the stored state.
	Applied bool
	// Entered is the status the save moved the payment into, "" when the
	// status stayed as it was. A retried or overtaken save never applies,
	// so each change of status is reported once.
	Entered paywatch.Status
}

// SavePaymentStateResult is SavePaymentState, also reporting whether the
// save changed the payment's status (a step of its timeline), for the
// service's metrics.
func (s *Store) SavePaymentStateResult(ctx context.Context, st paywatch.PaymentState) (SavedState, error) {
	var saved SavedState
	decimals := st.Amount.Decimals()
	paid, err := unitsAtScale(st.PaidAmount, decimals)
	if err != nil {
		return saved, err
	}
	var original *string
	if st.OriginalAmount != nil {
		o, err := unitsAtScale(*st.OriginalAmount, decimals)
		if err != nil {
			return saved, err
		}
		original = &o
	}
	txs, err := json.Marshal(PaymentTransactions(st.Transactions))
	if err != nil {
		return saved, err
	}
	var startBlock *int64
	if st.StartBlock > 0 {
		v := int64(st.StartBlock)
		startBlock = &v
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
		UPDATE payments SET
			status = $2,
			network = COALESCE($3, network),
			token = COALESCE($4, token),
			address = COALESCE($5, address),
			amount = $6::numeric,
			original_amount = COALESCE($7::numeric, original_amount),
			decimals = $8,
			paid_amount = $9::numeric,
			transactions = $10::jsonb,
			tx_hash = $11,
			paid_at = $12,
			late_payment = $13,
			address_assigned_at = COALESCE($14, address_assigned_at),
			start_block = COALESCE($15, start_block),
			state_version = $16,
			updated_at = $17,
			late_closed = $18,
			late_by_chain = $19
		WHERE id = $1 AND state_version < $16`,
			st.PaymentID, string(st.Status),
			optionalText(string(st.Network)), optionalText(string(st.Token)), optionalText(st.Address),
			st.Amount.Units().String(), original, decimals,
			paid, string(txs), optionalText(st.TxHash),
			utcOrNil(st.PaidAt), st.LatePayment, utcOrNil(st.AddressAssignedAt), startBlock,
			st.Version, s.now().UTC(), st.LateClosed, st.LateByChain,
		)
		if err != nil {
			return err
		}
		saved = SavedState{Applied: tag.RowsAffected() == 1}
		if saved.Applied {
			changed, err := recordStatusChange(ctx, tx, st.PaymentID)
			if err != nil {
				return err
			}
			if changed {
				saved.Entered = st.Status
			}
			if err := awaitConfirmations(ctx, tx, st); err != nil {
				return err
			}
		}
		return countConfirmed(ctx, tx, st, s.now().UTC())
	})
	if err != nil {
		return SavedState{}, fmt.Errorf("save payment %s state v%d: %w", st.PaymentID, st.Version, err)
	}
	return saved, nil
}

// countConfirmed adds the confirmed transfers of st that were not counted
// before to the received total of the payment's derived address, in the
// transaction that saves the state: per_user rotation (rotation_threshold)
// and the unused-address report read that total. Each transfer counts once:
// its claim row is marked counted (and created if a path that claims by
// hash, pool + txid, made none). A transfer claimed by another payment is
// not counted for this one.
func countConfirmed(ctx context.Context, tx pgx.Tx, st paywatch.PaymentState, now time.Time) error {
	var (
		hashes, tos, tokens, amounts []string
		indexes                      []int64
	)
	for _, t := range st.Transactions {
		if !t.Confirmed {
			continue
		}
		hashes = append(hashes, t.TxHash)
		indexes = append(indexes, int64(t.LogIndex))
		tos = append(tos, st.Address)
		tokens = append(tokens, string(st.Token))
		amounts = append(amounts, t.Amount.Units().String())
	}
	if len(hashes) == 0 || st.Network == "" {
		return nil
	}
	// Every confirmed transfer of one payment has the payment's token, so
	// its units are at the token's decimals, as derived_addresses.decimals.
	_, err := tx.Exec(ctx, `
		WITH counted AS (
			INSERT INTO transfer_claims AS c (network, tx_hash, log_index, payment_id, to_address, token, amount, counted_at, created_at)
			SELECT $1, t.tx_hash, t.log_index, $2::uuid, t.to_address, t.token, t.amount::numeric, $8, $8
			FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[])
			     AS t(tx_hash, log_index, to_address, token, amount)
			ORDER BY t.tx_hash, t.log_index
			ON CONFLICT (network, tx_hash, log_index) DO UPDATE SET counted_at = EXCLUDED.counted_at
			WHERE c.payment_id = EXCLUDED.payment_id AND c.counted_at IS NULL
			RETURNING c.amount
		)
		UPDATE derived_addresses d SET received = d.received + (SELECT COALESCE(sum(amount), 0) FROM counted)
		FROM payments p
		WHERE p.id = $2::uuid AND d.id = p.derived_address_id AND EXISTS (SELECT 1 FROM counted)`,
		string(st.Network), st.PaymentID, hashes, indexes, tos, tokens, amounts, now)
	return err
}

// optionalText maps "" to NULL.
func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// utcOrNil returns t in UTC, or nil.
func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// unitsAtScale returns a's base units at d decimals as a decimal string; d must
// not be below a's significant decimals.
func unitsAtScale(a paywatch.Amount, d int) (string, error) {
	r, err := a.Rescale(d)
	if err != nil {
		return "", err
	}
	return r.Units().String(), nil
}
