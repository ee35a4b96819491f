package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// Limits of interface.md "Limits".
const (
	// BurstLimit is the number of requests per minute per API key.
	BurstLimit = 60
	// InvalidKeyLimit is the number of requests per minute per client IP
	// with unknown API keys.
	InvalidKeyLimit = 30
	// InvalidMasterKeyLimit is the number of requests per minute per client
	// IP with a missing or wrong master key before the operator endpoints
	// answer 429 instead of 401 "Invalid master key" (operations.md §2). It
	// is generous because the master key is high-entropy and cannot be
	// guessed at any rate: the guard only stops floods, and an operator's
	// misconfigured script should keep seeing the 401 that names its fault.
	InvalidMasterKeyLimit = 600
	// UnauthenticatedLimit is the number of requests per minute per client
	// IP on endpoints without authentication.
	UnauthenticatedLimit = 30
)

// contextProject is the echo.Context key of the authenticated project.
const contextProject = "paywatch.project"

// project returns the project that requireAPIKey authenticated.
func project(c echo.Context) *payments.Project {
	return c.Get(contextProject).(*payments.Project)
}

// hostRule answers 404 to any request whose Host is not the host of
// publicURL (operations.md §3), except /health, which load balancers and
// orchestrators probe by address. An empty publicURL disables the rule; a
// port of 0 in it accepts any port.
func hostRule(publicURL string) echo.MiddlewareFunc {
	u, err := url.Parse(publicURL)
	if publicURL == "" || err != nil || u.Hostname() == "" {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	wantHost := strings.ToLower(u.Hostname())
	wantPort := u.Port()
	defaultPort := "80"
	if u.Scheme == "https" {
		defaultPort = "443"
	}
	if wantPort == "" {
		wantPort = defaultPort
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().URL.Path == "/health" {
				return next(c)
			}
			host, port := splitHost(c.Request().Host)
			if port == "" {
				port = defaultPort
			}
			if host != wantHost || (wantPort != "0" && port != wantPort) {
				return echo.ErrNotFound
			}
			return next(c)
		}
	}
}

// storablePath answers 400 "Invalid request body" to a request whose path
// holds text PostgreSQL can neither store nor compare (storableText: NUL or
// invalid UTF-8, escaped or not), before any handler passes a path
// parameter (a payment id, a slug, an account's e-mail) on to a query.
// JSON bodies are checked where they are decoded (decodeBody), form fields
// by their forms; query parameters are parsed into numbers, statuses and
// times, each refused with its own message.
func storablePath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !storableText(c.Request().URL.Path) {
			return errInvalidBody
		}
		return next(c)
	}
}

// splitHost splits a Host header into lower-case host and port.
func splitHost(hostport string) (string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.ToLower(strings.Trim(host, "[]")), port
}

// setRateHeaders writes the rate-limit headers of a 429 (interface.md
// "429"); they are sent on 429 responses only.
func setRateHeaders(c echo.Context, limit int64, w payments.RateWindow, daily bool) {
	h := c.Response().Header()
	h.Set("X-RateLimit-Limit", strconv.FormatInt(limit, 10))
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(w.Reset.Unix(), 10))
	if daily {
		h.Set("X-RateLimit-Daily", "true")
	}
}

// setRetryAfter writes Retry-After in whole seconds.
func setRetryAfter(c echo.Context, w payments.RateWindow) {
	c.Response().Header().Set("Retry-After", strconv.FormatInt(int64(w.RetryAfter()/time.Second), 10))
}

// tooMany is a 429 with the given message.
func tooMany(msg string) error {
	return paywatch.Errorf(paywatch.ERATELIMIT, "%s", msg)
}

// hitPerIP counts a request of the client's IP under scope and reports
// whether it is over limit per minute; over the limit, Retry-After is set.
func (s *Server) hitPerIP(c echo.Context, scope string, limit int64) (bool, error) {
	w, err := s.payments.HitRate(c.Request().Context(), scope+":"+c.RealIP(), time.Minute)
	if err != nil {
		return false, err
	}
	if w.Count > limit {
		setRetryAfter(c, w)
		return true, nil
	}
	return false, nil
}

// limitPerIP limits an unauthenticated endpoint to UnauthenticatedLimit
// requests per minute per client IP (429 "Too many requests" with
// Retry-After). The hosted pages' endpoints use it.
func (s *Server) limitPerIP(scope string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			over, err := s.hitPerIP(c, "ip:"+scope, UnauthenticatedLimit)
			if err != nil {
				return err
			}
			if over {
				return tooMany(paywatch.MsgTooManyRequests)
			}
			return next(c)
		}
	}
}

// requireAPIKey authenticates x-api-key and applies the API limits, in
// this order: unknown keys per IP, then the burst limit per key, then the
// owner's daily API calls (GET /v1/config is exempt). Every counter lives
// in PostgreSQL, so all replicas share it; a known key is authenticated
// and counted in one statement (payments.Service.AuthenticateCall).
func (s *Server) requireAPIKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		key := c.Request().Header.Get("x-api-key")
		if key == "" {
			return paywatch.Errorf(paywatch.EUNAUTHORIZED, paywatch.MsgMissingAPIKey)
		}
		keyID := sha256.Sum256([]byte(key))
		call, err := s.payments.AuthenticateCall(ctx, payments.APICall{
			Key:        key,
			RateKey:    "api-key:" + hex.EncodeToString(keyID[:12]),
			Window:     time.Minute,
			Burst:      BurstLimit,
			CountDaily: !(c.Request().Method == http.MethodGet && strings.HasSuffix(c.Path(), "/config")),
		})
		if paywatch.ErrorCode(err) == paywatch.EUNAUTHORIZED {
			over, herr := s.hitPerIP(c, "invalid-api-key", InvalidKeyLimit)
			if herr != nil {
				return herr
			}
			if over {
				return tooMany(paywatch.MsgInvalidKeyFlood)
			}
			return err
		}
		if err != nil {
			return err
		}
		prj := call.Project
		if call.Burst.Count > BurstLimit {
			setRateHeaders(c, BurstLimit, call.Burst, false)
			return tooMany(paywatch.MsgRateLimit)
		}
		if d := call.Daily; d != nil {
			limits := prj.Owner.Limits()
			if limits.APICallsPerDay != paywatch.Unlimited && d.Count > limits.APICallsPerDay {
				setRateHeaders(c, limits.APICallsPerDay, *d, true)
				return &paywatch.Error{Code: paywatch.ERATELIMIT, Message: paywatch.MsgDailyLimit, Fields: map[string]any{
					"limit": limits.APICallsPerDay,
					"plan":  string(prj.Owner.Plan),
				}}
			}
		}
		c.Set(contextProject, prj)
		return next(c)
	}
}

// requireMasterKey authenticates x-master-key, comparing digests in
// constant time so neither content nor length leaks. Missing and wrong keys
// count per client IP, up to InvalidMasterKeyLimit a minute.
func (s *Server) requireMasterKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.isMasterKey(c.Request().Header.Get("x-master-key")) {
			if err := s.countWrongMasterKey(c); err != nil {
				return err
			}
			return paywatch.Errorf(paywatch.EUNAUTHORIZED, paywatch.MsgInvalidMasterKey)
		}
		return next(c)
	}
}

// isMasterKey compares digests in constant time, so neither the key's
// content nor its length leaks; no key matches an empty master key.
func (s *Server) isMasterKey(key string) bool {
	got, want := sha256.Sum256([]byte(key)), sha256.Sum256([]byte(s.deps.MasterKey))
	return s.deps.MasterKey != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// countWrongMasterKey counts a missing or wrong master key against the
// client's IP and returns the 429 once it is over InvalidMasterKeyLimit a
// minute, or nil, after which the caller gives its own refusal.
func (s *Server) countWrongMasterKey(c echo.Context) error {
	over, err := s.hitPerIP(c, "invalid-master-key", InvalidMasterKeyLimit)
	if err != nil {
		return err
	}
	if over {
		return tooMany(paywatch.MsgTooManyRequests)
	}
	return nil
}
