package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// projectView is a project in operator responses; it never carries a
// secret, only the API key's prefix.
type projectView struct {
	Name                 string                `json:"name"`
	Slug                 string                `json:"slug"`
	WebhookURL           *string               `json:"webhook_url"`
	OwnerEmail           *string               `json:"owner_email"`
	Active               bool                  `json:"active"`
	AddressMode          paywatch.AddressMode  `json:"address_mode"`
	PoolMatching         paywatch.PoolMatching `json:"pool_matching"`
	MinAmount            *string               `json:"minAmount"`
	MicroAmountDecimals  int                   `json:"micro_amount_decimals"`
	RotationThreshold    *string               `json:"rotation_threshold"`
	PaymentExpiryMinutes int                   `json:"payment_expiry_minutes"`
	APIKeyPrefix         string                `json:"api_key_prefix"`
	TelegramChatID       *string               `json:"telegram_chat_id"`
	UnmatchedWebhooks    bool                  `json:"unmatched_webhooks"`
	HasWallet            bool                  `json:"has_wallet"`
	CreatedAt            string                `json:"created_at"`
	UpdatedAt            string                `json:"updated_at"`
}

func projectOf(p *payments.Project) projectView {
	v := projectView{
		Name: p.Name, Slug: p.Slug, WebhookURL: nullable(p.WebhookURL), OwnerEmail: nullable(p.OwnerEmail()),
		Active: p.Active, AddressMode: p.AddressMode, PoolMatching: p.PoolMatching,
		MicroAmountDecimals: p.MicroAmountDecimals, PaymentExpiryMinutes: p.PaymentExpiryMinutes,
		APIKeyPrefix: p.APIKeyPrefix, TelegramChatID: nullable(p.TelegramChatID), UnmatchedWebhooks: p.UnmatchedWebhooks, HasWallet: p.HasWallet, CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt),
	}
	if p.MinAmount != nil {
		s := p.MinAmount.String()
		v.MinAmount = &s
	}
	if p.RotationThreshold != nil {
		s := p.RotationThreshold.String()
		v.RotationThreshold = &s
	}
	return v
}

// projectRequest is the body of POST /v1/projects and PATCH
// /v1/projects/{slug}.
type projectRequest struct {
	Slug                 json.RawMessage `json:"slug"`
	Name                 json.RawMessage `json:"name"`
	WebhookURL           json.RawMessage `json:"webhook_url"`
	OwnerEmail           json.RawMessage `json:"owner_email"`
	AddressMode          json.RawMessage `json:"address_mode"`
	PoolMatching         json.RawMessage `json:"pool_matching"`
	MinAmount            json.RawMessage `json:"minAmount"`
	MinAmountSnake       json.RawMessage `json:"min_amount"`
	MicroAmountDecimals  json.RawMessage `json:"micro_amount_decimals"`
	RotationThreshold    json.RawMessage `json:"rotation_threshold"`
	PaymentExpiryMinutes json.RawMessage `json:"payment_expiry_minutes"`
	Active               json.RawMessage `json:"active"`
	TelegramChatID       json.RawMessage `json:"telegram_chat_id"`
	UnmatchedWebhooks    json.RawMessage `json:"unmatched_webhooks"`
}

// optDecimal reads an optional decimal setting given as a JSON number or a
// decimal string; set reports whether the field was present (null clears).
func optDecimal(raw json.RawMessage, field string) (a *paywatch.Amount, set bool, err error) {
	if len(raw) == 0 {
		return nil, false, nil
	}
	if absent(raw) {
		return nil, true, nil
	}
	var text string
	if raw[0] == '"' {
		if json.Unmarshal(raw, &text) != nil {
			return nil, true, errInvalidBody
		}
	} else {
		n, err := optNumber(raw)
		if err != nil {
			return nil, true, err
		}
		text = n.String()
	}
	v, err := paywatch.ParseAmount(text, 18)
	if err != nil {
		return nil, true, paywatch.Errorf(paywatch.EINVALID, "%s must be a positive number with at most 18 decimal places", field)
	}
	return &v, true, nil
}

// projectSettings reads the settings of a project request; the use cases
// check them (the webhook URL's address included).
func projectSettings(req projectRequest) (payments.ProjectSettings, error) {
	var ps payments.ProjectSettings
	var err error
	if ps.Name, err = optString(req.Name); err != nil {
		return ps, err
	}
	if ps.WebhookURL, err = optString(req.WebhookURL); err != nil {
		return ps, err
	}
	if ps.WebhookURL == nil && len(req.WebhookURL) > 0 {
		empty := "" // null removes the webhook URL
		ps.WebhookURL = &empty
	}
	if ps.OwnerEmail, err = optString(req.OwnerEmail); err != nil {
		return ps, err
	}
	if ps.OwnerEmail == nil && len(req.OwnerEmail) > 0 {
		empty := ""
		ps.OwnerEmail = &empty
	}
	if m, err := optString(req.AddressMode); err != nil {
		return ps, err
	} else if m != nil {
		mode := paywatch.AddressMode(*m)
		ps.AddressMode = &mode
	}
	if m, err := optString(req.PoolMatching); err != nil {
		return ps, err
	} else if m != nil {
		pm := paywatch.PoolMatching(*m)
		ps.PoolMatching = &pm
	}
	minRaw := req.MinAmount
	if len(minRaw) == 0 {
		minRaw = req.MinAmountSnake
	}
	var set bool
	if ps.MinAmount, set, err = optDecimal(minRaw, "minAmount"); err != nil {
		return ps, err
	}
	ps.ClearMinAmount = set && ps.MinAmount == nil
	if ps.RotationThreshold, set, err = optDecimal(req.RotationThreshold, "rotation_threshold"); err != nil {
		return ps, err
	}
	ps.ClearRotation = set && ps.RotationThreshold == nil
	if ps.MicroAmountDecimals, err = optInt(req.MicroAmountDecimals); err != nil {
		return ps, err
	}
	if ps.PaymentExpiryMinutes, err = optInt(req.PaymentExpiryMinutes); err != nil {
		return ps, err
	}
	if ps.Active, err = optBool(req.Active); err != nil {
		return ps, err
	}
	if ps.UnmatchedWebhooks, err = optBool(req.UnmatchedWebhooks); err != nil {
		return ps, err
	}
	if ps.TelegramChatID, err = optString(req.TelegramChatID); err != nil {
		return ps, err
	}
	if ps.TelegramChatID == nil && len(req.TelegramChatID) > 0 {
		empty := "" // null removes the chat
		ps.TelegramChatID = &empty
	}
	return ps, nil
}

// createProject is POST /v1/projects: 201 with the API key and webhook
// secret, shown this once, and a warning when no owner was given. It is an
// endpoint of interface.md, so every validation failure (slug, name,
// webhook_url, owner_email, settings) is "Invalid request body" without
// naming the field; PATCH /v1/projects/{slug} keeps the detailed messages.
func (s *Server) createProject(c echo.Context) error {
	p, creds, err := s.newProject(c)
	if err != nil {
		return schemaFailure(err)
	}
	view := map[string]any{}
	b, _ := json.Marshal(projectOf(p))
	_ = json.Unmarshal(b, &view)
	view["api_key"] = creds.APIKey
	view["webhook_secret"] = creds.WebhookSecret
	out := map[string]any{
		"success":        true,
		"project":        view,
		"api_key":        creds.APIKey,
		"webhook_secret": creds.WebhookSecret,
	}
	if p.Owner == nil {
		out["warning"] = paywatch.MsgNoOwnerWarning
	}
	return c.JSON(http.StatusCreated, out)
}

// newProject reads the body of POST /v1/projects and creates the project.
func (s *Server) newProject(c echo.Context) (*payments.Project, payments.Credentials, error) {
	var req projectRequest
	if err := decodeBody(c, &req); err != nil {
		return nil, payments.Credentials{}, err
	}
	slug, err := optString(req.Slug)
	if err != nil {
		return nil, payments.Credentials{}, err
	}
	if slug == nil {
		return nil, payments.Credentials{}, paywatch.ValidateSlug("")
	}
	ps, err := projectSettings(req)
	if err != nil {
		return nil, payments.Credentials{}, err
	}
	return s.payments.CreateProject(c.Request().Context(), payments.NewProject{Slug: *slug, Settings: ps})
}

// listProjects is GET /v1/projects.
func (s *Server) listProjects(c echo.Context) error {
	ps, err := s.payments.ListProjects(c.Request().Context())
	if err != nil {
		return err
	}
	items := make([]projectView, 0, len(ps))
	for _, p := range ps {
		items = append(items, projectOf(p))
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "projects": items})
}

// updateProject is PATCH /v1/projects/{slug}.
func (s *Server) updateProject(c echo.Context) error {
	var req projectRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.Slug) > 0 {
		return paywatch.Errorf(paywatch.EINVALID, "slug cannot be changed")
	}
	ps, err := projectSettings(req)
	if err != nil {
		return err
	}
	p, err := s.payments.UpdateProject(c.Request().Context(), c.Param("slug"), ps)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "project": projectOf(p)})
}

// regenerateKeys is POST /v1/projects/{slug}/regenerate-keys.
func (s *Server) regenerateKeys(c echo.Context) error {
	creds, err := s.payments.RegenerateKeys(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"success":        true,
		"api_key":        creds.APIKey,
		"api_secret":     creds.APISecret,
		"webhook_secret": creds.WebhookSecret,
	})
}

// telegramLink is POST /v1/projects/{slug}/telegram-link (paywatch's own):
// 200 {success, url, expires_at}, a one-time https://t.me/<bot>?start=<code>
// link that connects the chat which opens it (operations.md §7).
func (s *Server) telegramLink(c echo.Context) error {
	l, err := s.payments.TelegramLink(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "url": l.URL, "expires_at": ts(l.ExpiresAt)})
}
