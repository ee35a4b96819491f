package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rateHeaders are the headers sent only on 429 responses.
var rateHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Daily", "Retry-After"}

func requireNoRateHeaders(t *testing.T, r response) {
	t.Helper()
	for _, h := range rateHeaders {
		require.Empty(t, r.Header.Get(h), "%s on a %d", h, r.Code)
	}
}

func TestAuthenticationErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())

	requireError(t, e.do(request{method: "GET", path: "/v1/payments"}), http.StatusUnauthorized, "Missing x-api-key header")
	requireError(t, e.call("pk_live_nope", "GET", "/v1/payments", nil), http.StatusUnauthorized, "Invalid API key")

	e.op("PATCH", "/v1/projects/shop", map[string]any{"active": false})
	requireError(t, e.call(key, "GET", "/v1/payments", nil), http.StatusForbidden, "Project is deactivated")
	e.op("PATCH", "/v1/projects/shop", map[string]any{"active": true})

	e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"status": "suspended"})
	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u"}),
		http.StatusForbidden, "Account suspended. Contact support.")
	e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"status": "closed"})
	requireError(t, e.call(key, "GET", "/v1/config", nil), http.StatusForbidden, "Account is no longer active.")
	e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"status": "active"})
	require.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/payments", nil).Code)
}

func TestInvalidKeyFloodPerIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	const ip = "203.0.113.50"
	for i := range 30 {
		r := e.do(request{method: "GET", path: "/v1/payments", apiKey: "pk_live_guess" + strconv.Itoa(i), ip: ip})
		requireError(t, r, http.StatusUnauthorized, "Invalid API key")
		requireNoRateHeaders(t, r)
	}
	r := e.do(request{method: "GET", path: "/v1/payments", apiKey: "pk_live_guess", ip: ip})
	requireError(t, r, http.StatusTooManyRequests, "Too many invalid API key attempts. Try again later.")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)

	// Other clients, and valid keys, are not affected.
	requireError(t, e.do(request{method: "GET", path: "/v1/payments", apiKey: "pk_live_guess", ip: "203.0.113.51"}),
		http.StatusUnauthorized, "Invalid API key")
	assert.Equal(t, http.StatusOK, e.do(request{method: "GET", path: "/v1/payments", apiKey: key, ip: ip}).Code)

	// The next minute starts afresh.
	e.clock.Add(time.Minute)
	requireError(t, e.do(request{method: "GET", path: "/v1/payments", apiKey: "pk_live_guess", ip: ip}),
		http.StatusUnauthorized, "Invalid API key")
}

func TestBurstLimitPerKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	other := e.merchant("other", "pro", nil, otherHDWallet())
	// Start at the beginning of a minute so the window cannot roll over.
	now := e.clock.Now()
	e.clock.Add(now.Truncate(time.Minute).Add(time.Minute).Sub(now))

	for range 60 {
		r := e.call(key, "GET", "/v1/config", nil)
		require.Equal(t, http.StatusOK, r.Code, r.Raw)
		requireNoRateHeaders(t, r)
	}
	r := e.call(key, "GET", "/v1/payments", nil)
	requireError(t, r, http.StatusTooManyRequests, "Rate limit exceeded. Try again later.")
	assert.Equal(t, "60", r.Header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "0", r.Header.Get("X-RateLimit-Remaining"))
	reset := e.clock.Now().Truncate(time.Minute).Add(time.Minute).Unix()
	assert.Equal(t, strconv.FormatInt(reset, 10), r.Header.Get("X-RateLimit-Reset"))
	assert.Empty(t, r.Header.Get("X-RateLimit-Daily"))

	assert.Equal(t, http.StatusOK, e.call(other, "GET", "/v1/config", nil).Code, "per key")
	e.clock.Add(time.Minute)
	assert.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/config", nil).Code, "a new window")
}

func TestDailyLimitPerOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "free", nil, hdWallet())
	r := e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"api_calls_per_day": 3}})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	// Shared across the owner's projects.
	e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"projects": 2, "api_calls_per_day": 3}})
	r = e.op("POST", "/v1/projects", map[string]any{"slug": "shop2", "owner_email": "shop@example.com"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	key2 := r.str("api_key")

	require.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/payments", nil).Code)
	require.Equal(t, http.StatusOK, e.call(key2, "GET", "/v1/payments", nil).Code)
	for range 5 {
		require.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/config", nil).Code, "GET /v1/config is exempt")
	}
	require.Equal(t, http.StatusNotFound, e.call(key, "GET", "/v1/payments/00000000-0000-0000-0000-000000000000", nil).Code, "errors count too")

	r = e.call(key2, "GET", "/v1/payments", nil)
	requireError(t, r, http.StatusTooManyRequests, "Daily API call limit exceeded. Upgrade your plan for unlimited access.")
	assert.Equal(t, "3", string(r.Body["limit"].(jsonNumber)))
	assert.Equal(t, "free", r.Body["plan"])
	assert.Equal(t, "3", r.Header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "0", r.Header.Get("X-RateLimit-Remaining"))
	assert.Equal(t, "true", r.Header.Get("X-RateLimit-Daily"))
	now := e.clock.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, strconv.FormatInt(midnight.Unix(), 10), r.Header.Get("X-RateLimit-Reset"))
	assert.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/config", nil).Code, "still exempt when over")

	// Reset at 00:00 UTC.
	e.clock.Add(midnight.Sub(now))
	assert.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/payments", nil).Code)

	// The plan's default: 500 on free.
	e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"api_calls_per_day": nil}})
	assert.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/payments", nil).Code)
}
