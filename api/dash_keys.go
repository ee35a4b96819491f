package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/payments"
)

// keysPage is the data of the keys page; Credentials are set only on the
// answer that regenerated them, the one time they are shown.
type keysPage struct {
	dashPage
	ProtectionKeySet bool
	Credentials      payments.Credentials
}

// keysRender renders the keys page, with err's message.
func (s *Server) keysRender(c echo.Context, err error) error {
	pg := keysPage{dashPage: s.page(c, "API keys"), ProtectionKeySet: session(c).ProtectionKeySet}
	pg.Tab = "keys"
	status := http.StatusOK
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error, pg.Flash = st, msg, ""
	}
	return renderDash(c, status, "keys", pg)
}

func (s *Server) keysShow(c echo.Context) error {
	return s.keysRender(c, nil)
}

// keysRegenerate replaces the API key, API secret and webhook secret once
// the protection key is given, and e-mails the owner a security alert
// (payments.Service.RegenerateKeys queues it with the new keys, in one
// transaction). The new keys cross the redirect in a reveal cookie, so
// that reloading the page that shows them never regenerates them again.
func (s *Server) keysRegenerate(c echo.Context) error {
	ctx := c.Request().Context()
	if err := s.accounts.CheckProtectionKey(ctx, session(c).Account.ID, c.FormValue("protection_key")); err != nil {
		return s.keysRender(c, err)
	}
	creds, err := s.payments.RegenerateKeys(ctx, dashProject(c).Slug)
	if err != nil {
		return s.keysRender(c, err)
	}
	if err := s.reveal(c, revealKeys, dashProject(c).Slug, creds); err != nil {
		return err
	}
	return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/keys/new", "")
}

// keysNewShow shows the regenerated keys, once.
func (s *Server) keysNewShow(c echo.Context) error {
	var creds payments.Credentials
	if !s.takeReveal(c, revealKeys, dashProject(c).Slug, &creds) {
		return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/keys", flashShownOnce)
	}
	pg := keysPage{dashPage: s.page(c, "New API keys"), ProtectionKeySet: true, Credentials: creds}
	pg.Tab = "keys"
	return renderDash(c, http.StatusOK, "keys_new", pg)
}
