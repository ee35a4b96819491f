package api

import (
	"html/template"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
)

// securityPage is the data of the security page: two factors, the
// protection key and the sessions.
type securityPage struct {
	dashPage
	TwoFactor     bool
	ProtectionKey bool
	// Setup is set while two factors are being turned on: the secret to
	// type and its QR code to scan.
	Setup  bool
	Secret string
	QR     template.URL
	// Codes are the recovery codes, shown once.
	Codes []string
}

// securityRender renders the security page, with err's message when it
// is the client's.
func (s *Server) securityRender(c echo.Context, pg securityPage, err error) error {
	sess := session(c)
	status := http.StatusOK
	pg.dashPage = s.page(c, "Security")
	pg.TwoFactor, pg.ProtectionKey = sess.TwoFactorEnabled, sess.ProtectionKeySet
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error, pg.Flash = st, msg, ""
	}
	return renderDash(c, status, "security", pg)
}

func (s *Server) securityShow(c echo.Context) error {
	return s.securityRender(c, securityPage{}, nil)
}

// totpBegin makes a new secret, and redirects to the page that shows it;
// nothing changes until totpEnable confirms a code from it.
func (s *Server) totpBegin(c echo.Context) error {
	if _, _, err := s.accounts.BeginTOTP(c.Request().Context(), session(c).Account.ID); err != nil {
		return err
	}
	return s.redirect(c, DashboardPath+"/security/totp", "")
}

// totpShow shows the secret being set up, with its QR code; with none
// pending, the security page.
func (s *Server) totpShow(c echo.Context) error {
	secret, url, ok, err := s.accounts.PendingTOTP(c.Request().Context(), session(c).Account.ID)
	if err != nil {
		return err
	}
	if !ok {
		return s.redirect(c, DashboardPath+"/security", "")
	}
	return s.totpSetup(c, secret, url, nil)
}

// totpSetup shows the secret being set up, with its QR code, and err's
// message when a code did not match it.
func (s *Server) totpSetup(c echo.Context, secret, url string, err error) error {
	qr, qerr := paywatch.QRCodeDataURI(url)
	if qerr != nil {
		return s.securityRender(c, securityPage{}, qerr)
	}
	// The QR code is a PNG this server made: a data: URI is safe here.
	return s.securityRender(c, securityPage{Setup: true, Secret: secret, QR: template.URL(qr)}, err) //nolint:gosec
}

// totpEnable turns two factors on; the recovery codes cross the redirect
// sealed, to be shown once by codesShow.
func (s *Server) totpEnable(c echo.Context) error {
	ctx := c.Request().Context()
	sess := session(c)
	codes, err := s.accounts.EnableTOTP(ctx, sess.Account.ID, c.FormValue("code"), c.RealIP())
	if err != nil {
		// A mistyped code shows the same pending secret again.
		secret, url, ok, perr := s.accounts.PendingTOTP(ctx, sess.Account.ID)
		if perr != nil {
			return perr
		}
		if !ok {
			return s.securityRender(c, securityPage{}, err)
		}
		return s.totpSetup(c, secret, url, err)
	}
	if err := s.reveal(c, revealCodes, "", codes); err != nil {
		return err
	}
	return s.redirect(c, DashboardPath+"/security/codes", "")
}

// codesShow shows the recovery codes just made, once.
func (s *Server) codesShow(c echo.Context) error {
	var codes []string
	if !s.takeReveal(c, revealCodes, "", &codes) {
		return s.redirect(c, DashboardPath+"/security", flashShownOnce)
	}
	pg := securityPage{Codes: codes}
	pg.dashPage = s.page(c, "Recovery codes")
	return renderDash(c, http.StatusOK, "codes", pg)
}

func (s *Server) totpDisable(c echo.Context) error {
	if err := s.accounts.DisableTOTP(c.Request().Context(), session(c).Account.ID, c.FormValue("code"), c.RealIP()); err != nil {
		return s.securityRender(c, securityPage{}, err)
	}
	return s.redirect(c, DashboardPath+"/security", flashTOTPOff)
}

func (s *Server) protectionKeySubmit(c echo.Context) error {
	err := s.accounts.SetProtectionKey(c.Request().Context(), session(c).Account.ID, c.FormValue("current"), c.FormValue("key"))
	if err != nil {
		return s.securityRender(c, securityPage{}, err)
	}
	return s.redirect(c, DashboardPath+"/security", flashProtection)
}

// signOutEverywhere ends every session of the account, this one too.
func (s *Server) signOutEverywhere(c echo.Context) error {
	if err := s.accounts.SignOutEverywhere(c.Request().Context(), session(c).Account.ID); err != nil {
		return err
	}
	s.setCookie(c, sessionCookie, "", -1)
	return s.redirect(c, DashboardPath+"/login", flashEverywhere)
}
