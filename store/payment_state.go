package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
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
func PaymentTransactions(txs []workflows.Transaction) []PaymentTransaction {
	out := make([]PaymentTransaction, 0, len(txs))
	for _, t := range txs {
		out = append(out, PaymentTransaction{
			TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash,
			From: t.From, Amount: t.Amount.String(), Confirmations: t.Confirmations, Confirmed: t.Confirmed,
		})
	}
	return out
}

// SavePaymentState writes the workflow's view of a payment: status,
// network, token, address, amounts, transactions, tx_hash, paid_at,
// late_payment and updated_at. It is idempotent and ordered by
// st.Version: a save only applies when its version is newer than the
// stored one, so a retried or overtaken save never undoes a later one.
// applied reports whether the row changed.
func (s *Store) SavePaymentState(ctx context.Context, st workflows.PaymentState) (applied bool, err error) {
	decimals := st.Amount.Decimals()
	paid, err := unitsAtScale(st.PaidAmount, decimals)
	if err != nil {
		return false, err
	}
	var original *string
	if st.OriginalAmount != nil {
		o, err := unitsAtScale(*st.OriginalAmount, decimals)
		if err != nil {
			return false, err
		}
		original = &o
	}
	txs, err := json.Marshal(PaymentTransactions(st.Transactions))
	if err != nil {
		return false, err
	}
	var startBlock *int64
	if st.StartBlock > 0 {
		v := int64(st.StartBlock)
		startBlock = &v
	}
	tag, err := s.pool.Exec(ctx, `
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
			updated_at = $17
		WHERE id = $1 AND state_version < $16`,
		st.PaymentID, string(st.Status),
		optionalText(string(st.Network)), optionalText(string(st.Token)), optionalText(st.Address),
		st.Amount.Units().String(), original, decimals,
		paid, string(txs), optionalText(st.TxHash),
		utcOrNil(st.PaidAt), st.LatePayment, utcOrNil(st.AddressAssignedAt), startBlock,
		st.Version, s.now().UTC(),
	)
	if err != nil {
		return false, fmt.Errorf("save payment %s state v%d: %w", st.PaymentID, st.Version, err)
	}
	return tag.RowsAffected() == 1, nil
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
