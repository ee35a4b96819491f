package api_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/chains/devnet"
)

// Issue 11, edges: per-IP limits behind a proxy, https webhooks outside
// dev, the cancel of a payment shown expired, headers, the devnet's guards,
// the served setup guide, and /health's per-IP limit.

// statusFrom asks for a (missing) payment's status on the pay listener
// from peer with an X-Forwarded-For header; the per-IP limit of the
// hosted pages counts it before the 404.
func (e *env) statusFrom(peer, xff string) int {
	e.t.Helper()
	r := request{method: "GET", path: "/api/pay/" + uuid.NewString(), ip: peer}
	if xff != "" {
		r.header = map[string]string{"X-Forwarded-For": xff}
	}
	return e.payCall(r).Code
}

func TestForwardedForIsIgnoredWithoutTrustedProxies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.startOfMinute()
	// One client sending a new X-Forwarded-For with every request still
	// counts as its own address.
	for i := range api.UnauthenticatedLimit {
		require.Equal(t, http.StatusNotFound, e.statusFrom("203.0.113.9", fmt.Sprintf("192.0.2.%d", i+1)))
	}
	assert.Equal(t, http.StatusTooManyRequests, e.statusFrom("203.0.113.9", "192.0.2.200"))
}

func TestTrustedProxiesGiveEachClientItsOwnLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true, trustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	e.startOfMinute()
	const proxy = "10.1.2.3"
	// 40 customers behind one proxy: none is limited by the others.
	for i := range 40 {
		require.Equal(t, http.StatusNotFound, e.statusFrom(proxy, fmt.Sprintf("192.0.2.%d", i+1)), "customer %d", i)
	}
	// One customer alone reaches the limit; the client is the rightmost
	// address that is not a trusted proxy, so a forged left part does not
	// help.
	for i := range api.UnauthenticatedLimit - 1 {
		require.Equal(t, http.StatusNotFound, e.statusFrom(proxy, fmt.Sprintf("1.1.1.%d, 192.0.2.1, 10.9.9.9", i)))
	}
	assert.Equal(t, http.StatusTooManyRequests, e.statusFrom(proxy, "8.8.8.8, 192.0.2.1"))
	// A peer outside the trusted ranges cannot name a client.
	for i := range api.UnauthenticatedLimit {
		require.Equal(t, http.StatusNotFound, e.statusFrom("203.0.113.50", fmt.Sprintf("192.0.2.%d", 100+i)))
	}
	assert.Equal(t, http.StatusTooManyRequests, e.statusFrom("203.0.113.50", "192.0.2.250"))
}

func TestHealthCountsTowardTheUnauthenticatedLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.startOfMinute()
	health := func(ip string, pay bool) response {
		r := request{method: "GET", path: "/health", ip: ip}
		if pay {
			return e.payCall(r)
		}
		return e.do(r)
	}
	// Both listeners share one count per address.
	for i := range api.UnauthenticatedLimit {
		require.Equal(t, http.StatusOK, health("203.0.113.77", i%2 == 0).Code, "probe %d", i)
	}
	r := health("203.0.113.77", false)
	requireError(t, r, http.StatusTooManyRequests, "Too many requests")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	assert.Equal(t, http.StatusOK, health("203.0.113.78", false).Code, "another address")
	e.clock.Add(time.Minute)
	assert.Equal(t, http.StatusOK, health("203.0.113.77", true).Code, "the next minute")
}

func TestWebhookURLMustBeHTTPSOutsideDev(t *testing.T) {
	t.Parallel()
	// allowPrivate keeps the check to the URL's form, without a DNS lookup.
	e := newEnv(t, envOptions{noWorkflows: true, allowPrivate: true, requireHTTPS: true})
	e.merchant("shop", "pro", nil, nil)
	requireError(t, e.op("PATCH", "/v1/projects/shop", map[string]any{"webhook_url": "http://shop.example/hook"}),
		http.StatusBadRequest, "webhook_url must be an https URL")
	r := e.op("POST", "/v1/projects", map[string]any{"name": "Two", "slug": "two", "webhook_url": "http://shop.example/hook"})
	require.Equal(t, http.StatusBadRequest, r.Code, r.Raw)
	assert.Equal(t, http.StatusNotFound, e.op("PATCH", "/v1/projects/two", map[string]any{"name": "x"}).Code, "nothing was created")

	r = e.op("PATCH", "/v1/projects/shop", map[string]any{"webhook_url": "https://shop.example/hook"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "https://shop.example/hook", r.str("project.webhook_url"))

	// paywatch dev keeps http:// for local receivers.
	dev := newEnv(t, envOptions{noWorkflows: true, allowPrivate: true})
	dev.merchant("shop", "pro", nil, nil)
	r = dev.op("PATCH", "/v1/projects/shop", map[string]any{"webhook_url": "http://127.0.0.1:9999/hook"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
}

func TestCancelOfPaymentShownExpiredIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20", "expires_in": 300})

	// 3 minutes past expires_at GET shows it expired, though its workflow
	// has not expired it yet (the API's clock is ahead of the server's).
	e.clock.Add(8*time.Minute + time.Second)
	require.Equal(t, "expired", e.call(key, "GET", "/v1/payments/"+id, nil).str("payment.status"))
	requireError(t, e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"}),
		http.StatusConflict, `Cannot cancel payment with status "expired". Only pending payments can be cancelled.`)
	p, err := e.store.PaymentByID(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, paywatch.StatusPending, p.Status, "nothing changed")
}

func TestJSONAnswersAreNotSniffedOrCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	requireHeaders := func(r response, what string) {
		t.Helper()
		assert.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"), what)
		assert.Equal(t, "no-store", r.Header.Get("Cache-Control"), what)
	}
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/accounts", map[string]any{"email": "o@example.com", "plan": "pro"}).Code)
	created := e.op("POST", "/v1/projects", map[string]any{"name": "Shop", "slug": "shop", "owner_email": "o@example.com"})
	require.Equal(t, http.StatusCreated, created.Code, created.Raw)
	requireHeaders(created, "project creation (api_key, webhook_secret)")
	regen := e.op("POST", "/v1/projects/shop/regenerate-keys", nil)
	require.Equal(t, http.StatusOK, regen.Code, regen.Raw)
	requireHeaders(regen, "key regeneration")
	requireHeaders(e.call(regen.str("api_key"), "GET", "/v1/payments", nil), "a merchant answer")
	requireHeaders(e.call("pk_live_nope", "GET", "/v1/payments", nil), "an error")
	requireHeaders(e.do(request{method: "GET", path: "/health"}), "health")

	// The host rule's 404, on either listener, devnet paths included.
	for _, host := range []string{"evil.example", payHost, apiHost + ":8443"} {
		for _, path := range []string{"/v1/payments", "/devnet/blocks", "/docs/getting-started"} {
			r := e.do(request{method: "POST", path: path, host: host, body: `{"network":"TRC20","count":1}`})
			requireError(t, r, http.StatusNotFound, "Not found")
			requireHeaders(r, "API listener, wrong host "+host+path)
		}
	}
	for _, host := range []string{"evil.example", apiHost, payHost + ":8443"} {
		for _, path := range []string{"/api/pay/x", "/x", "/assets/pay.js"} {
			r := e.payCall(request{method: "GET", path: path, host: host})
			requireError(t, r, http.StatusNotFound, "Not found")
			requireHeaders(r, "pay listener, wrong host "+host+path)
			assert.Equal(t, "DENY", r.Header.Get("X-Frame-Options"), "pay listener, wrong host "+host+path)
		}
	}
}

func TestSetupURLIsTheServedGuide(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	r := e.call(key, "GET", "/v1/config", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	setup := r.str("setup_url")
	require.Equal(t, "https://"+apiHost+"/docs/getting-started", setup)

	page := e.do(request{method: "GET", path: strings.TrimPrefix(setup, "https://"+apiHost)})
	require.Equal(t, http.StatusOK, page.Code)
	assert.Contains(t, page.Header.Get("Content-Type"), "text/html")
	assert.Contains(t, page.Raw, "<h1>Getting started with paywatch</h1>")
	assert.Contains(t, page.Raw, "https://"+apiHost+"/v1/payments", "examples use this instance's base URL")
	assert.NotContains(t, page.Raw, "<script")
	assert.Contains(t, page.Header.Get("Content-Security-Policy"), "default-src 'none'")
	// Offline: nothing on it loads from elsewhere.
	assert.NotContains(t, page.Raw, `src="http`)
	assert.NotContains(t, page.Raw, `href="http`)
}

// The guide names the networks and tokens of the table, and which tokens
// each network serves: not every token is on every network.
func TestGuideNamesTheTablesNetworksAndTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	page := e.do(request{method: "GET", path: "/docs/getting-started"})
	require.Equal(t, http.StatusOK, page.Code)
	assert.Contains(t, page.Raw, "<p>paywatch watches TRC20, BEP20, ERC20, POLYGON, ARBITRUM, BASE, SOLANA and TON for USDT, USDC, DAI and PYUSD\ntransfers")
	assert.Contains(t, page.Raw, "<tr><td><code>BASE</code></td><td>Base</td><td>USDC, DAI</td><td>10</td></tr>")
	assert.Contains(t, page.Raw, "<tr><td><code>TRC20</code></td><td>Tron (TRC20)</td><td>USDT</td><td>19</td></tr>")
	for _, info := range paywatch.Networks() {
		var tokens []string
		for _, tok := range info.Tokens {
			tokens = append(tokens, string(tok))
		}
		assert.Contains(t, page.Raw, "<tr><td><code>"+string(info.Network)+"</code></td><td>"+html.EscapeString(info.Name)+"</td><td>"+
			strings.Join(tokens, ", ")+"</td><td>"+strconv.Itoa(info.Confirmations)+"</td></tr>", info.Network)
	}
}

func TestDevnetEndpointsAnswerOnlyTheAPIHostAndJSON(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	s := api.New(api.Deps{BaseURL: "https://" + apiHost, PayURL: payURL, Devnet: d.Handler()})
	call := func(host, ctype, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/devnet/blocks", strings.NewReader(body))
		req.Host = host
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		s.API().ServeHTTP(rec, req)
		return rec
	}
	body := `{"network":"TRC20","count":1}`
	// A page on another site that the developer visits: its requests carry
	// that site's name (DNS rebinding) or a form's content type.
	rec := call("evil.example", "application/json", body)
	assert.Equal(t, http.StatusNotFound, rec.Code)
	assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Equal(t, http.StatusNotFound, call("evil.example:8080", "text/plain", body).Code)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		rec := call(apiHost+":443", ct, body)
		assert.Equal(t, http.StatusUnsupportedMediaType, rec.Code, "Content-Type %q", ct)
		assert.JSONEq(t, `{"error":"Content-Type must be application/json"}`, rec.Body.String())
	}
	assert.Equal(t, uint64(0), d.Networks()[0].Head, "no block was mined")
	rec = call(apiHost, "application/json; charset=utf-8", body)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	assert.Equal(t, uint64(1), d.Networks()[0].Head)
}

// A project or wallet name with a control character (CR and LF would
// start new header lines in an e-mail subject) is refused on every path
// and changes nothing (issue 28, item 21).
func TestNamesRefuseControlCharacters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "pro", nil, nil)
	before := e.snapshot()
	for _, name := range []string{"Shop\r\nBcc: victim@example.com", "Shop\nline", "Tab\there", "Del\x7f", "C1\u0085"} {
		requireError(t, e.op("PATCH", "/v1/projects/shop", map[string]any{"name": name}), http.StatusBadRequest,
			"name must not contain control characters")
		requireError(t, e.op("POST", "/v1/projects", map[string]any{"slug": "new", "name": name}), http.StatusBadRequest,
			"Invalid request body")
		requireError(t, e.op("PUT", "/v1/projects/shop/wallet", map[string]any{"name": name, "xpubs": map[string]any{"evm": testXPubEVM}}),
			http.StatusBadRequest, "name must not contain control characters")
	}
	assert.Equal(t, before, e.snapshot(), "nothing changed")
	r := e.op("PATCH", "/v1/projects/shop", map[string]any{"name": "Café «Shop» 🛒"})
	assert.Equal(t, http.StatusOK, r.Code, r.Raw)
}
