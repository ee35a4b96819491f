package api

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
)

// The merchant dashboard (operations.md §6) is served on the API listener
// under DashboardPath. Its pages are server-rendered html/template files
// embedded from web/dashboard, with one stylesheet and one small script
// under the same strict Content-Security-Policy as the hosted pages: no
// inline script or style, nothing from elsewhere. Every page works without
// JavaScript; the script only refreshes a payment's status and the payment
// list, writes dates in the viewer's time zone (dash_time.go), and copies
// link URLs.
//
// The handlers are small files named for what they serve (dash_auth.go,
// dash_security.go, dash_projects.go, dash_wallet.go, dash_links.go,
// dash_payments.go, dash_unmatched.go, dash_keys.go, dash_viewers.go). Each decodes a form,
// calls the accounts or payments use cases, and renders the page again with
// the use case's message when it refuses: a form never answers 500 for bad
// input.

// DashboardPath is where the dashboard lives on the API listener.
const DashboardPath = "/dashboard"

// dashPages are the dashboard's templates, each parsed with the layout.
var dashPages = map[string]*template.Template{}

// dashFuncs are the helpers the templates use.
var dashFuncs = template.FuncMap{
	"join":   strings.Join,
	"mailto": mailtoURL,
	"short":  shortID,
	"upper":  strings.ToUpper,
	"when":   when,
}

func init() {
	names := []string{
		"register", "confirm", "resend", "login", "code", "forgot", "reset", "invite", "notice",
		"home", "security", "codes", "project_new", "project_created", "settings",
		"wallet", "links", "payments", "payment", "keys", "keys_new", "viewers", "unmatched",
	}
	for _, name := range names {
		dashPages[name] = template.Must(template.New(name).Funcs(dashFuncs).ParseFS(webFS,
			"web/dashboard/layout.html", "web/dashboard/"+name+".html"))
	}
}

// shortID shortens a UUID for a table cell; the full id is in the link.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// mailtoURL is the mailto: link of an e-mail address a buyer typed. An
// address may hold ?, &, = and # before its @ ("x?cc=a@b.test&subject=..."
// is one), which in a mailto: URL would start header fields (cc, subject,
// body) the merchant's mail client fills in. So every byte but letters,
// digits, "-._~+" and the @ before the domain is percent-encoded (RFC 6068
// allows that anywhere), and the link names the one address, nothing else.
func mailtoURL(addr string) template.URL {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return template.URL("mailto:" + mailtoEscape(addr))
	}
	return template.URL("mailto:" + mailtoEscape(addr[:at]) + "@" + mailtoEscape(addr[at+1:]))
}

// mailtoEscape percent-encodes what mailtoURL does not keep.
func mailtoEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// dashHeaders marks every dashboard answer: never cached, never framed, no
// referrer (the URLs carry tokens), and the pages' strict policy.
func dashHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		c.Set(ctxDash, true)
		return next(c)
	}
}

// dashRoutes registers the dashboard. Routes under /dashboard/p/:slug need
// a role in the project; the ones marked owner refuse viewers with 403.
func (s *Server) dashRoutes() {
	g := s.api.Group(DashboardPath, dashHeaders, storableForm, s.loadSession, s.checkCSRF)
	g.GET("/assets/:name", s.serveAsset)

	g.GET("", s.dashHome, s.signedIn)
	g.GET("/", s.dashHome, s.signedIn)
	g.GET("/register", s.registerShow)
	g.POST("/register", s.registerSubmit)
	g.GET("/confirm", s.confirmShow)
	g.POST("/confirm", s.confirmSubmit)
	g.GET("/resend", s.resendShow)
	g.POST("/resend", s.resendSubmit)
	g.GET("/login", s.loginShow)
	g.POST("/login", s.loginSubmit)
	g.GET("/login/code", s.codeShow)
	g.POST("/login/code", s.codeSubmit)
	g.POST("/logout", s.logout)
	g.GET("/password/forgot", s.forgotShow)
	g.POST("/password/forgot", s.forgotSubmit)
	g.GET("/password/reset", s.resetShow)
	g.POST("/password/reset", s.resetSubmit)
	g.GET("/invite", s.inviteShow)
	g.POST("/invite", s.inviteSubmit)

	g.GET("/security", s.securityShow, s.signedIn)
	g.GET("/notice", s.noticeShow)
	g.POST("/security/totp/begin", s.totpBegin, s.signedIn)
	g.GET("/security/totp", s.totpShow, s.signedIn)
	g.GET("/security/codes", s.codesShow, s.signedIn)
	g.POST("/security/totp/enable", s.totpEnable, s.signedIn)
	g.POST("/security/totp/disable", s.totpDisable, s.signedIn)
	g.POST("/security/protection-key", s.protectionKeySubmit, s.signedIn)
	g.POST("/security/sign-out-everywhere", s.signOutEverywhere, s.signedIn)

	g.GET("/projects/new", s.projectNewShow, s.signedIn, s.twoFactorIfRequired)
	g.POST("/projects/new", s.projectNewSubmit, s.signedIn, s.twoFactorIfRequired)

	// A new project's keys, shown once: without the operator's two-factor
	// rule, which a first project brings into force, or they would be
	// lost behind it. The page shows nothing but what this session's own
	// creation sealed for it (dash_reveal.go).
	g.GET("/p/:slug/created", s.projectCreatedShow, s.signedIn, s.inProject, s.ownerOnly)

	for _, r := range s.projectRoutes() {
		mw := []echo.MiddlewareFunc{s.signedIn, s.twoFactorIfRequired, s.inProject}
		if r.owner {
			mw = append(mw, s.ownerOnly)
		}
		g.Add(r.method, "/p/:slug"+r.path, r.handler, mw...)
	}
	g.Any("/*", func(echo.Context) error { return echo.ErrNotFound })
}

// projectRoute is a page or action of one project.
type projectRoute struct {
	method, path string
	handler      echo.HandlerFunc
	// owner marks what only the project's owner may do (interface.md
	// Authentication rule 5): viewers get 403.
	owner bool
}

// projectRoutes lists a project's pages and actions; a viewer reaches only
// the payment list, a payment's page and its live status, and the list of
// unmatched funds.
func (s *Server) projectRoutes() []projectRoute {
	return []projectRoute{
		{http.MethodGet, "", s.projectShow, false},
		{http.MethodGet, "/payments", s.paymentsShow, false},
		{http.MethodGet, "/payments/status", s.paymentsLive, false},
		{http.MethodGet, "/payments/:id", s.paymentShow, false},
		{http.MethodGet, "/payments/:id/status", s.paymentStatusJSON, false},
		{http.MethodPost, "/payments/:id/recheck", s.paymentRecheck, true},
		{http.MethodGet, "/unmatched", s.unmatchedShow, false},
		{http.MethodPost, "/unmatched/handled", s.transferHandledSubmit, true},
		{http.MethodPost, "/events/:event/redeliver", s.eventRedeliver, true},
		{http.MethodGet, "/settings", s.settingsShow, true},
		{http.MethodPost, "/settings", s.settingsSubmit, true},
		{http.MethodPost, "/deactivate", s.projectDeactivate, true},
		{http.MethodPost, "/telegram-link", s.telegramLinkMake, true},
		{http.MethodGet, "/wallet", s.walletShow, true},
		{http.MethodPost, "/wallet", s.walletSubmit, true},
		{http.MethodPost, "/wallet/delete", s.walletDelete, true},
		{http.MethodGet, "/links", s.linksShow, true},
		{http.MethodPost, "/links", s.linkCreate, true},
		{http.MethodPost, "/links/:id/deactivate", s.linkDeactivate, true},
		{http.MethodGet, "/keys", s.keysShow, true},
		{http.MethodPost, "/keys", s.keysRegenerate, true},
		{http.MethodGet, "/keys/new", s.keysNewShow, true},
		{http.MethodGet, "/viewers", s.viewersShow, true},
		{http.MethodPost, "/viewers", s.viewerInvite, true},
		{http.MethodPost, "/viewers/remove", s.viewerRemove, true},
	}
}

// renderDashError is the dashboard's error page: the status, and the
// message for people (never internals), inside the dashboard's frame.
func (s *Server) renderDashError(c echo.Context, status int, msg string) {
	title, text := "Cannot continue", msg
	switch {
	case status == http.StatusNotFound:
		title, text = "Not found", "This page does not exist, or your account cannot see it."
	case status == http.StatusTooManyRequests:
		title, text = paywatch.MsgTooManyRequests, "Please wait a minute, then try again."
	case status >= 500:
		title, text = "Something went wrong", "Please try again in a moment."
	}
	f := authForm{Notice: text}
	f.dashPage = s.page(c, title)
	if err := renderDash(c, status, "notice", f); err != nil {
		_ = c.String(status, title)
	}
}

// renderDash writes a dashboard page with the layout.
func renderDash(c echo.Context, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := dashPages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		return fmt.Errorf("render dashboard %s: %w", name, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}
