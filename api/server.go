// Package api serves paywatch's HTTP interfaces: the merchant REST API on the
// API listener and the hosted payment pages on the pay listener.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/paywatch/paywatch/store"
)

// MaxBodyBytes caps request bodies. The largest legitimate body is a payment
// with 4 KB of metadata; 64 KB leaves room without inviting abuse.
const MaxBodyBytes = 64 << 10

// DefaultSetupURL is where GET /v1/config's setup_url points when
// Deps.SetupURL is empty: the README's getting-started section.
const DefaultSetupURL = "https://github.com/paywatch/paywatch#readme"

// Deps are the collaborators of the HTTP layer, injected by cmd/paywatch.
type Deps struct {
	// Version is reported by /health.
	Version string
	// Checks are the dependency probes of /health, by name ("database", "temporal").
	Checks map[string]Check
	// Chains reports scanner progress for /health; nil until scanners run.
	Chains func(ctx context.Context) ([]ChainStatus, error)
	// Logger receives request errors; never secrets.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. The store has its own clock
	// (store.WithClock) for the limits it keeps.
	Now func() time.Time

	// Store is the PostgreSQL store. It also knows which networks the
	// service offers (store.WithNetworks).
	Store *store.Store
	// Workflows starts and updates payment workflows; nil leaves payments
	// unstarted (the reconciler starts them once it is set).
	Workflows PaymentWorkflows
	// MasterKey authenticates the operator endpoints (x-master-key); empty
	// refuses them all.
	MasterKey string
	// BaseURL is PAYWATCH_BASE_URL: the API listener answers only its host
	// (empty disables the rule; a port of 0 accepts any port).
	BaseURL string
	// PayURL is PAYWATCH_PAY_URL: payment_url is PayURL/{id}, and the pay
	// listener answers only its host.
	PayURL string
	// SetupURL is GET /v1/config's setup_url; empty means DefaultSetupURL.
	SetupURL string
	// WebhookAllowPrivate lets webhook URLs point at private, reserved and
	// loopback addresses (development and tests only).
	WebhookAllowPrivate bool
	// TrustProxyHeaders takes the client IP from X-Forwarded-For and
	// X-Real-IP, for a deployment behind a reverse proxy. Without it the
	// peer address counts, so clients cannot dodge per-IP limits by
	// sending those headers.
	TrustProxyHeaders bool
}

// Server holds the two Echo instances and the shared draining flag.
type Server struct {
	deps     Deps
	started  time.Time
	draining atomic.Bool
	qr       qrCache

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
		deps.SetupURL = DefaultSetupURL
	}
	s := &Server{deps: deps}
	s.started = s.clock()
	s.api = s.newEcho(deps.BaseURL)
	s.pay = s.newEcho(deps.PayURL)
	s.api.GET("/health", s.health)
	s.pay.GET("/health", s.health)
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

func (s *Server) newEcho(publicURL string) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	if s.deps.TrustProxyHeaders {
		e.IPExtractor = echo.ExtractIPFromXFFHeader()
	} else {
		e.IPExtractor = echo.ExtractIPDirect()
	}
	e.Pre(hostRule(publicURL))
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit("64K"))
	return e
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
		s.api.GET(prefix+"/config", s.config, key)

		s.api.POST(prefix+"/accounts", s.createAccount, op)
		s.api.PATCH(prefix+"/accounts/:email", s.updateAccount, op)
		s.api.POST(prefix+"/projects", s.createProject, op)
		s.api.GET(prefix+"/projects", s.listProjects, op)
		s.api.PATCH(prefix+"/projects/:slug", s.updateProject, op)
		s.api.PUT(prefix+"/projects/:slug/wallet", s.putWallet, op)
		s.api.POST(prefix+"/projects/:slug/regenerate-keys", s.regenerateKeys, op)
		s.api.GET(prefix+"/projects/:slug/webhook-deliveries", s.listDeliveries, op)
		s.api.POST(prefix+"/projects/:slug/payment-links", s.createPaymentLink, op)
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
