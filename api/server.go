// Package api serves paywatch's HTTP interfaces: the merchant REST API on the
// API listener and the hosted payment pages on the pay listener.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
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
	// Logger receives request errors; never secrets.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server holds the two Echo instances and the shared draining flag.
type Server struct {
	deps     Deps
	started  time.Time
	draining atomic.Bool

	api *echo.Echo
	pay *echo.Echo
}

// New builds the API and pay handlers.
func New(deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	s := &Server{deps: deps}
	s.started = s.clock()
	s.api = s.newEcho()
	s.pay = s.newEcho()
	s.api.GET("/health", s.health)
	s.pay.GET("/health", s.health)
	return s
}

func (s *Server) clock() time.Time {
	if s.deps.Now != nil {
		return s.deps.Now()
	}
	return time.Now()
}

func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit("64K"))
	return e
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

// errorBody is the error format of interface.md: { "error": "<message>" }.
type errorBody struct {
	Error string `json:"error"`
}

// errorHandler is the single place where errors become HTTP responses.
// Anything that is not a deliberate HTTP error is logged and answered with
// a generic 500, so internals never leak.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status := http.StatusInternalServerError
	msg := "Internal server error"
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status = he.Code
		switch status {
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			status, msg = http.StatusNotFound, "Not found"
		case http.StatusRequestEntityTooLarge:
			msg = "Request body too large"
		case http.StatusBadRequest:
			msg = "Invalid request body"
		default:
			if m, ok := he.Message.(string); ok {
				msg = m
			} else {
				msg = http.StatusText(status)
			}
		}
	default:
		s.deps.Logger.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = c.JSON(status, errorBody{Error: msg})
}
