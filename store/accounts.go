package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// AccountStatus is the state of a merchant account.
type AccountStatus string

// The account statuses.
const (
	AccountActive    AccountStatus = "active"
	AccountSuspended AccountStatus = "suspended"
	AccountClosed    AccountStatus = "closed"
)

// ParseAccountStatus validates an account status name.
func ParseAccountStatus(s string) (AccountStatus, error) {
	switch st := AccountStatus(s); st {
	case AccountActive, AccountSuspended, AccountClosed:
		return st, nil
	}
	return "", invalid("status must be active, suspended or closed")
}

// Account is a merchant account: the owner of projects, to which plan
// limits and daily counters apply.
type Account struct {
	ID        int64
	Email     string
	Plan      paywatch.Plan
	Status    AccountStatus
	Overrides paywatch.LimitOverrides
	CreatedAt time.Time
	UpdatedAt time.Time
	// Locale is the account's language (its browser's at its latest
	// sign-in); "" for none yet, which mail takes as English.
	Locale string
}

// Limits returns the account's effective limits: its plan's with the
// operator's overrides applied.
func (a *Account) Limits() paywatch.Limits {
	return paywatch.EffectiveLimits(a.Plan, a.Overrides)
}

const accountColumns = `id, email, plan, status, limits, created_at, updated_at, COALESCE(locale, '')`

func scanAccount(row scanner) (*Account, error) {
	var a Account
	var limits []byte
	if err := row.Scan(&a.ID, &a.Email, &a.Plan, &a.Status, &limits, &a.CreatedAt, &a.UpdatedAt, &a.Locale); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(limits, &a.Overrides); err != nil {
		return nil, fmt.Errorf("account %d limits: %w", a.ID, err)
	}
	return &a, nil
}

// CreateAccount adds an account; an existing email gives ECONFLICT.
func (s *Store) CreateAccount(ctx context.Context, email string, plan paywatch.Plan) (*Account, error) {
	email, err := paywatch.NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if _, err := paywatch.ParsePlan(string(plan)); err != nil {
		return nil, err
	}
	now := s.clock()
	a, err := scanAccount(s.pool.QueryRow(ctx, `
		INSERT INTO accounts (email, plan, created_at, updated_at) VALUES ($1, $2, $3, $3)
		ON CONFLICT (email) DO NOTHING
		RETURNING `+accountColumns, email, plan, now))
	if noRows(err) {
		return nil, conflict("An account with this email already exists")
	}
	if err != nil {
		return nil, fmt.Errorf("create account: %w", err)
	}
	return a, nil
}

// AccountByEmail returns an account; ENOTFOUND if there is none.
func (s *Store) AccountByEmail(ctx context.Context, email string) (*Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE email = $1`,
		strings.ToLower(strings.TrimSpace(email))))
	if noRows(err) {
		return nil, notFound(paywatch.MsgAccountNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load account: %w", err)
	}
	return a, nil
}

// AccountUpdate lists the changes of UpdateAccount; nil fields are kept.
type AccountUpdate struct {
	Plan   *paywatch.Plan
	Status *AccountStatus
	// Limits are merged into the overrides: a field set here replaces the
	// override, and a field listed in ClearLimits removes it.
	Limits      paywatch.LimitOverrides
	ClearLimits []string
}

// UpdateAccount changes an account's plan, status or limit overrides.
func (s *Store) UpdateAccount(ctx context.Context, email string, u AccountUpdate) (*Account, error) {
	var out *Account
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		a, err := scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE email = $1 FOR UPDATE`,
			strings.ToLower(strings.TrimSpace(email))))
		if noRows(err) {
			return notFound(paywatch.MsgAccountNotFound)
		}
		if err != nil {
			return fmt.Errorf("load account: %w", err)
		}
		if u.Plan != nil {
			if _, err := paywatch.ParsePlan(string(*u.Plan)); err != nil {
				return err
			}
			a.Plan = *u.Plan
		}
		if u.Status != nil {
			if _, err := ParseAccountStatus(string(*u.Status)); err != nil {
				return err
			}
			a.Status = *u.Status
		}
		mergeOverrides(&a.Overrides, u.Limits, u.ClearLimits)
		limits, err := json.Marshal(a.Overrides)
		if err != nil {
			return err
		}
		out, err = scanAccount(tx.QueryRow(ctx, `
			UPDATE accounts SET plan = $2, status = $3, limits = $4, updated_at = $5 WHERE id = $1
			RETURNING `+accountColumns, a.ID, a.Plan, a.Status, limits, s.clock()))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mergeOverrides applies set fields of in to o, then removes the cleared ones
// (named by their JSON names).
func mergeOverrides(o *paywatch.LimitOverrides, in paywatch.LimitOverrides, clear []string) {
	fields := map[string][2]**int64{
		"projects":                   {&o.Projects, &in.Projects},
		"wallets":                    {&o.Wallets, &in.Wallets},
		"payment_links":              {&o.PaymentLinks, &in.PaymentLinks},
		"api_calls_per_day":          {&o.APICallsPerDay, &in.APICallsPerDay},
		"webhooks_per_day":           {&o.WebhooksPerDay, &in.WebhooksPerDay},
		"chat_notifications_per_day": {&o.ChatNotificationsPerDay, &in.ChatNotificationsPerDay},
	}
	for _, f := range fields {
		if *f[1] != nil {
			v := **f[1]
			*f[0] = &v
		}
	}
	for _, name := range clear {
		if f, ok := fields[name]; ok {
			*f[0] = nil
		}
	}
}

// LimitNames are the JSON names of the limit overrides, in display order.
var LimitNames = []string{"projects", "wallets", "payment_links", "api_calls_per_day", "webhooks_per_day", "chat_notifications_per_day"}

// SetAccountLocale records an account's language (its browser's at
// sign-in); writing only when it changed.
func (s *Store) SetAccountLocale(ctx context.Context, accountID int64, locale string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE accounts SET locale = $2 WHERE id = $1 AND locale IS DISTINCT FROM $2`,
		accountID, optionalText(locale)); err != nil {
		return fmt.Errorf("set account locale: %w", err)
	}
	return nil
}
