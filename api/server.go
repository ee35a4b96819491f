// Package api serves paywatch's HTTP interfaces: the merchant REST API on the
// API listener and the hosted payment pages on the pay listener.
package api

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/accounts"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/payments"
	"github.com/paywatch/paywatch/telegram"
)

// MaxBodyBytes caps request bodies. The largest legitimate body is a payment
// with 4 KB of metadata; 64 KB leaves room without inviting abuse.
const MaxBodyBytes = 64 << 10

// Deps are the collaborators of the HTTP layer, injected by cmd/paywatch.
type Deps struct {
	// Version is reported by /health.
	Version string
	// Checks are the dependency probes of /health, by name ("database", "temporal").
	Checks map[string]Check
	// Chains reports scanner progress for /health; nil until scanners run.
	Chains func(ctx context.Context) ([]ChainStatus, error)
	// MaxLagBlocks is PAYWATCH_MAX_LAG_BLOCKS: a scanner more blocks than
	// this behind its head makes /health degraded; 0 means
	// DefaultMaxLagBlocks.
	MaxLagBlocks uint64
	// Logger receives request errors; never secrets.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. The store has its own clock
	// (store.WithClock) for the limits it keeps.
	Now func() time.Time

	// Store is the PostgreSQL store. It also knows which networks the
	// service offers (store.WithNetworks). The server hands it to the use
	// cases (payments, accounts) and calls none of its methods itself.
	Store *payments.Store
	// Workflows starts and updates payment workflows; nil leaves payments
	// unstarted (the reconciler starts them once it is set).
	Workflows payments.Workflows
	// MasterKey authenticates the operator endpoints (x-master-key); empty
	// refuses them all.
	MasterKey string
	// PayloadCodec, when set, is served at CodecPath for operators: the
	// codec the Temporal Web UI decodes payment histories with (codec.go).
	PayloadCodec http.Handler
	// CodecOrigins are the browser origins whose Temporal Web UI may call
	// the codec endpoint (CORS), such as the embedded UI's or
	// https://cloud.temporal.io.
	CodecOrigins []string
	// BaseURL is PAYWATCH_BASE_URL: the API listener answers only its host
	// (empty disables the rule; a port of 0 accepts any port).
	BaseURL string
	// PayURL is PAYWATCH_PAY_URL: payment_url is PayURL/{id}, and the pay
	// listener answers only its host.
	PayURL string
	// SetupURL is GET /v1/config's setup_url; empty means the guide this
	// server serves itself, BaseURL + GuidePath.
	SetupURL string
	// WebhookAllowPrivate lets webhook URLs point at private, reserved and
	// loopback addresses (development and tests only).
	WebhookAllowPrivate bool
	// WebhookRequireHTTPS refuses plain http:// webhook URLs when a
	// project is saved (outside paywatch dev, unless
	// PAYWATCH_WEBHOOK_ALLOW_HTTP).
	WebhookRequireHTTPS bool
	// TrustedProxies are PAYWATCH_TRUSTED_PROXIES: X-Forwarded-For is
	// honoured only on connections from one of them, and the client is the
	// rightmost address not in them. Empty ignores the header, so clients
	// cannot dodge per-IP limits by sending it.
	TrustedProxies []netip.Prefix
	// DevMail serves the dev outbox at GET /dev/mail (paywatch dev without
	// PAYWATCH_SMTP_URL).
	DevMail bool
	// Telegram is the deployment's bot (PAYWATCH_TELEGRAM_BOT_TOKEN); nil
	// when chat notifications are off.
	Telegram *telegram.Client
	// Dashboard serves the merchant dashboard under /dashboard.
	Dashboard bool
	// InsecureCookies drops the Secure flag of the dashboard's cookies, for
	// paywatch dev on plain http://127.0.0.1.
	InsecureCookies bool
	// RequireTwoFactor sends owners without two factors to the security
	// page before any owner page (PAYWATCH_REQUIRE_2FA).
	RequireTwoFactor bool
	// Devnet serves the devnet endpoints of operations.md §4 on the API
	// listener; nil (serve, or dev without devnet chains) answers 404.
	Devnet http.Handler
	// DevnetNetworks are the networks served by devnet chains, whose
	// transactions no public explorer knows: pages show them unlinked.
	DevnetNetworks []paywatch.Network
	// WalletTokens are the token contracts, by network and token, that the
	// hosted page's EIP-681 wallet link of an EVM payment names: the ones
	// the scanners watch (a devnet chain's, or PAYWATCH_*_CONTRACT
	// overrides). Nil means the mainnet contracts on every EVM network; a
	// network missing from a non-nil map gets no wallet link (its chain id
	// is not known for sure).
	WalletTokens map[paywatch.Network]map[paywatch.Token]string
	// Mints are the token mints, by network and token, that the scanners
	// of the memo-payment networks (SOLANA) watch, a devnet's included:
	// a memo payment's wallet link names the one the scanner reads. A
	// network without an entry takes the table's (mainnet) mints.
	Mints map[paywatch.Network]map[paywatch.Token]string
	// ObserveRequest, when set, is told of every answered request of
	// both listeners: its Echo route pattern (never the raw path; "" when
	// no route matched), status code and duration, for the service's
	// metrics.
	ObserveRequest func(route string, code int, took time.Duration)
}

// Server holds the two Echo instances and the shared draining flag.
type Server struct {
	deps     Deps
	payments *payments.Service
	accounts *accounts.Service
	started  time.Time
	draining atomic.Bool
	qr       qrCache
	// csrfKey signs visitors' anti-forgery tokens (dash_session.go).
	csrfKey []byte

	api *echo.Echo
	pay *echo.Echo
}

// New builds the API and pay handlers.
func New(deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	deps.BaseURL = strings.TrimRight(deps.BaseURL, "/")
	deps.PayURL = strings.TrimRight(deps.PayURL, "/")
	if deps.SetupURL == "" {
		deps.SetupURL = deps.BaseURL + GuidePath
	}
	s := &Server{deps: deps, csrfKey: csrfKeyOf(deps.MasterKey)}
	s.payments = payments.New(payments.Deps{Store: deps.Store, Workflows: deps.Workflows, Logger: deps.Logger, Now: s.clock,
		WebhookAllowPrivate: deps.WebhookAllowPrivate, WebhookRequireHTTPS: deps.WebhookRequireHTTPS, Telegram: deps.Telegram})
	s.accounts = accounts.New(accounts.Deps{
		Store: deps.Store, StartMail: s.payments.StartMail, BaseURL: deps.BaseURL,
		RequireTwoFactor: deps.RequireTwoFactor, Logger: deps.Logger, Now: s.clock,
	})
	s.started = s.clock()
	s.api = s.newEcho(deps.BaseURL, apiHeaders)
	s.pay = s.newEcho(deps.PayURL, payHeaders)
	s.api.GET("/health", s.health, s.limitHealth)
	s.pay.GET("/health", s.health, s.limitHealth)
	if deps.Devnet != nil {
		h := echo.WrapHandler(deps.Devnet)
		s.api.Any("/devnet", h)
		s.api.Any("/devnet/*", h)
	}
	if deps.Store != nil {
		s.routes()
	}
	return s
}

func (s *Server) clock() time.Time {
	if s.deps.Now != nil {
		return s.deps.Now()
	}
	return time.Now()
}

// newEcho builds one listener's Echo answering only publicURL's host.
// The access log runs first, so every request gets its id and its log
// line; headers run before the host rule, so that every answer carries
// the listener's headers, the host rule's 404 included.
func (s *Server) newEcho(publicURL string, headers echo.MiddlewareFunc) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	e.IPExtractor = clientIP(s.deps.TrustedProxies)
	e.Pre(s.accessLog)
	if s.deps.ObserveRequest != nil {
		e.Pre(observe(s.deps.ObserveRequest))
	}
	e.Pre(headers)
	e.Pre(hostRule(publicURL))
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit: "64K",
		// The codec endpoint takes a page of a history's payloads at a
		// time and sets its own limit (maxCodecBody).
		Skipper: func(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, CodecPath+"/") },
	}))
	e.Use(storablePath)
	e.Use(requestLang)
	return e
}

// requestLang gives the request's context the language of the person
// making it (Accept-Language; English without one it speaks), for what
// the request sends: e-mails are written in it (locale.FromContext).
func requestLang(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		l := locale.Choose(c.Request().Header.Get("Accept-Language"))
		c.SetRequest(c.Request().WithContext(locale.WithLang(c.Request().Context(), l)))
		return next(c)
	}
}

// apiHeaders sets the headers of every API-listener answer: no MIME
// sniffing, and no caching by anything in between. Keys and secrets
// (project creation, key regeneration) and payment states must never be
// served from a cache.
func apiHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		return next(c)
	}
}

// clientIP is the client address every per-IP limit counts: the peer,
// unless the peer is a trusted proxy, in which case X-Forwarded-For is read
// from the right and the first address that is not a trusted proxy is the
// client. Echo trusts loopback, link-local and private peers by default;
// here only the configured ranges are trusted, and X-Real-IP never is.
func clientIP(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// routes registers the API under /v1 and, for clients that follow the one
// reference showing it, under /api/v1 too, and the hosted pages on the pay
// listener.
func (s *Server) routes() {
	for _, prefix := range []string{"/v1", "/api/v1"} {
		// Middleware is attached per route, not per group: an Echo group
		// with middleware also catches the unknown paths under its prefix,
		// which must stay a plain 404.
		key, op := s.requireAPIKey, s.requireMasterKey
		s.api.POST(prefix+"/payments", s.createPayment, key)
		s.api.GET(prefix+"/payments", s.listPayments, key)
		s.api.GET(prefix+"/payments/:id", s.getPayment, key)
		s.api.PATCH(prefix+"/payments/:id", s.cancelPayment, key)
		s.api.POST(prefix+"/payments/:id/confirm", s.confirmPayment, key)
		s.api.GET(prefix+"/transfers", s.listTransfers, key)
		s.api.GET(prefix+"/transfers/:network/:tx_hash", s.getTransfer, key)
		s.api.POST(prefix+"/transfers/:network/:tx_hash/handled", s.markTransferHandled, key)
		s.api.GET(prefix+"/events", s.listEvents, key)
		s.api.POST(prefix+"/events/:event_id/redeliver", s.redeliverOwnEvent, key)
		s.api.GET(prefix+"/config", s.config, key)

		s.api.POST(prefix+"/accounts", s.createAccount, op)
		s.api.PATCH(prefix+"/accounts/:email", s.updateAccount, op)
		s.api.POST(prefix+"/projects", s.createProject, op)
		s.api.GET(prefix+"/projects", s.listProjects, op)
		s.api.PATCH(prefix+"/projects/:slug", s.updateProject, op)
		s.api.PUT(prefix+"/projects/:slug/wallet", s.putWallet, op)
		s.api.POST(prefix+"/projects/:slug/regenerate-keys", s.regenerateKeys, op)
		s.api.GET(prefix+"/projects/:slug/webhook-deliveries", s.listDeliveries, op)
		s.api.POST(prefix+"/projects/:slug/webhook-events/:event_id/redeliver", s.redeliverEvent, op)
		s.api.POST(prefix+"/projects/:slug/payment-links", s.createPaymentLink, op)
		s.api.POST(prefix+"/projects/:slug/telegram-link", s.telegramLink, op)
	}
	s.api.GET(GuidePath, s.guide, s.limitPerIP("guide"))
	s.api.GET(OpenAPIPath, s.openAPI, s.limitPerIP("openapi"))
	s.apiRefRoutes()
	s.codecRoutes()
	if s.deps.DevMail {
		s.api.GET(DevMailPath, s.devMail)
	}
	if s.deps.Dashboard {
		s.dashRoutes()
	}
	s.payRoutes()
}

// API is the handler for the API listener ({base_url}).
func (s *Server) API() http.Handler { return s.api }

// Pay is the handler for the pay listener ({pay_url}).
func (s *Server) Pay() http.Handler { return s.pay }

// SetDraining switches /health to 503 "draining"; it is called the moment
// shutdown begins, before the listeners close.
func (s *Server) SetDraining() { s.draining.Store(true) }

// Draining reports whether shutdown has begun.
func (s *Server) Draining() bool { return s.draining.Load() }

// Reconciler returns a reconciler over the server's store and workflows.
func (s *Server) Reconciler() *payments.Reconciler { return s.payments.Reconciler() }
