package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// PaymentLink is a reusable payment page at {pay_url}/l/{slug}.
type PaymentLink struct {
	ID        string
	ProjectID int64
	Slug      string
	Title     string
	// Amount is the fixed amount; nil when the buyer enters it.
	Amount *paywatch.Amount
	// Token restricts the payment to one token; "" lets the buyer choose.
	Token paywatch.Token
	// Network fixes the network; "" lets the buyer choose it on the
	// payment page.
	Network   paywatch.Network
	Active    bool
	CreatedAt time.Time
	// Locale is the merchant's default language for the link's pages and
	// its payments'; "" for none.
	Locale string
	// Project is the link's project with its owner, for the checks a buyer's
	// submission needs (active project, active owner, minimum amount).
	Project *Project
}

// Accepting reports whether the link takes payments now: the link and its
// project are active and the project has an active owner.
func (l *PaymentLink) Accepting() bool {
	p := l.Project
	return l.Active && p != nil && p.Active && p.Owner != nil && p.Owner.Status == AccountActive
}

// NewPaymentLink is a validated POST /v1/projects/{slug}/payment-links.
type NewPaymentLink struct {
	ProjectSlug string
	Slug        string
	Title       string
	// Amount is the fixed amount (nil: the buyer enters it), parsed at the
	// token's decimals, or at the smallest decimals of any token without a
	// network.
	Amount  *paywatch.Amount
	Token   paywatch.Token   // "" for any
	Network paywatch.Network // "" for the buyer's choice
	Locale  string           // a locale.Lang tag, validated by the caller; "" for none
}

// CreatePaymentLink adds a payment link to a project. It counts against the
// owner's payment-link limit (403 when reached, like projects and wallets);
// the check and the insert run under the owner's row lock, so concurrent
// creations cannot overshoot. Slugs are unique across projects (409).
func (s *Store) CreatePaymentLink(ctx context.Context, nl NewPaymentLink) (*PaymentLink, error) {
	if err := paywatch.ValidateSlug(nl.Slug); err != nil {
		return nil, err
	}
	nl.Title = strings.TrimSpace(nl.Title)
	if nl.Title == "" || utf8.RuneCountInString(nl.Title) > paywatch.MaxLinkTitleLength || paywatch.HasControlChars(nl.Title, false) {
		return nil, invalid(paywatch.MsgLinkTitle)
	}
	if nl.Network != "" {
		if nl.Token == "" {
			nl.Token = paywatch.LinkToken(nl.Network)
		}
		if err := paywatch.ValidatePair(nl.Network, nl.Token); err != nil {
			return nil, err
		}
	} else if nl.Token != "" && !nl.Token.Valid() {
		_, err := paywatch.ParseToken(string(nl.Token))
		return nil, err
	}
	if nl.Amount != nil && nl.Amount.Sign() <= 0 {
		return nil, invalid("amount must be positive")
	}
	var out *PaymentLink
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		prj, err := scanProject(tx.QueryRow(ctx, projectSelect+` WHERE p.slug = $1 FOR SHARE OF p`, nl.ProjectSlug))
		if noRows(err) {
			return notFound(paywatch.MsgProjectNotFound)
		}
		if err != nil {
			return fmt.Errorf("load project: %w", err)
		}
		if prj.Owner == nil {
			return forbidden(paywatch.MsgLinkNeedsOwner)
		}
		owner, err := scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE id = $1 FOR UPDATE`, prj.Owner.ID))
		if err != nil {
			return fmt.Errorf("lock owner: %w", err)
		}
		if limit := owner.Limits().PaymentLinks; limit != paywatch.Unlimited {
			n, err := countPaymentLinks(ctx, tx, owner.ID)
			if err != nil {
				return err
			}
			if n >= limit {
				return forbidden(paywatch.MsgPlanLimit(limit, "payment link"))
			}
		}
		if nl.Amount != nil {
			if min := paywatch.DustMinimum(prj.MinAmount); nl.Amount.Cmp(min) < 0 {
				return invalid(fmt.Sprintf(paywatch.MsgProjectMinimumFormat, min.String()))
			}
		}
		var amount *string
		var decimals *int
		if nl.Amount != nil {
			u, d := units(*nl.Amount), nl.Amount.Decimals()
			amount, decimals = &u, &d
		}
		now := s.clock()
		var id string
		err = tx.QueryRow(ctx, `
			INSERT INTO payment_links (id, project_id, slug, title, amount, decimals, token, network, created_at, updated_at, locale)
			VALUES (gen_random_uuid(), $1, $2, $3, $4::numeric, $5, $6, $7, $8, $8, $9)
			ON CONFLICT (slug) DO NOTHING
			RETURNING id::text`,
			prj.ID, nl.Slug, nl.Title, amount, decimals, optionalText(string(nl.Token)), optionalText(string(nl.Network)), now, optionalText(nl.Locale)).Scan(&id)
		if noRows(err) {
			return conflict(paywatch.MsgLinkSlugTaken)
		}
		if err != nil {
			return fmt.Errorf("insert payment link: %w", err)
		}
		out = &PaymentLink{
			ID: id, ProjectID: prj.ID, Slug: nl.Slug, Title: nl.Title, Amount: nl.Amount,
			Token: nl.Token, Network: nl.Network, Active: true, CreatedAt: now, Project: prj,
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// countPaymentLinks counts the payment links of an owner's projects, as the
// payment-link plan limit counts them: deactivated links too.
func countPaymentLinks(ctx context.Context, q querier, ownerID int64) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, `
		SELECT count(*) FROM payment_links l JOIN projects p ON p.id = l.project_id
		WHERE p.owner_id = $1`, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count payment links: %w", err)
	}
	return n, nil
}

// PaymentLinkBySlug returns a link with its project; a slug that does not
// exist, or cannot, is ENOTFOUND.
func (s *Store) PaymentLinkBySlug(ctx context.Context, slug string) (*PaymentLink, error) {
	if paywatch.ValidateSlug(slug) != nil {
		return nil, notFound(paywatch.MsgLinkNotFound)
	}
	l, err := scanPaymentLink(s.pool.QueryRow(ctx, `SELECT `+linkColumns+` FROM payment_links l WHERE l.slug = $1`, slug))
	if noRows(err) {
		return nil, notFound(paywatch.MsgLinkNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load payment link: %w", err)
	}
	if l.Project, err = scanProject(s.pool.QueryRow(ctx, projectSelect+` WHERE p.id = $1`, l.ProjectID)); err != nil {
		return nil, fmt.Errorf("load project of payment link: %w", err)
	}
	return l, nil
}

// linkColumns are the columns scanPaymentLink reads, of payment_links l.
const linkColumns = `l.id::text, l.project_id, l.slug, l.title, l.amount::text, l.decimals, l.token, l.network, l.active, l.created_at, l.locale`

// scanPaymentLink reads linkColumns; Project is left nil.
func scanPaymentLink(row scanner) (*PaymentLink, error) {
	var l PaymentLink
	var amount, token, network, locale *string
	var decimals *int
	if err := row.Scan(&l.ID, &l.ProjectID, &l.Slug, &l.Title, &amount, &decimals, &token, &network, &l.Active, &l.CreatedAt, &locale); err != nil {
		return nil, err
	}
	l.Locale = deref(locale)
	if amount != nil && decimals != nil {
		a, err := amountOf(*amount, *decimals)
		if err != nil {
			return nil, err
		}
		l.Amount = &a
	}
	l.Token = paywatch.Token(deref(token))
	l.Network = paywatch.Network(deref(network))
	l.CreatedAt = l.CreatedAt.UTC()
	return &l, nil
}

// Buyer is what a buyer entered on a payment link's page; empty fields are
// stored as NULL.
type Buyer struct {
	Email string
	Name  string
	Note  string
}

// MaxOpenLinkPayments caps the payments in progress (pending, confirming or
// partial) that one payment link may have. Anyone who knows a link's URL can
// submit it, and each per_payment submission derives a new address (each
// pool + micro_amount one holds an offset); the cap keeps a script from
// draining the wallet's address space or the pool's offsets, while a real
// buyer waits at most until one payment resolves or expires.
const MaxOpenLinkPayments = 20

// MaxLinkPaymentsPerHour bounds the payments one link makes in any hour:
// each takes a derivation index of the merchant's wallet, and a link is
// open to anyone.
const MaxLinkPaymentsPerHour = 60

// CreateLinkPayment creates a payment for a payment link through the same
// path as POST /v1/payments (CreatePayment's rules, in its transaction)
// and records the link and the buyer's fields on it, which its webhooks
// carry. An idempotent repeat (existing true) keeps what it recorded.
//
// A new payment is refused with ERATELIMIT "Payment capacity exceeded.
// Please try again later." when the link already has MaxOpenLinkPayments
// payments in progress, or has made MaxLinkPaymentsPerHour in the last
// hour (a sliding window). Link payments do not count toward the owner's
// daily API calls: anyone may open a link, and must not use up the
// merchant's API for the day. A refusal changes nothing, the link's
// counter included.
func (s *Store) CreateLinkPayment(ctx context.Context, link *PaymentLink, np NewPayment, b Buyer) (*Payment, bool, error) {
	np.ProjectID = link.ProjectID
	if np.Locale == "" {
		np.Locale = link.Locale
	}
	var out *Payment
	var existing bool
	err := s.retryTx(ctx, func(tx pgx.Tx) error {
		// The link's row lock makes concurrent submissions of one link take
		// turns, so none can count the open payments while another's new
		// payment is not yet committed.
		var owner *int64
		err := tx.QueryRow(ctx, `
			SELECT p.owner_id FROM payment_links l JOIN projects p ON p.id = l.project_id
			WHERE l.id = $1 FOR UPDATE OF l`, link.ID).Scan(&owner)
		if noRows(err) {
			return notFound(paywatch.MsgLinkNotFound)
		}
		if err != nil {
			return fmt.Errorf("lock payment link: %w", err)
		}
		if owner == nil {
			return forbidden(paywatch.MsgNotAccepting)
		}
		out, existing, err = s.createPayment(ctx, tx, np, nil)
		if err != nil || existing {
			return err
		}
		var open int
		if err := tx.QueryRow(ctx, `
			SELECT count(*) FROM payments
			WHERE payment_link_id = $1 AND status IN ('pending', 'confirming', 'partial')`, link.ID).Scan(&open); err != nil {
			return fmt.Errorf("count open link payments: %w", err)
		}
		if open >= MaxOpenLinkPayments {
			return paywatch.Errorf(paywatch.ERATELIMIT, "%s", paywatch.MsgCapacity)
		}
		if err := s.countLinkPayment(ctx, tx, link.ID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE payments SET payment_link_id = $2, buyer_email = $3, buyer_name = $4, buyer_note = $5
			WHERE id = $1`, out.ID, link.ID, optionalText(b.Email), optionalText(b.Name), optionalText(b.Note))
		if err != nil {
			return fmt.Errorf("record payment link: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, existing, nil
}

// countLinkPayment counts a new payment of a link in the link's sliding
// hour and refuses it past MaxLinkPaymentsPerHour. It runs in the
// creation's transaction (the link's row is locked, so submissions take
// turns), and a refusal rolls the count back with the payment.
func (s *Store) countLinkPayment(ctx context.Context, tx pgx.Tx, linkID string) error {
	w, err := s.hitSliding(ctx, tx, "link-payments:"+linkID, time.Hour)
	if err != nil {
		return fmt.Errorf("count link payments: %w", err)
	}
	if w.Count > MaxLinkPaymentsPerHour {
		return paywatch.Errorf(paywatch.ERATELIMIT, "%s", paywatch.MsgCapacity)
	}
	return nil
}

// PaymentLinkToken returns the token a link payment is restricted to: the
// token of the link it was made from, or "" when it has none (or the
// payment is not a link payment).
func (s *Store) PaymentLinkToken(ctx context.Context, paymentID string) (paywatch.Token, error) {
	if !paywatch.ValidPaymentID(paymentID) {
		return "", nil
	}
	var token *string
	err := s.pool.QueryRow(ctx, `
		SELECT l.token FROM payments p JOIN payment_links l ON l.id = p.payment_link_id
		WHERE p.id = $1`, paymentID).Scan(&token)
	if noRows(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load payment link token: %w", err)
	}
	return paywatch.Token(deref(token)), nil
}
