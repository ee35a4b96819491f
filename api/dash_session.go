package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/accounts"
	"github.com/paywatch/paywatch/payments"
)

// The dashboard's cookies. All are HttpOnly, SameSite=Lax, scoped to the
// dashboard's path, and Secure outside paywatch dev.
const (
	sessionCookie = "paywatch_session"
	pendingCookie = "paywatch_2fa"
	csrfCookie    = "paywatch_csrf"
	flashCookie   = "paywatch_flash"
)

// Context keys of the dashboard's middleware.
const (
	ctxSession = "paywatch.session"
	ctxProject = "paywatch.project"
	ctxRole    = "paywatch.role"
	// ctxProtectionSet marks a protection key set during the request.
	ctxProtectionSet = "paywatch.protection-set"
	ctxCSRF          = "paywatch.csrf"
	ctxEnded         = "paywatch.ended"
	ctxDash          = "paywatch.dashboard"
)

// cookieName is the name a dashboard cookie has on this deployment: with
// the __Host- prefix where cookies are Secure (HTTPS), so that a browser
// takes it only from this host, over HTTPS, for the whole site, and no
// sibling subdomain can plant or shadow it.
func (s *Server) cookieName(name string) string {
	if s.deps.InsecureCookies {
		return name
	}
	return "__Host-" + name
}

// cookiePath is the dashboard cookies' path: "/" for the __Host- prefix,
// which requires it, else the dashboard's.
func (s *Server) cookiePath() string {
	if s.deps.InsecureCookies {
		return DashboardPath
	}
	return "/"
}

// cookie reads one of the dashboard's cookies by its base name.
func (s *Server) cookie(c echo.Context, name string) (*http.Cookie, error) {
	return c.Cookie(s.cookieName(name))
}

// setCookie writes one of the dashboard's cookies; maxAge < 0 deletes it.
func (s *Server) setCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: s.cookieName(name), Value: value, Path: s.cookiePath(), MaxAge: maxAge,
		HttpOnly: true, Secure: !s.deps.InsecureCookies, SameSite: http.SameSiteLaxMode,
	})
}

// session returns the signed-in session, nil for a visitor.
func session(c echo.Context) *accounts.Session {
	sess, _ := c.Get(ctxSession).(*accounts.Session)
	return sess
}

// loadSession finds the session of the request's cookie. A session that
// ended (expired, signed out, or its account suspended or closed) is
// forgotten, and why is kept for the sign-in page. A status poll does not
// count as the session's use (accounts.Service.AuthenticatePoll).
func (s *Server) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if ck, err := s.cookie(c, sessionCookie); err == nil && ck.Value != "" {
			authenticate := s.accounts.Authenticate
			if statusPoll(c) {
				// A page's script polls by itself: that is not use, and an
				// open page must not keep an idle session alive.
				authenticate = s.accounts.AuthenticatePoll
			}
			sess, err := authenticate(c.Request().Context(), ck.Value)
			switch code := paywatch.ErrorCode(err); code {
			case "":
				c.Set(ctxSession, sess)
			case paywatch.EUNAUTHORIZED, paywatch.EFORBIDDEN:
				s.setCookie(c, sessionCookie, "", -1)
				c.Set(ctxEnded, paywatch.ErrorMessage(err))
			default:
				return err
			}
		}
		return next(c)
	}
}

// csrfToken is the anti-forgery token a form carries: the session's, or
// for a visitor a cookie of its own (double submit) whose value the server
// signed (preSessionToken), so that a value an attacker plants in the
// visitor's browser is not one the server takes.
func (s *Server) csrfToken(c echo.Context) string {
	if sess := session(c); sess != nil {
		return sess.CSRF
	}
	if t, ok := c.Get(ctxCSRF).(string); ok {
		return t
	}
	if ck, err := s.cookie(c, csrfCookie); err == nil && s.validPreSession(ck.Value) {
		return ck.Value
	}
	t := s.preSessionToken(rand.Text())
	s.setCookie(c, csrfCookie, t, 0)
	c.Set(ctxCSRF, t)
	return t
}

// preSessionToken is a visitor's anti-forgery token: a random nonce and
// the server's HMAC of it.
func (s *Server) preSessionToken(nonce string) string {
	return nonce + "." + s.csrfMAC(nonce)
}

// validPreSession reports whether t is a token preSessionToken made.
func (s *Server) validPreSession(t string) bool {
	nonce, mac, ok := strings.Cut(t, ".")
	return ok && len(nonce) >= 20 && subtle.ConstantTimeCompare([]byte(mac), []byte(s.csrfMAC(nonce))) == 1
}

// csrfKeyOf derives the key of csrfMAC from the master key, or makes a
// random one without it.
func csrfKeyOf(masterKey string) []byte {
	if masterKey == "" {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		return k
	}
	sum := sha256.Sum256([]byte("paywatch dashboard csrf key\x00" + masterKey))
	return sum[:]
}

// csrfMAC signs a pre-session nonce with a key derived from the master key,
// which every replica shares (a random key of the process's own without
// one).
func (s *Server) csrfMAC(nonce string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("paywatch dashboard pre-session csrf\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF refuses a POST whose form does not carry the token of
// csrfToken, or that comes from a page of another origin. SameSite=Lax
// cookies already keep other sites' forms from using the session; the
// token also covers the forms used before signing in.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodPost {
			return next(c)
		}
		// Under Referrer-Policy: no-referrer browsers send "Origin: null"
		// for the pages' own forms, so only a named origin is compared.
		if origin := c.Request().Header.Get("Origin"); origin != "" && origin != "null" && s.deps.BaseURL != "" && !sameOrigin(origin, s.deps.BaseURL) {
			return paywatch.Errorf(paywatch.EFORBIDDEN, paywatch.MsgFormExpired)
		}
		want := ""
		if sess := session(c); sess != nil {
			want = sess.CSRF
		} else if ck, err := s.cookie(c, csrfCookie); err == nil && s.validPreSession(ck.Value) {
			want = ck.Value
		}
		// From the form's body (or a header), never the query string: a
		// token in a URL leaks into logs and Referer headers.
		got := c.Request().Header.Get("X-CSRF-Token")
		if got == "" {
			got = c.Request().PostFormValue("csrf")
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return paywatch.Errorf(paywatch.EFORBIDDEN, paywatch.MsgFormExpired)
		}
		return next(c)
	}
}

// storableForm refuses a form with text PostgreSQL can neither store nor
// compare (NUL or invalid UTF-8, see storableText) before any handler
// passes a field on, so such input is a 400 on the form, never a 500.
func storableForm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodPost {
			return next(c)
		}
		form, err := c.FormParams()
		if err != nil {
			return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidForm)
		}
		for _, vs := range form {
			for _, v := range vs {
				if !storableText(v) {
					return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidForm)
				}
			}
		}
		return next(c)
	}
}

// sameOrigin compares an Origin header with the base URL's scheme, host
// and port; a base URL with port 0 (a listener on a free port, in tests)
// accepts any port, as the Host rule does.
func sameOrigin(origin, base string) bool {
	o, err1 := url.Parse(origin)
	b, err2 := url.Parse(base)
	if err1 != nil || err2 != nil || !strings.EqualFold(o.Scheme, b.Scheme) || !strings.EqualFold(o.Hostname(), b.Hostname()) {
		return false
	}
	return b.Port() == "0" || o.Port() == b.Port()
}

// signedIn sends visitors to the sign-in page.
func (s *Server) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if session(c) == nil {
			if statusPoll(c) {
				// The payment page's script stops polling on 401.
				return c.JSON(http.StatusUnauthorized, body(paywatch.MsgSessionEnded, nil))
			}
			return c.Redirect(http.StatusSeeOther, DashboardPath+"/login")
		}
		return next(c)
	}
}

// statusPoll reports a request of the script of a payment's page or of
// the payment list (.../payments/status), which must not be redirected to
// a page (an answer of 401 or 403 stops it) and is not the user's use of
// the session. It reads the matched route, so it works in the group's
// middleware, which Echo runs after routing.
func statusPoll(c echo.Context) bool {
	return strings.HasSuffix(c.Path(), "/status")
}

// twoFactorIfRequired sends an owner (an account that owns a project)
// without two factors to the security page when the operator requires
// them (PAYWATCH_REQUIRE_2FA), from every project page.
func (s *Server) twoFactorIfRequired(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if sess := session(c); sess != nil && s.accounts.TwoFactorRequired(sess) {
			if statusPoll(c) {
				return c.JSON(http.StatusForbidden, body(flashTexts[flashNeed2FA], nil))
			}
			s.flash(c, flashNeed2FA)
			return c.Redirect(http.StatusSeeOther, DashboardPath+"/security")
		}
		return next(c)
	}
}

// inProject loads the project of :slug and the account's role in it. A
// project the account has no role in is not found, as if it did not
// exist.
func (s *Server) inProject(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		p, err := s.payments.ProjectBySlug(ctx, c.Param("slug"))
		if paywatch.ErrorCode(err) == paywatch.ENOTFOUND || paywatch.ErrorCode(err) == paywatch.EINVALID {
			return echo.ErrNotFound
		}
		if err != nil {
			return err
		}
		role, err := s.accounts.RoleIn(ctx, session(c).Account.ID, p)
		if err != nil {
			return err
		}
		if role == accounts.RoleNone {
			return echo.ErrNotFound
		}
		c.Set(ctxProject, p)
		c.Set(ctxRole, role)
		return next(c)
	}
}

// ownerOnly refuses a viewer what only the owner may do.
func (s *Server) ownerOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if role, _ := c.Get(ctxRole).(accounts.Role); role != accounts.RoleOwner {
			return paywatch.Errorf(paywatch.EFORBIDDEN, paywatch.MsgOwnerOnly)
		}
		return next(c)
	}
}

// dashProject is the project of a /dashboard/p/:slug request.
func dashProject(c echo.Context) *payments.Project {
	p, _ := c.Get(ctxProject).(*payments.Project)
	return p
}

// startSession sets the cookie of a new session, replacing any earlier
// one, and clears the visitor's CSRF cookie.
func (s *Server) startSession(c echo.Context, sess *accounts.Session) {
	maxAge := int(time.Until(sess.ExpiresAt).Seconds())
	if maxAge < 1 {
		maxAge = 1
	}
	s.setCookie(c, sessionCookie, sess.Token, maxAge)
	s.setCookie(c, pendingCookie, "", -1)
	s.setCookie(c, csrfCookie, "", -1)
}

// The flash messages shown once after a redirect, by key; the cookie
// carries only the key, so it cannot inject text.
const (
	flashSaved         = "saved"
	flashNeed2FA       = "need2fa"
	flashSignedOut     = "signedout"
	flashPassword      = "password"
	flashConfirmed     = "confirmed"
	flashTOTPOn        = "totpon"
	flashTOTPOff       = "totpoff"
	flashProtection    = "protection"
	flashEverywhere    = "everywhere"
	flashWalletSaved   = "wallet"
	flashWalletDeleted = "walletdeleted"
	flashLinkCreated   = "link"
	flashLinkOff       = "linkoff"
	flashRechecked     = "recheck"
	flashRedelivered   = "redeliver"
	flashInvited       = "invited"
	flashRemoved       = "removed"
	flashJoined        = "joined"
	flashDeactivated   = "deactivated"
	flashActivated     = "activated"
	flashHandled       = "handled"
	flashShownOnce     = "shownonce"
	flashJoinedOther   = "joinedother"
	flashCheckInbox    = "inbox"
	flashCheckReset    = "inboxreset"
)

var flashTexts = map[string]string{
	flashSaved:         "Settings saved.",
	flashNeed2FA:       "Your operator requires two-factor sign-in for project owners. Turn it on below to continue.",
	flashSignedOut:     "You are signed out.",
	flashPassword:      "Your password is set. Sign in with it.",
	flashConfirmed:     "Your address is confirmed and your account is ready. Sign in.",
	flashTOTPOn:        "Two-factor sign-in is on.",
	flashTOTPOff:       "Two-factor sign-in is off.",
	flashProtection:    "Protection key saved.",
	flashEverywhere:    "You are signed out on every device, this one included.",
	flashWalletSaved:   "Wallet saved.",
	flashWalletDeleted: "Wallet deleted.",
	flashLinkCreated:   "Payment link created.",
	flashLinkOff:       "Payment link deactivated.",
	flashRechecked:     "The chain was checked again. The status below is the result.",
	flashRedelivered:   "The webhook is being sent again.",
	flashInvited:       "Invitation sent.",
	flashRemoved:       "Access removed.",
	flashJoined:        "You accepted the invitation: these are the project's payments.",
	flashDeactivated:   "Project deactivated: its API key and payment pages no longer work.",
	flashActivated:     "Project active again.",
	flashHandled:       "Transfer marked as handled.",
	flashShownOnce:     "Secrets are shown once, and that page was already shown. If you did not store them, make new ones: regenerate the keys, or turn two-factor sign-in off and on again for new recovery codes.",
	flashJoinedOther:   "The invitation is accepted, and an account made for its address. You are still signed in as yourself: sign out, then sign in with that address to view the project.",
	flashCheckInbox:    paywatch.MsgCheckInbox,
	flashCheckReset:    paywatch.MsgCheckInboxReset,
}

// flash keeps a message for the next page the browser loads.
func (s *Server) flash(c echo.Context, key string) {
	s.setCookie(c, flashCookie, key, 60)
}

// takeFlash returns and clears the pending flash message.
func (s *Server) takeFlash(c echo.Context) string {
	ck, err := s.cookie(c, flashCookie)
	if err != nil {
		return ""
	}
	s.setCookie(c, flashCookie, "", -1)
	return flashTexts[ck.Value]
}

// formError returns the message a form shows for err, and its status,
// when err is the client's (bad input, a refusal, a limit); ok is false
// for failures that are not.
func formError(err error) (int, string, bool) {
	status, b, ok := clientError(err)
	if !ok {
		return 0, "", false
	}
	msg, _ := b["error"].(string)
	return status, msg, true
}

// redirect answers a successful form with 303 See Other to path, with a
// flash message.
func (s *Server) redirect(c echo.Context, path, flash string) error {
	if flash != "" {
		s.flash(c, flash)
	}
	return c.Redirect(http.StatusSeeOther, path)
}
