package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/accounts"
)

// authForm is the data of the sign-in, registration and password pages.
type authForm struct {
	dashPage
	// Address is the e-mail address typed, shown again after a refusal.
	Address string
	// Token is the e-mailed link's token, carried by the form that uses it.
	Token string
	// HasAccount tells the invitation page whether to ask for a password,
	// and SignInFirst that the address's account must sign in to accept.
	HasAccount, SignInFirst bool
	// Notice is the text of the notice page.
	Notice string
	// Invitation is the invitation page's: the project and who invited.
	Invitation accounts.Invitation
}

// authPage renders an account page; err, when the client's, is shown on
// the form with its status, and anything else is the error handler's.
func (s *Server) authPage(c echo.Context, name, title string, f authForm, err error) error {
	status := http.StatusOK
	f.dashPage = s.page(c, title)
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, f.Error, f.Flash = st, msg, ""
	}
	return renderDash(c, status, name, f)
}

// noticeShow is the page a form that sent an e-mail redirects to: it says
// to check the inbox, in the words of the form's flash (the general ones
// once the flash is gone, on a reload).
func (s *Server) noticeShow(c echo.Context) error {
	f := authForm{dashPage: s.page(c, "Check your inbox")}
	f.Notice, f.Flash = f.Flash, ""
	if f.Notice != flashTexts[flashCheckInbox] && f.Notice != flashTexts[flashCheckReset] {
		f.Notice = "If the address you typed can be used, an e-mail is on its way."
	}
	return renderDash(c, http.StatusOK, "notice", f)
}

func (s *Server) registerShow(c echo.Context) error {
	return s.authPage(c, "register", "Create an account", authForm{}, nil)
}

// registerSubmit starts a registration. The answer is the same whether or
// not the address has an account already: the e-mail says which.
func (s *Server) registerSubmit(c echo.Context) error {
	email := c.FormValue("email")
	err := s.accounts.Register(c.Request().Context(), email, c.FormValue("password"), c.RealIP())
	if err != nil {
		return s.authPage(c, "register", "Create an account", authForm{Address: email}, err)
	}
	return s.redirect(c, DashboardPath+"/notice", flashCheckInbox)
}

func (s *Server) confirmShow(c echo.Context) error {
	return s.authPage(c, "confirm", "Confirm your address", authForm{Token: c.QueryParam("token")}, nil)
}

// confirmSubmit opens the confirmation link with the password chosen at
// registration: the form, not the GET of the link, consumes it, so a mail
// scanner that fetches links does not.
func (s *Server) confirmSubmit(c echo.Context) error {
	token := c.FormValue("token")
	if _, err := s.accounts.Confirm(c.Request().Context(), token, c.FormValue("password")); err != nil {
		return s.authPage(c, "confirm", "Confirm your address", authForm{Token: token}, err)
	}
	return s.redirect(c, DashboardPath+"/login", flashConfirmed)
}

func (s *Server) resendShow(c echo.Context) error {
	return s.authPage(c, "resend", "Send the confirmation again", authForm{}, nil)
}

func (s *Server) resendSubmit(c echo.Context) error {
	email := c.FormValue("email")
	if err := s.accounts.ResendConfirmation(c.Request().Context(), email, c.RealIP()); err != nil {
		return s.authPage(c, "resend", "Send the confirmation again", authForm{Address: email}, err)
	}
	return s.redirect(c, DashboardPath+"/notice", flashCheckInbox)
}

func (s *Server) loginShow(c echo.Context) error {
	if session(c) != nil {
		return c.Redirect(http.StatusSeeOther, DashboardPath)
	}
	return s.authPage(c, "login", "Sign in", authForm{}, nil)
}

// loginSubmit checks the password; an account with two factors goes on to
// the code page with a short-lived pending cookie.
func (s *Server) loginSubmit(c echo.Context) error {
	email := c.FormValue("email")
	ctx := c.Request().Context()
	res, err := s.accounts.SignIn(ctx, email, c.FormValue("password"), c.RealIP(), c.Request().UserAgent())
	if err != nil {
		return s.authPage(c, "login", "Sign in", authForm{Address: email}, err)
	}
	if res.Session == nil {
		s.setCookie(c, pendingCookie, res.Pending, 300)
		return c.Redirect(http.StatusSeeOther, DashboardPath+"/login/code")
	}
	s.endOldSession(c)
	s.startSession(c, res.Session)
	return c.Redirect(http.StatusSeeOther, DashboardPath)
}

// endOldSession ends the session of the browser's earlier cookie, if any,
// when a sign-in replaces it.
func (s *Server) endOldSession(c echo.Context) {
	if old, err := s.cookie(c, sessionCookie); err == nil && old.Value != "" {
		_ = s.accounts.SignOut(c.Request().Context(), old.Value)
	}
}

func (s *Server) codeShow(c echo.Context) error {
	if _, err := s.cookie(c, pendingCookie); err != nil {
		return c.Redirect(http.StatusSeeOther, DashboardPath+"/login")
	}
	return s.authPage(c, "code", "Two-factor code", authForm{}, nil)
}

// codeSubmit completes a pending sign-in with a TOTP or recovery code.
func (s *Server) codeSubmit(c echo.Context) error {
	pending, err := s.cookie(c, pendingCookie)
	if err != nil {
		return c.Redirect(http.StatusSeeOther, DashboardPath+"/login")
	}
	ctx := c.Request().Context()
	sess, err := s.accounts.SecondFactor(ctx, pending.Value, c.FormValue("code"), c.RealIP(), c.Request().UserAgent())
	if err != nil {
		return s.authPage(c, "code", "Two-factor code", authForm{}, err)
	}
	s.endOldSession(c)
	s.startSession(c, sess)
	return c.Redirect(http.StatusSeeOther, DashboardPath)
}

// logout ends this browser's session.
func (s *Server) logout(c echo.Context) error {
	if ck, err := s.cookie(c, sessionCookie); err == nil && ck.Value != "" {
		if err := s.accounts.SignOut(c.Request().Context(), ck.Value); err != nil {
			return err
		}
	}
	s.setCookie(c, sessionCookie, "", -1)
	return s.redirect(c, DashboardPath+"/login", flashSignedOut)
}

func (s *Server) forgotShow(c echo.Context) error {
	return s.authPage(c, "forgot", "Reset your password", authForm{}, nil)
}

func (s *Server) forgotSubmit(c echo.Context) error {
	email := c.FormValue("email")
	if err := s.accounts.RequestPasswordReset(c.Request().Context(), email, c.RealIP()); err != nil {
		return s.authPage(c, "forgot", "Reset your password", authForm{Address: email}, err)
	}
	return s.redirect(c, DashboardPath+"/notice", flashCheckReset)
}

func (s *Server) resetShow(c echo.Context) error {
	return s.authPage(c, "reset", "Choose a password", authForm{Token: c.QueryParam("token")}, nil)
}

// resetSubmit sets the password of a reset or set-password link.
func (s *Server) resetSubmit(c echo.Context) error {
	token := c.FormValue("token")
	if err := s.accounts.SetPassword(c.Request().Context(), token, c.FormValue("password")); err != nil {
		return s.authPage(c, "reset", "Choose a password", authForm{Token: token}, err)
	}
	s.setCookie(c, sessionCookie, "", -1)
	return s.redirect(c, DashboardPath+"/login", flashPassword)
}

// inviteShow shows an invitation: for whom, to which project, from whom
// and, for an address without an account, the password field of the
// account it creates.
func (s *Server) inviteShow(c echo.Context) error {
	token := c.QueryParam("token")
	inv, err := s.accounts.Invitation(c.Request().Context(), token)
	return s.authPage(c, "invite", "Accept the invitation", s.inviteForm(c, token, inv), err)
}

// inviteForm is the invitation page's data; SignInFirst when the address
// has an account that is not the one signed in.
func (s *Server) inviteForm(c echo.Context, token string, inv accounts.Invitation) authForm {
	sess := session(c)
	first := inv.HasAccount && (sess == nil || !strings.EqualFold(sess.Account.Email, inv.Email))
	return authForm{Token: token, Address: inv.Email, HasAccount: inv.HasAccount, SignInFirst: first, Invitation: inv}
}

// inviteSubmit accepts an invitation. A new account is signed in at once
// and lands on the project's payments.
func (s *Server) inviteSubmit(c echo.Context) error {
	token := c.FormValue("token")
	ctx := c.Request().Context()
	var signedIn *accounts.Account
	if sess := session(c); sess != nil {
		signedIn = sess.Account
	}
	inv, sess, err := s.accounts.AcceptInvite(ctx, token, c.FormValue("password"), signedIn, c.RealIP(), c.Request().UserAgent())
	if err != nil {
		return s.authPage(c, "invite", "Accept the invitation", s.inviteForm(c, token, inv), err)
	}
	switch {
	case sess != nil:
		s.endOldSession(c)
		s.startSession(c, sess)
	case signedIn != nil && !strings.EqualFold(signedIn.Email, inv.Email):
		// Accepted for a new address while signed in as another account,
		// whose session stays.
		return s.redirect(c, DashboardPath, flashJoinedOther)
	}
	return s.redirect(c, DashboardPath+"/p/"+inv.ProjectSlug+"/payments", flashJoined)
}
