package api

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/accounts"
)

// accountView is an account in operator responses.
type accountView struct {
	Email     string                  `json:"email"`
	Plan      paywatch.Plan           `json:"plan"`
	Status    accounts.AccountStatus  `json:"status"`
	Limits    paywatch.Limits         `json:"limits"`
	Overrides paywatch.LimitOverrides `json:"limit_overrides"`
	CreatedAt string                  `json:"created_at"`
	UpdatedAt string                  `json:"updated_at"`
}

func accountOf(a *accounts.Account) accountView {
	return accountView{
		Email: a.Email, Plan: a.Plan, Status: a.Status, Limits: a.Limits(), Overrides: a.Overrides,
		CreatedAt: ts(a.CreatedAt), UpdatedAt: ts(a.UpdatedAt),
	}
}

// accountRequest is the body of POST /v1/accounts and PATCH /v1/accounts/{email}.
type accountRequest struct {
	Email  json.RawMessage            `json:"email"`
	Plan   json.RawMessage            `json:"plan"`
	Status json.RawMessage            `json:"status"`
	Limits map[string]json.RawMessage `json:"limits"`
	// ProtectionKey, only as null on PATCH, removes the account's
	// dashboard protection key (paywatch's own field).
	ProtectionKey json.RawMessage `json:"protection_key"`
}

// createAccount is POST /v1/accounts.
func (s *Server) createAccount(c echo.Context) error {
	var req accountRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	email, err := optString(req.Email)
	if err != nil || email == nil {
		return errInvalidBody
	}
	plan := paywatch.PlanFree
	if p, err := optString(req.Plan); err != nil {
		return err
	} else if p != nil {
		if plan, err = paywatch.ParsePlan(*p); err != nil {
			return err
		}
	}
	// Limits are checked before the account exists, so a refused request
	// leaves nothing behind.
	limits, err := limitUpdate(req.Limits)
	if err != nil {
		return err
	}
	a, err := s.accounts.CreateAccount(c.Request().Context(), *email, plan)
	if err != nil {
		return err
	}
	if len(req.Limits) > 0 {
		if a, err = s.accounts.UpdateAccount(c.Request().Context(), a.Email, limits); err != nil {
			return err
		}
	}
	if s.deps.Dashboard {
		// The new account's owner sets a password through an e-mailed
		// link. Should queuing it fail, the account stands: "Forgot your
		// password?" sends the same kind of link.
		if err := s.accounts.AccountCreated(c.Request().Context(), a); err != nil {
			s.deps.Logger.Error("set-password e-mail not queued", "error", err)
		}
	}
	return c.JSON(http.StatusCreated, map[string]any{"success": true, "account": accountOf(a)})
}

// limitUpdate reads the limits object of an account request.
func limitUpdate(limits map[string]json.RawMessage) (accounts.AccountUpdate, error) {
	var u accounts.AccountUpdate
	fields := map[string]**int64{
		"projects":                   &u.Limits.Projects,
		"wallets":                    &u.Limits.Wallets,
		"payment_links":              &u.Limits.PaymentLinks,
		"api_calls_per_day":          &u.Limits.APICallsPerDay,
		"webhooks_per_day":           &u.Limits.WebhooksPerDay,
		"chat_notifications_per_day": &u.Limits.ChatNotificationsPerDay,
	}
	for name, raw := range limits {
		dst, ok := fields[name]
		if !ok {
			return u, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgBadLimit)
		}
		if absent(raw) {
			u.ClearLimits = append(u.ClearLimits, name)
			continue
		}
		n, err := optNumber(raw)
		if err != nil {
			return u, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgBadLimit)
		}
		v, err := n.Int64()
		if err != nil || v < paywatch.Unlimited {
			return u, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgBadLimit)
		}
		*dst = &v
	}
	return u, nil
}

// updateAccount is PATCH /v1/accounts/{email}.
func (s *Server) updateAccount(c echo.Context) error {
	var req accountRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	u, err := limitUpdate(req.Limits)
	if err != nil {
		return err
	}
	if p, err := optString(req.Plan); err != nil {
		return err
	} else if p != nil {
		plan, err := paywatch.ParsePlan(*p)
		if err != nil {
			return err
		}
		u.Plan = &plan
	}
	if st, err := optString(req.Status); err != nil {
		return err
	} else if st != nil {
		status, err := accounts.ParseAccountStatus(*st)
		if err != nil {
			return err
		}
		u.Status = &status
	}
	clearKey := len(req.ProtectionKey) > 0
	if clearKey && !absent(req.ProtectionKey) {
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgProtectionKeyNull)
	}
	email, err := pathParam(c, "email")
	if err != nil {
		return err
	}
	a, err := s.accounts.UpdateAccount(c.Request().Context(), email, u)
	if err != nil {
		return err
	}
	if clearKey {
		if err := s.accounts.ClearProtectionKey(c.Request().Context(), a.Email); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "account": accountOf(a)})
}

// pathParam returns a path parameter decoded. Echo matches routes on the
// raw path whenever the request escapes a character that needs no escaping
// (owner%40shop.example), and then hands the parameter over still escaped;
// otherwise the parameter is already decoded and must not be decoded again.
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	decoded, err := url.PathUnescape(v)
	if err != nil {
		return "", errInvalidBody
	}
	return decoded, nil
}
