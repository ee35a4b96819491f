package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/paywatch/paywatch"
)

// GeneratedOrderIDPrefix starts the external_order_id generated for a
// payment created without a network and without one.
const GeneratedOrderIDPrefix = "PAY-"

// Payment is a payments row with what the API and the workflow input need
// from its project.
type Payment struct {
	ID          string
	ProjectID   int64
	ProjectSlug string
	// ProjectName is the project's name (a memo payment's wallet link
	// names it).
	ProjectName  string
	Status       paywatch.Status
	Mode         paywatch.AddressMode
	PoolMatching paywatch.PoolMatching // "" unless pool mode
	// Network, Token and Address are "" until a network is selected.
	Network paywatch.Network
	Token   paywatch.Token
	Address string
	// Amount is the expected amount (with the micro offset); OriginalAmount
	// the requested base amount in pool + micro_amount mode.
	Amount         paywatch.Amount
	OriginalAmount *paywatch.Amount
	MicroOffset    *int
	PaidAmount     paywatch.Amount
	TxHash         string
	// Transactions are the transfers the workflow counted, as it saved them.
	Transactions      []paywatch.Transaction
	LatePayment       bool
	ExternalRef       string
	ExternalOrderID   *string
	Metadata          json.RawMessage
	ExpiresAt         time.Time
	PaidAt            *time.Time
	AddressAssignedAt *time.Time
	StartBlock        uint64
	// CreatedWithoutNetwork is true for a payment whose network the
	// customer selects on the hosted page, even after selection.
	CreatedWithoutNetwork bool
	WorkflowStarted       bool
	// DustMinimum is the project's minAmount (nil: the global 0.10).
	DustMinimum *paywatch.Amount
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Link is set for a payment made through a payment link.
	Link *LinkPurchase
	// Locale is the merchant's default language for the hosted pages; ""
	// for none.
	Locale string
	// Memo is a memo payment's memo (operations.md §9: per_payment and
	// per_user payments on SOLANA); "" for the others.
	Memo string
}

// LinkPurchase is what a payment made through a payment link records: the
// link (its title as it reads now) and what the buyer entered.
type LinkPurchase struct {
	LinkID, LinkSlug, LinkTitle      string
	BuyerEmail, BuyerName, BuyerNote string
}

// AwaitingNetwork reports whether the payment still waits for a network.
func (p *Payment) AwaitingNetwork() bool { return p.Network == "" }

// RequestedAmount is the amount the merchant asked for: the base amount in
// pool + micro_amount mode, the amount otherwise. Idempotency compares it.
func (p *Payment) RequestedAmount() paywatch.Amount {
	if p.OriginalAmount != nil {
		return *p.OriginalAmount
	}
	return p.Amount
}

// WorkflowInput is the input that starts the payment's workflow. It is the
// same whether the API starts the workflow right after creation or the
// reconciler starts it later.
func (p *Payment) WorkflowInput() paywatch.PaymentInput {
	in := paywatch.PaymentInput{
		PaymentID:       p.ID,
		ProjectID:       p.ProjectID,
		ProjectSlug:     p.ProjectSlug,
		Mode:            p.Mode,
		PoolMatching:    p.PoolMatching,
		Network:         p.Network,
		Token:           p.Token,
		Address:         p.Address,
		StartBlock:      p.StartBlock,
		Amount:          p.Amount,
		OriginalAmount:  p.OriginalAmount,
		DustMinimum:     p.DustMinimum,
		ExternalRef:     p.ExternalRef,
		ExternalOrderID: p.ExternalOrderID,
		CreatedAt:       p.CreatedAt,
		ExpiresAt:       p.ExpiresAt,
	}
	if p.AddressAssignedAt != nil {
		in.AddressAssignedAt = *p.AddressAssignedAt
	}
	return in
}

const paymentSelect = `
	SELECT pay.id::text, pay.project_id, pr.slug, pr.name, pay.status, pay.address_mode, pay.pool_matching,
	       pay.network, pay.token, pay.address, pay.amount::text, pay.original_amount::text, pay.decimals,
	       pay.micro_offset, pay.paid_amount::text, pay.tx_hash, pay.transactions, pay.late_payment,
	       pay.external_ref, pay.external_order_id, pay.metadata, pay.expires_at, pay.paid_at,
	       pay.address_assigned_at, pay.start_block, pay.created_without_network, pay.workflow_started,
	       pay.created_at, pay.updated_at, pr.min_amount::text,
	       (SELECT c.head FROM chain_cursors c WHERE c.network = pay.network),
	       pay.payment_link_id::text, pl.slug, pl.title, pay.buyer_email, pay.buyer_name, pay.buyer_note,
	       pay.locale, pay.memo
	FROM payments pay JOIN projects pr ON pr.id = pay.project_id
	LEFT JOIN payment_links pl ON pl.id = pay.payment_link_id`

func scanPayment(row scanner) (*Payment, error) {
	var p Payment
	var pool, network, token, address, original, txHash, minAmount *string
	var amount, paid string
	var decimals int
	var startBlock, head *int64
	var txs []byte
	var linkID, linkSlug, linkTitle, buyerEmail, buyerName, buyerNote, locale, memo *string
	if err := row.Scan(&p.ID, &p.ProjectID, &p.ProjectSlug, &p.ProjectName, &p.Status, &p.Mode, &pool,
		&network, &token, &address, &amount, &original, &decimals,
		&p.MicroOffset, &paid, &txHash, &txs, &p.LatePayment,
		&p.ExternalRef, &p.ExternalOrderID, &p.Metadata, &p.ExpiresAt, &p.PaidAt,
		&p.AddressAssignedAt, &startBlock, &p.CreatedWithoutNetwork, &p.WorkflowStarted,
		&p.CreatedAt, &p.UpdatedAt, &minAmount, &head,
		&linkID, &linkSlug, &linkTitle, &buyerEmail, &buyerName, &buyerNote, &locale, &memo); err != nil {
		return nil, err
	}
	if linkID != nil {
		p.Link = &LinkPurchase{LinkID: *linkID, LinkSlug: deref(linkSlug), LinkTitle: deref(linkTitle),
			BuyerEmail: deref(buyerEmail), BuyerName: deref(buyerName), BuyerNote: deref(buyerNote)}
	}
	if pool != nil && p.Mode == paywatch.ModePool {
		p.PoolMatching = paywatch.PoolMatching(*pool)
	}
	p.Locale = deref(locale)
	p.Memo = deref(memo)
	p.Network = paywatch.Network(deref(network))
	p.Token = paywatch.Token(deref(token))
	p.Address = deref(address)
	p.TxHash = deref(txHash)
	if startBlock != nil && *startBlock > 0 {
		p.StartBlock = uint64(*startBlock)
	}
	var err error
	if p.Amount, err = amountOf(amount, decimals); err != nil {
		return nil, err
	}
	if p.PaidAmount, err = amountOf(paid, decimals); err != nil {
		return nil, err
	}
	if original != nil {
		o, err := amountOf(*original, decimals)
		if err != nil {
			return nil, err
		}
		p.OriginalAmount = &o
	}
	if p.DustMinimum, err = decimalOf(minAmount); err != nil {
		return nil, err
	}
	if p.Transactions, err = transactionsOf(txs, decimals); err != nil {
		return nil, fmt.Errorf("payment %s: %w", p.ID, err)
	}
	if head != nil && awaitsConfirmations(p.Status) && p.Status != paywatch.StatusExpired {
		liveConfirmations(p.Network, uint64(*head), p.Transactions)
	}
	p.ExpiresAt = p.ExpiresAt.UTC()
	p.CreatedAt = p.CreatedAt.UTC()
	p.UpdatedAt = p.UpdatedAt.UTC()
	return &p, nil
}

// liveConfirmations shows how deep the unconfirmed transfers are at the
// head the network's scanner last saw: the workflow learns a transfer's
// confirmations only when it has them all (the scanner's signal), so its
// saved count of a transfer still confirming is stale. The count stays
// below the network's requirement until the workflow confirms it. Only
// open payments show it: an expired, final or cancelled payment keeps the
// count its workflow saved.
func liveConfirmations(n paywatch.Network, head uint64, txs []paywatch.Transaction) {
	info, ok := paywatch.LookupNetwork(n)
	if !ok {
		return
	}
	for i := range txs {
		t := &txs[i]
		if t.Confirmed || t.BlockNumber == 0 || head < t.BlockNumber {
			continue
		}
		t.Confirmations = max(t.Confirmations, min(int(head-t.BlockNumber+1), info.Confirmations-1))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// GetPayment returns a payment of the project; a payment of another project
// is "Payment not found", like one that does not exist.
func (s *Store) GetPayment(ctx context.Context, projectID int64, id string) (*Payment, error) {
	if !paywatch.ValidPaymentID(id) {
		return nil, notFound(paywatch.MsgPaymentNotFound)
	}
	p, err := scanPayment(s.pool.QueryRow(ctx, paymentSelect+` WHERE pay.id = $1 AND pay.project_id = $2`, id, projectID))
	if noRows(err) {
		return nil, notFound(paywatch.MsgPaymentNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load payment: %w", err)
	}
	return p, nil
}

// PaymentByID returns a payment of any project.
func (s *Store) PaymentByID(ctx context.Context, id string) (*Payment, error) {
	if !paywatch.ValidPaymentID(id) {
		return nil, notFound(paywatch.MsgPaymentNotFound)
	}
	p, err := scanPayment(s.pool.QueryRow(ctx, paymentSelect+` WHERE pay.id = $1`, id))
	if noRows(err) {
		return nil, notFound(paywatch.MsgPaymentNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load payment: %w", err)
	}
	return p, nil
}

// ListFilter selects payments for GET /v1/payments.
type ListFilter struct {
	Limit  int
	Offset int
	// Status filters by the status as shown: a pending payment 3 minutes
	// past its expiry counts as expired, not pending.
	Status       *paywatch.Status
	CreatedAfter *time.Time
	UpdatedAfter *time.Time
	// PaymentLinkID keeps the payments made through one payment link (the
	// dashboard's list of a link's payments); "" for all.
	PaymentLinkID string
	// Network and Token keep the payments on one network, of one token
	// (the dashboard's filters; GET /v1/payments takes neither); "" for
	// all. A payment whose network is not chosen yet has neither.
	Network paywatch.Network
	Token   paywatch.Token
}

// ListPayments returns a page of the project's payments, newest first, and
// the total number matching the filter.
func (s *Store) ListPayments(ctx context.Context, projectID int64, f ListFilter) ([]*Payment, int, error) {
	where := []string{"pay.project_id = $1"}
	args := []any{projectID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Status != nil {
		shownExpired := func() string {
			return "pay.expires_at <= " + arg(s.clock().Add(-paywatch.PendingShownExpiredAfter))
		}
		switch *f.Status {
		case paywatch.StatusPending:
			where = append(where, "pay.status = 'pending' AND NOT ("+shownExpired()+")")
		case paywatch.StatusExpired:
			where = append(where, "(pay.status = 'expired' OR (pay.status = 'pending' AND "+shownExpired()+"))")
		default:
			where = append(where, "pay.status = "+arg(string(*f.Status)))
		}
	}
	if f.CreatedAfter != nil {
		where = append(where, "pay.created_at > "+arg(*f.CreatedAfter))
	}
	if f.UpdatedAfter != nil {
		where = append(where, "pay.updated_at > "+arg(*f.UpdatedAfter))
	}
	if f.PaymentLinkID != "" {
		where = append(where, "pay.payment_link_id = "+arg(f.PaymentLinkID)+"::uuid")
	}
	if f.Network != "" {
		where = append(where, "pay.network = "+arg(string(f.Network)))
	}
	if f.Token != "" {
		where = append(where, "pay.token = "+arg(string(f.Token)))
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payments pay WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count payments: %w", err)
	}
	rows, err := s.pool.Query(ctx, paymentSelect+` WHERE `+cond+
		` ORDER BY pay.created_at DESC, pay.id DESC LIMIT `+arg(f.Limit)+` OFFSET `+arg(f.Offset), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list payments: %w", err)
	}
	defer rows.Close()
	out := []*Payment{}
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, p)
	}
	return out, total, rows.Err()
}

// MarkWorkflowStarted records that the payment's workflow runs.
func (s *Store) MarkWorkflowStarted(ctx context.Context, id string) error {
	return s.MarkWorkflowsStarted(ctx, []string{id})
}

// MarkWorkflowsStarted records that the workflows of the payments ids run,
// in one statement.
func (s *Store) MarkWorkflowsStarted(ctx context.Context, ids []string) error {
	_, err := s.pool.Exec(ctx, `UPDATE payments SET workflow_started = true WHERE id = ANY($1::uuid[]) AND NOT workflow_started`, ids)
	if err != nil {
		return fmt.Errorf("mark workflows started: %w", err)
	}
	return nil
}

// UnstartedPayments returns up to limit payments created at least minAge
// ago whose workflow has not been recorded as started, oldest first: the
// reconciler's work list.
func (s *Store) UnstartedPayments(ctx context.Context, minAge time.Duration, limit int) ([]*Payment, error) {
	rows, err := s.pool.Query(ctx, paymentSelect+`
		WHERE NOT pay.workflow_started AND pay.created_at <= $1
		ORDER BY pay.created_at LIMIT $2`, s.clock().Add(-minAge), limit)
	if err != nil {
		return nil, fmt.Errorf("list unstarted payments: %w", err)
	}
	defer rows.Close()
	var out []*Payment
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
