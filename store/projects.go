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

// DefaultPaymentExpiryMinutes is the payment window of a project that
// never changed it (paywatch.MinPaymentExpiryMinutes and
// MaxPaymentExpiryMinutes bound the setting).
const DefaultPaymentExpiryMinutes = 60

// maxSettingAmount is the largest minAmount or rotation_threshold: their
// NUMERIC(40, 18) columns hold 22 digits before the decimal point.
var maxSettingAmount = paywatch.MustParseAmount(strings.Repeat("9", 22)+"."+strings.Repeat("9", 18), 18)

// Project is a merchant project with its owner, as every API call sees it.
type Project struct {
	ID         int64
	Slug       string
	Name       string
	WebhookURL string // "" when none
	// Owner is nil for a project without an owner, which cannot be used.
	Owner                *Account
	Active               bool
	AddressMode          paywatch.AddressMode
	PoolMatching         paywatch.PoolMatching
	MinAmount            *paywatch.Amount
	MicroAmountDecimals  int
	RotationThreshold    *paywatch.Amount
	PaymentExpiryMinutes int
	APIKeyPrefix         string
	// TelegramChatID is the chat that gets the project's notifications;
	// "" when none (operations.md §7).
	TelegramChatID string
	// UnmatchedWebhooks: transfer.unmatched events are sent as webhooks
	// (off by default; docs/unmatched-funds.md).
	UnmatchedWebhooks bool
	HasWallet         bool
	CreatedAt         time.Time
	UpdatedAt         time.Time

	apiKeyHash []byte
}

// OwnerEmail returns the owner's email, or "" for a project without owner.
func (p *Project) OwnerEmail() string {
	if p.Owner == nil {
		return ""
	}
	return p.Owner.Email
}

// projectColumns are the columns scanProject reads, over projects p and
// accounts a (projectFrom).
const projectColumns = `p.id, p.slug, p.name, p.webhook_url, p.active, p.address_mode, p.pool_matching,
	       p.min_amount::text, p.micro_amount_decimals, p.rotation_threshold::text,
	       p.payment_expiry_minutes, p.api_key_prefix, p.api_key_hash, p.created_at, p.updated_at,
	       COALESCE(p.telegram_chat_id, ''), p.unmatched_webhooks,
	       EXISTS (SELECT 1 FROM wallets w WHERE w.project_id = p.id),
	       a.id, a.email, a.plan, a.status, a.limits, a.created_at, a.updated_at, a.locale`

// projectFrom joins a project to its owner.
const projectFrom = `
	FROM projects p LEFT JOIN accounts a ON a.id = p.owner_id`

const projectSelect = `
	SELECT ` + projectColumns + projectFrom

// scanProject reads projectColumns, then extra.
func scanProject(row scanner, extra ...any) (*Project, error) {
	var p Project
	var webhook, minAmount, rotation, prefix *string
	var ownerID *int64
	var email, plan, status, ownerLocale *string
	var limits []byte
	var oc, ou *time.Time
	dest := append([]any{&p.ID, &p.Slug, &p.Name, &webhook, &p.Active, &p.AddressMode, &p.PoolMatching,
		&minAmount, &p.MicroAmountDecimals, &rotation,
		&p.PaymentExpiryMinutes, &prefix, &p.apiKeyHash, &p.CreatedAt, &p.UpdatedAt,
		&p.TelegramChatID, &p.UnmatchedWebhooks,
		&p.HasWallet,
		&ownerID, &email, &plan, &status, &limits, &oc, &ou, &ownerLocale}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if webhook != nil {
		p.WebhookURL = *webhook
	}
	if prefix != nil {
		p.APIKeyPrefix = *prefix
	}
	var err error
	if p.MinAmount, err = decimalOf(minAmount); err != nil {
		return nil, err
	}
	if p.RotationThreshold, err = decimalOf(rotation); err != nil {
		return nil, err
	}
	if ownerID != nil {
		a := &Account{ID: *ownerID, Email: *email, Plan: paywatch.Plan(*plan), Status: AccountStatus(*status), CreatedAt: *oc, UpdatedAt: *ou, Locale: deref(ownerLocale)}
		if err := json.Unmarshal(limits, &a.Overrides); err != nil {
			return nil, fmt.Errorf("account %d limits: %w", a.ID, err)
		}
		p.Owner = a
	}
	return &p, nil
}

// ProjectSettings are the settable fields of a project (operations.md §2
// PATCH /v1/projects/{slug}); nil fields are left unchanged.
type ProjectSettings struct {
	Name       *string
	WebhookURL *string // "" removes the webhook URL; validated by the caller
	// OwnerEmail names an existing active account; "" removes the owner.
	OwnerEmail           *string
	AddressMode          *paywatch.AddressMode
	PoolMatching         *paywatch.PoolMatching
	MinAmount            *paywatch.Amount
	ClearMinAmount       bool
	MicroAmountDecimals  *int
	RotationThreshold    *paywatch.Amount
	ClearRotation        bool
	PaymentExpiryMinutes *int
	Active               *bool
	// UnmatchedWebhooks turns transfer.unmatched webhooks on or off.
	UnmatchedWebhooks *bool
	// TelegramChatID sets the chat of the project's notifications; ""
	// removes it.
	TelegramChatID *string
	// ByOwner marks settings the project's owner saves in the dashboard:
	// the owner may turn on again a project they turned off, but not one
	// the operator turned off.
	ByOwner bool
}

// validate checks the settings that need no database.
func (ps *ProjectSettings) validate() error {
	if ps.Name != nil && (strings.TrimSpace(*ps.Name) == "" || len(*ps.Name) > paywatch.MaxProjectNameLength) {
		return invalid("name must be 1-255 characters")
	}
	if ps.Name != nil && paywatch.HasControlChars(*ps.Name, false) {
		// A name reaches e-mail subjects and chat messages: CR and LF
		// there would start new header lines.
		return invalid("name must not contain control characters")
	}
	if ps.AddressMode != nil {
		if _, err := paywatch.ParseAddressMode(string(*ps.AddressMode)); err != nil {
			return invalid("address_mode must be per_payment, per_user, dedicated or pool")
		}
	}
	if ps.PoolMatching != nil {
		if _, err := paywatch.ParsePoolMatching(string(*ps.PoolMatching)); err != nil {
			return invalid("pool_matching must be micro_amount or txid")
		}
	}
	if ps.MinAmount != nil && ps.MinAmount.Sign() <= 0 {
		return invalid("minAmount must be positive")
	}
	if ps.MinAmount != nil && ps.MinAmount.FractionDigits() > 18 {
		return invalid("minAmount has more than 18 decimal places")
	}
	if ps.MinAmount != nil && ps.MinAmount.Cmp(maxSettingAmount) > 0 {
		return invalid("minAmount must be less than 10^22")
	}
	if ps.RotationThreshold != nil && (ps.RotationThreshold.Sign() <= 0 || ps.RotationThreshold.FractionDigits() > 18) {
		return invalid("rotation_threshold must be positive with at most 18 decimal places")
	}
	if ps.RotationThreshold != nil && ps.RotationThreshold.Cmp(maxSettingAmount) > 0 {
		return invalid("rotation_threshold must be less than 10^22")
	}
	if ps.MicroAmountDecimals != nil && (*ps.MicroAmountDecimals < paywatch.MinMicroDecimals || *ps.MicroAmountDecimals > paywatch.MaxMicroDecimals) {
		return invalid("micro_amount_decimals must be 1-4")
	}
	if ps.PaymentExpiryMinutes != nil && (*ps.PaymentExpiryMinutes < paywatch.MinPaymentExpiryMinutes || *ps.PaymentExpiryMinutes > paywatch.MaxPaymentExpiryMinutes) {
		return invalid("payment_expiry_minutes must be 5-1440")
	}
	return nil
}

// NewProject is the input of CreateProject.
type NewProject struct {
	Slug string
	// Settings may set any project setting at creation; Name defaults to
	// the slug.
	Settings ProjectSettings
}

// CreateProject adds a project with fresh credentials. The owner, when
// given, must be an existing active account below its plan's project limit
// (403 otherwise); the check and the insert happen under the owner's row
// lock, so concurrent creations cannot overshoot the limit.
func (s *Store) CreateProject(ctx context.Context, np NewProject) (*Project, Credentials, error) {
	if err := paywatch.ValidateSlug(np.Slug); err != nil {
		return nil, Credentials{}, err
	}
	ps := np.Settings
	if ps.Name == nil {
		ps.Name = &np.Slug
	}
	if err := ps.validate(); err != nil {
		return nil, Credentials{}, err
	}
	creds := newCredentials()
	var out *Project
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		now := s.clock()
		var id int64
		err := tx.QueryRow(ctx, `
			INSERT INTO projects (slug, name, api_key_hash, api_key_prefix, api_secret_hash, webhook_secret, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
			ON CONFLICT (slug) DO NOTHING
			RETURNING id`,
			np.Slug, *ps.Name, hashSecret(creds.APIKey), keyPrefix(creds.APIKey), hashSecret(creds.APISecret), creds.WebhookSecret, now).Scan(&id)
		if noRows(err) {
			return conflict("A project with this slug already exists")
		}
		if err != nil {
			return fmt.Errorf("insert project: %w", err)
		}
		if err := s.applySettings(ctx, tx, id, nil, ps); err != nil {
			return err
		}
		out, err = projectByID(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, Credentials{}, err
	}
	return out, creds, nil
}

// applySettings writes ps to project id. current is the project before the
// change (nil at creation).
func (s *Store) applySettings(ctx context.Context, tx pgx.Tx, id int64, current *Project, ps ProjectSettings) error {
	if ps.OwnerEmail != nil {
		var ownerID *int64
		if *ps.OwnerEmail != "" {
			o, err := lockOwner(ctx, tx, *ps.OwnerEmail)
			if err != nil {
				return err
			}
			if current == nil || current.Owner == nil || current.Owner.ID != o.ID {
				var n int64
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM projects WHERE owner_id = $1`, o.ID).Scan(&n); err != nil {
					return err
				}
				if limit := o.Limits().Projects; limit != paywatch.Unlimited && n >= limit {
					return forbidden(paywatch.MsgPlanLimit(o.Limits().Projects, "project"))
				}
			}
			ownerID = &o.ID
		}
		if _, err := tx.Exec(ctx, `UPDATE projects SET owner_id = $2 WHERE id = $1`, id, ownerID); err != nil {
			return err
		}
	}
	if err := s.refuseModeSwitch(ctx, tx, id, current, ps); err != nil {
		return err
	}
	if ps.MicroAmountDecimals != nil && current != nil && *ps.MicroAmountDecimals != current.MicroAmountDecimals {
		// Open payments keep the amounts they were given, and a transfer
		// goes to the nearest one anyway (ClaimOwner); refusing the change
		// while any is open keeps every open amount on one precision, so a
		// customer is never told one precision and matched on another.
		var open bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM payments WHERE project_id = $1 AND status IN ('pending', 'confirming', 'partial'))`,
			id).Scan(&open); err != nil {
			return err
		}
		if open {
			return conflict(paywatch.MsgMicroDecimalsOpen)
		}
	}
	if ps.TelegramChatID != nil {
		var chat *string
		if *ps.TelegramChatID != "" {
			if err := ValidateChatID(*ps.TelegramChatID); err != nil {
				return err
			}
			chat = ps.TelegramChatID
		}
		if _, err := tx.Exec(ctx, `UPDATE projects SET telegram_chat_id = $2 WHERE id = $1`, id, chat); err != nil {
			return fmt.Errorf("set telegram chat: %w", err)
		}
	}
	if ps.Active != nil {
		if err := setActiveBy(ctx, tx, id, *ps.Active, ps.ByOwner); err != nil {
			return err
		}
	}
	var webhook *string
	if ps.WebhookURL != nil && *ps.WebhookURL != "" {
		webhook = ps.WebhookURL
	}
	_, err := tx.Exec(ctx, `
		UPDATE projects SET
			name = COALESCE($2, name),
			webhook_url = CASE WHEN $3 THEN $4 ELSE webhook_url END,
			address_mode = COALESCE($5, address_mode),
			pool_matching = COALESCE($6, pool_matching),
			min_amount = CASE WHEN $7 THEN NULL ELSE COALESCE($8::numeric, min_amount) END,
			micro_amount_decimals = COALESCE($9, micro_amount_decimals),
			rotation_threshold = CASE WHEN $10 THEN NULL ELSE COALESCE($11::numeric, rotation_threshold) END,
			payment_expiry_minutes = COALESCE($12, payment_expiry_minutes),
			active = COALESCE($13, active),
			updated_at = $14,
			unmatched_webhooks = COALESCE($15, unmatched_webhooks)
		WHERE id = $1`,
		id, ps.Name, ps.WebhookURL != nil, webhook, ps.AddressMode, ps.PoolMatching,
		ps.ClearMinAmount, decimalText(ps.MinAmount), ps.MicroAmountDecimals,
		ps.ClearRotation, decimalText(ps.RotationThreshold), ps.PaymentExpiryMinutes, ps.Active, s.clock(), ps.UnmatchedWebhooks)
	if err != nil {
		return fmt.Errorf("update project: %w", err)
	}
	if current != nil && (ps.MinAmount != nil || ps.ClearMinAmount) {
		return reopenUnderLoweredMinimum(ctx, tx, id, current.MinAmount)
	}
	return nil
}

// lockOwner loads and locks the account that is to own a project; it must
// exist and be active.
func lockOwner(ctx context.Context, tx pgx.Tx, email string) (*Account, error) {
	a, err := scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE email = $1 FOR UPDATE`,
		strings.ToLower(strings.TrimSpace(email))))
	if noRows(err) {
		return nil, invalid("owner_email must be the email of an existing account")
	}
	if err != nil {
		return nil, err
	}
	if a.Status != AccountActive {
		return nil, invalid("owner_email must be the email of an active account")
	}
	return a, nil
}

func projectByID(ctx context.Context, q pgx.Tx, id int64) (*Project, error) {
	return scanProject(q.QueryRow(ctx, projectSelect+` WHERE p.id = $1`, id))
}

// ProjectBySlug returns a project; ENOTFOUND when there is none.
func (s *Store) ProjectBySlug(ctx context.Context, slug string) (*Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, projectSelect+` WHERE p.slug = $1`, slug))
	if noRows(err) {
		return nil, notFound(paywatch.MsgProjectNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load project: %w", err)
	}
	return p, nil
}

// ListProjects returns every project, oldest first.
func (s *Store) ListProjects(ctx context.Context) ([]*Project, error) {
	rows, err := s.pool.Query(ctx, projectSelect+` ORDER BY p.id`)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	defer rows.Close()
	var out []*Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// UpdateProject changes a project's settings. Changing the address mode or
// pool matching while payments are pending, or micro_amount_decimals while
// payments are pending, confirming or partial, gives ECONFLICT; the project row
// is locked, and payment creation holds a share lock on it, so no payment
// can slip in between the check and the change.
func (s *Store) UpdateProject(ctx context.Context, slug string, ps ProjectSettings) (*Project, error) {
	if err := ps.validate(); err != nil {
		return nil, err
	}
	var out *Project
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// FOR NO KEY UPDATE, not FOR UPDATE: it still excludes payment
		// creation's share lock, but lets the foreign-key checks of rows
		// written meanwhile (the scanner recording a transfer of this
		// project) through. A lowered minimum's reopen updates this
		// project's transfers below; with FOR UPDATE, a scan holding one of
		// them and waiting on its key check here would deadlock with it.
		cur, err := scanProject(tx.QueryRow(ctx, projectSelect+` WHERE p.slug = $1 FOR NO KEY UPDATE OF p`, slug))
		if noRows(err) {
			return notFound(paywatch.MsgProjectNotFound)
		}
		if err != nil {
			return err
		}
		if err := s.applySettings(ctx, tx, cur.ID, cur, ps); err != nil {
			return err
		}
		out, err = projectByID(ctx, tx, cur.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RegenerateKeys replaces a project's API key, API secret and webhook secret
// at once; the old values stop working with this commit.
//
// alert, when not nil, makes the e-mail that tells of it (nil for none);
// it is queued in the same transaction, so keys never change without it.
func (s *Store) RegenerateKeys(ctx context.Context, slug string, alert func(*Project) *Mail) (Credentials, *Mail, error) {
	creds := newCredentials()
	var queued *Mail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE projects SET api_key_hash = $2, api_key_prefix = $3, api_secret_hash = $4, webhook_secret = $5, updated_at = $6
			WHERE slug = $1`,
			slug, hashSecret(creds.APIKey), keyPrefix(creds.APIKey), hashSecret(creds.APISecret), creds.WebhookSecret, s.clock())
		if err != nil {
			return fmt.Errorf("regenerate keys: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return notFound(paywatch.MsgProjectNotFound)
		}
		if alert == nil {
			return nil
		}
		p, err := scanProject(tx.QueryRow(ctx, projectSelect+` WHERE p.slug = $1`, slug))
		if err != nil {
			return fmt.Errorf("load project: %w", err)
		}
		if m := alert(p); m != nil {
			q, err := s.queueMail(ctx, tx, *m)
			if err != nil {
				return err
			}
			queued = &q
		}
		return nil
	})
	if err != nil {
		return Credentials{}, nil, err
	}
	return creds, queued, nil
}

// Authenticate returns the project of an API key. A key that matches no
// project, or a project without an owner, gives EUNAUTHORIZED "Invalid API
// key"; a deactivated project or an inactive owner gives EFORBIDDEN with
// interface.md's messages. The key is looked up by its SHA-256 and the
// stored hash compared in constant time.
func (s *Store) Authenticate(ctx context.Context, apiKey string) (*Project, error) {
	h := hashSecret(apiKey)
	p, err := scanProject(s.pool.QueryRow(ctx, projectSelect+` WHERE p.api_key_hash = $1`, h))
	if noRows(err) || (err == nil && !equalHash(p.apiKeyHash, h)) {
		return nil, paywatch.Errorf(paywatch.EUNAUTHORIZED, paywatch.MsgInvalidAPIKey)
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if err := callerRefusal(p); err != nil {
		return nil, err
	}
	return p, nil
}
