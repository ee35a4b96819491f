package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// What the merchant dashboard (operations.md §6) reads and does beyond the
// operator endpoints: an owner's projects and usage, a project's payment
// links, and deleting a wallet.

// ProjectsOwnedBy returns the projects of an owner account, by name.
func (s *Store) ProjectsOwnedBy(ctx context.Context, accountID int64) ([]*Project, error) {
	rows, err := s.pool.Query(ctx, projectSelect+` WHERE p.owner_id = $1 ORDER BY p.name, p.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list owned projects: %w", err)
	}
	defer rows.Close()
	var out []*Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, fmt.Errorf("list owned projects: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// LinkSummary is a payment link with what its buyers did with it.
type LinkSummary struct {
	Link *PaymentLink
	// Payments counts every payment created through the link; Paid those
	// paid or overpaid.
	Payments int64
	Paid     int64
}

// ListPaymentLinks returns a project's payment links, newest first, each
// with its payment counts. Every link's Project is the project.
func (s *Store) ListPaymentLinks(ctx context.Context, projectID int64) ([]LinkSummary, error) {
	prj, err := scanProject(s.pool.QueryRow(ctx, projectSelect+` WHERE p.id = $1`, projectID))
	if noRows(err) {
		return nil, notFound(paywatch.MsgProjectNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load project: %w", err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+linkColumns+`, count(pay.id), count(pay.id) FILTER (WHERE pay.status IN ('paid', 'overpaid'))
		FROM payment_links l LEFT JOIN payments pay ON pay.payment_link_id = l.id
		WHERE l.project_id = $1
		GROUP BY l.id
		ORDER BY l.created_at DESC, l.id DESC`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list payment links: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LinkSummary, error) {
		var sum LinkSummary
		var err error
		sum.Link, err = scanPaymentLink(linkCountsRow{r, &sum})
		if err != nil {
			return sum, err
		}
		sum.Link.Project = prj
		return sum, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list payment links: %w", err)
	}
	return out, nil
}

// linkCountsRow scans a row of linkColumns followed by a LinkSummary's
// counts.
type linkCountsRow struct {
	row scanner
	sum *LinkSummary
}

func (r linkCountsRow) Scan(dest ...any) error {
	return r.row.Scan(append(dest, &r.sum.Payments, &r.sum.Paid)...)
}

// SetPaymentLinkActive turns a project's payment link on or off; an
// inactive link shows its page but takes no payment (PaymentLink.Accepting).
// Payments already made through it go on. Another project's link is
// ENOTFOUND "Payment link not found". A deactivated link still counts
// toward the owner's payment-link limit.
func (s *Store) SetPaymentLinkActive(ctx context.Context, projectID int64, id string, active bool) (*PaymentLink, error) {
	if !paywatch.ValidPaymentID(id) {
		return nil, notFound(paywatch.MsgLinkNotFound)
	}
	l, err := scanPaymentLink(s.pool.QueryRow(ctx, `
		UPDATE payment_links l SET active = $3, updated_at = $4
		WHERE l.id = $1 AND l.project_id = $2
		RETURNING `+linkColumns, id, projectID, active, s.clock()))
	if noRows(err) {
		return nil, notFound(paywatch.MsgLinkNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("update payment link: %w", err)
	}
	if l.Project, err = scanProject(s.pool.QueryRow(ctx, projectSelect+` WHERE p.id = $1`, projectID)); err != nil {
		return nil, fmt.Errorf("load project of payment link: %w", err)
	}
	return l, nil
}

// Usage is an owner account's use of its plan (operations.md §6 "usage
// against the plan").
type Usage struct {
	// The daily counters of the current UTC day.
	APICallsToday          int64
	WebhooksToday          int64
	ChatNotificationsToday int64
	// What the creation limits count now.
	Projects     int64
	Wallets      int64
	PaymentLinks int64
	// Limits are the account's effective limits (paywatch.Unlimited is -1).
	Limits paywatch.Limits
}

// Usage returns an account's usage, counted as the limits count it: the
// daily counters of today (UTC), the projects it owns, their wallets
// (deleted ones left out) and their payment links (deactivated ones
// included). An unknown account is ENOTFOUND "Account not found".
func (s *Store) Usage(ctx context.Context, accountID int64) (Usage, error) {
	var u Usage
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE id = $1`, accountID))
	if noRows(err) {
		return u, notFound(paywatch.MsgAccountNotFound)
	}
	if err != nil {
		return u, fmt.Errorf("load account: %w", err)
	}
	u.Limits = a.Limits()
	now := s.clock()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	rows, err := s.pool.Query(ctx, `SELECT kind, count FROM daily_usage WHERE account_id = $1 AND day = $2`, accountID, day)
	if err != nil {
		return u, fmt.Errorf("load daily usage: %w", err)
	}
	defer rows.Close()
	counters := map[DailyKind]*int64{
		DailyAPICalls: &u.APICallsToday, DailyWebhooks: &u.WebhooksToday, DailyChatNotifications: &u.ChatNotificationsToday,
	}
	for rows.Next() {
		var kind DailyKind
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return u, fmt.Errorf("load daily usage: %w", err)
		}
		if c, ok := counters[kind]; ok {
			*c = n
		}
	}
	if err := rows.Err(); err != nil {
		return u, fmt.Errorf("load daily usage: %w", err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM projects WHERE owner_id = $1`, accountID).Scan(&u.Projects); err != nil {
		return u, fmt.Errorf("count projects: %w", err)
	}
	if u.Wallets, err = countWallets(ctx, s.pool, accountID); err != nil {
		return u, err
	}
	if u.PaymentLinks, err = countPaymentLinks(ctx, s.pool, accountID); err != nil {
		return u, err
	}
	return u, nil
}

// DeleteWallet deletes the wallet of the project with the given slug: the
// project has no wallet any more (creating a payment answers "Project has
// no wallet assigned"), and the wallet no longer counts toward the owner's
// wallet limit. A project without a wallet is ENOTFOUND "Project has no
// wallet assigned".
//
// While the project has a payment whose address may still receive funds
// that count (pending, confirming or partial, or expired less than 24
// hours ago: the late window, for every mode, to be safe) it is refused
// with ECONFLICT, so no payment loses the wallet it is paid into. The
// check runs under the project's row lock, which payment creation shares
// (FOR SHARE): a creation either commits first, and its payment refuses
// the deletion, or waits and then finds no wallet.
//
// The wallet row is detached from the project, not removed (migration
// 00013): its derivation counters, derived addresses and address owners
// stay, so no other project can take its addresses and, when the project
// adds a wallet again (PutWallet), derivation continues after the last
// index used. Its xPubs are cleared, so a re-added wallet has only the
// xPubs given then; static addresses stay registered to the project and
// come back with it (an address is one project's for good).
func (s *Store) DeleteWallet(ctx context.Context, slug string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var projectID int64
		err := tx.QueryRow(ctx, `SELECT id FROM projects WHERE slug = $1 FOR UPDATE`, slug).Scan(&projectID)
		if noRows(err) {
			return notFound(paywatch.MsgProjectNotFound)
		}
		if err != nil {
			return fmt.Errorf("lock project: %w", err)
		}
		var walletID int64
		err = tx.QueryRow(ctx, `SELECT id FROM wallets WHERE project_id = $1 FOR UPDATE`, projectID).Scan(&walletID)
		if noRows(err) {
			return notFound(paywatch.MsgNoWallet)
		}
		if err != nil {
			return fmt.Errorf("lock wallet: %w", err)
		}
		now := s.clock()
		var open bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM payments WHERE project_id = $1
			    AND (status IN ('pending', 'confirming', 'partial')
			         OR (`+lateOpenSQL("payments", "$2")+` AND `+paywatch.PolicySQL("payments", func(p paywatch.Policy) bool { return p.LateFunds })+`)))`,
			projectID, now.Add(-paywatch.LateHold)).Scan(&open); err != nil {
			return fmt.Errorf("check open payments: %w", err)
		}
		if open {
			return conflict(paywatch.MsgWalletInUse)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE wallets SET project_id = NULL, deleted_from = $2, deleted_at = $3,
			       xpub_evm = NULL, xpub_evm_fingerprint = NULL, xpub_tron = NULL, xpub_tron_fingerprint = NULL, updated_at = $3
			WHERE id = $1`, walletID, projectID, now); err != nil {
			return fmt.Errorf("delete wallet: %w", err)
		}
		return nil
	})
}

// MaxPreviewAddresses bounds WalletPreview: the gap limit most wallet
// software uses.
const MaxPreviewAddresses = 20

// WalletPreview derives the first n payment addresses (indexes 1..n;
// index 0 is the merchant's gas address) of an xPub in family f, for the
// merchant to compare with the addresses their wallet shows before saving
// it. A malformed or private key, or an unknown family, is refused with
// the wallet endpoint's message. An index BIP32 declares invalid is
// skipped, as derivation skips it.
func WalletPreview(xpub string, f paywatch.Family, n int) ([]string, error) {
	if n < 1 || n > MaxPreviewAddresses {
		return nil, fmt.Errorf("preview of %d addresses: want 1 to %d", n, MaxPreviewAddresses)
	}
	if _, err := paywatch.ParseFamily(string(f)); err != nil {
		return nil, unknownFamily(string(f))
	}
	if !f.Derived() {
		return nil, noXPubFamily(f)
	}
	x, err := walletXPub(f, xpub)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for i := uint32(paywatch.FirstPaymentIndex); len(out) < n; i++ {
		a, err := x.Address(f, i)
		if err != nil {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}
