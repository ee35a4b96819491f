package api_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/api"
)

// payStatusFields are the only fields GET {pay_url}/api/pay/{id} may carry.
var payStatusFields = []string{
	"status", "amount", "address", "network", "network_name", "token", "qr_code", "expires_at", "notice",
	"available_networks", "paid_amount", "missing_amount", "confirmations", "required_confirmations",
	"wallet_uri", "wallet_qr_code", "memo",
}

func requireHTML(t *testing.T, r response, code int) {
	t.Helper()
	require.Equal(t, code, r.Code, r.Raw)
	require.Equal(t, "text/html; charset=UTF-8", r.Header.Get("Content-Type"), r.Raw)
}

func TestPaymentPageShowsThePayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 25, "external_ref": "u", "network": "ARBITRUM", "token": "USDC", "expires_in": 900})

	r := e.payGet("/" + id)
	requireHTML(t, r, http.StatusOK)
	page := r.Raw
	assert.Contains(t, page, `data-status="pending"`)
	assert.Contains(t, page, `data-state="pending"`)
	assert.Contains(t, page, ">25.00</span> <span data-f=\"token\">USDC<")
	assert.Contains(t, page, "Arbitrum One")
	assert.Contains(t, page, testEVMIndex1, "the deposit address")
	assert.Contains(t, page, `src="data:image/png;base64,`, "the QR code, as a data URI")
	assert.Contains(t, page, `id="copy"`)
	assert.Regexp(t, `id="countdown">1[45]:[0-5][0-9]<`, page, "the countdown, rendered on the server")
	assert.Contains(t, page, `<noscript>`)
	assert.NotContains(t, page, `id="choose-form"`, "no network choice once a network is set")
	// Who is paid, and the reference to keep. An API payment has no item:
	// its request describes none.
	assert.Contains(t, page, `<title>Payment to Shop shop: 25.00 USDC</title>`)
	assert.Contains(t, page, `<p class="label">Payment to</p>
<h1 class="shop" id="shop">Shop shop</h1>
<p class="label amount-label">Amount</p>`)
	assert.Contains(t, page, `<p class="ref" id="reference">Payment reference <code id="reference-id" class="ref-id">`+id+`</code>`)

	s := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	assert.Equal(t, "pending", s.str("status"))
	assert.Equal(t, "25.00", s.str("amount"))
	assert.Equal(t, testEVMIndex1, s.str("address"))
	assert.Equal(t, "ARBITRUM", s.str("network"))
	assert.Equal(t, "USDC", s.str("token"))
	assert.Equal(t, "Arbitrum One", s.str("network_name"))
	assert.Equal(t, "0.00", s.str("paid_amount"))
	qr, err := paywatch.QRCodeDataURI(testEVMIndex1)
	require.NoError(t, err)
	assert.Equal(t, qr, s.str("qr_code"), "the QR code encodes the address only")
	assert.NotContains(t, s.Body, "available_networks")
	assert.Equal(t, "no-store", s.Header.Get("Cache-Control"))

	// The same expires_at as the API.
	g := e.call(key, "GET", "/v1/payments/"+id, nil)
	assert.Equal(t, g.str("payment.expires_at"), s.str("expires_at"))
}

func TestPaymentPageMicroAmountNotice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "pool", "pool_matching": "micro_amount"}, staticWallet("TRC20", tronAddrs[0]))
	id := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	s := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code)
	amount := s.str("amount")
	assert.Regexp(t, `^10\.\d{2,3}$`, amount)
	assert.Contains(t, s.str("notice"), "Send exactly "+amount+" USDT")
	page := e.payGet("/" + id).Raw
	assert.Contains(t, page, `<div id="notice" class="notice" role="note"><span data-f="notice">Send exactly `+amount+" USDT")
}

func TestPaymentPageNetworkChoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20, paywatch.ARBITRUM}})
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 20, "external_ref": "u"})

	s := e.payGet("/api/pay/" + id)
	require.Equal(t, http.StatusOK, s.Code, s.Raw)
	assert.Nil(t, s.Body["address"])
	assert.Nil(t, s.Body["network"])
	assert.Nil(t, s.Body["token"])
	assert.Nil(t, s.Body["qr_code"])
	nets := s.Body["available_networks"].([]any)
	require.Len(t, nets, 2)
	assert.Equal(t, map[string]any{"network": "TRC20", "name": "Tron (TRC20)", "tokens": []any{"USDT"}, "confirmations": jsonNumber("19")}, nets[0])
	assert.Equal(t, map[string]any{"network": "ARBITRUM", "name": "Arbitrum One", "tokens": []any{"USDT", "USDC", "DAI", "PYUSD"}, "confirmations": jsonNumber("40")}, nets[1])

	page := e.payGet("/" + id).Raw
	assert.Contains(t, page, `data-state="choose"`)
	assert.Contains(t, page, `<form method="post" action="/`+id+`/select-network" id="choose-form"`)
	for _, pair := range []string{"TRC20:USDT", "ARBITRUM:USDT", "ARBITRUM:USDC", "ARBITRUM:DAI", "ARBITRUM:PYUSD"} {
		assert.Contains(t, page, `name="pair" value="`+pair+`"`)
	}
	assert.NotContains(t, page, "TRC20:USDC")
	assert.Contains(t, page, "USDT / USDC / DAI / PYUSD")
}

func TestPaymentPageNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	for _, path := range []string{"/not-a-payment", "/00000000-0000-0000-0000-000000000000", "/", "/a/b/c", "/l/", "/00000000-0000-0000-0000-000000000000/x"} {
		r := e.payGet(path)
		requireHTML(t, r, http.StatusNotFound)
		assert.Contains(t, r.Raw, "<h1>Not found</h1>", path)
		assert.Equal(t, api.ContentSecurityPolicy, r.Header.Get("Content-Security-Policy"), path)
	}
	for _, path := range []string{"/api/pay/not-a-payment", "/api/pay/00000000-0000-0000-0000-000000000000"} {
		requireError(t, e.payGet(path), http.StatusNotFound, "Payment not found")
	}
	requireError(t, e.payGet("/api/nope"), http.StatusNotFound, "Not found")
	requireError(t, e.payCall(request{method: "DELETE", path: "/api/pay/00000000-0000-0000-0000-000000000000"}), http.StatusNotFound, "Not found")
	r := e.payCall(request{method: "POST", path: "/00000000-0000-0000-0000-000000000000/select-network", body: url.Values{"pair": {"TRC20:USDT"}}})
	requireHTML(t, r, http.StatusNotFound)
}

// inlineCode finds what a strict CSP would block: inline scripts, inline
// styles and event-handler attributes.
var (
	scriptTag    = regexp.MustCompile(`<script[^>]*>`)
	styleAttr    = regexp.MustCompile(`(?i)\sstyle\s*=`)
	handlerAttr  = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	externalRefs = regexp.MustCompile(`(?i)(src|href|action)\s*=\s*"(https?:)?//`)
)

func TestPayPagesCSPAndEmbeddedAssets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	withNet := e.createPayment(key, map[string]any{"amount": 5, "external_ref": "u", "network": "TRC20"})
	without := e.createPayment(key, map[string]any{"amount": 5, "external_ref": "u"})
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/projects/shop/payment-links", map[string]any{"slug": "tip", "title": "Tip jar", "amount": nil}).Code)

	for _, path := range []string{"/" + withNet, "/" + without, "/l/tip", "/nope", "/api/pay/" + withNet} {
		r := e.payCall(request{method: "GET", path: path, ip: nextIP()})
		h := r.Header
		assert.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
			h.Get("Content-Security-Policy"), path)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"), path)
		if strings.HasPrefix(path, "/api/") {
			continue
		}
		for _, tag := range scriptTag.FindAllString(r.Raw, -1) {
			assert.Contains(t, tag, ` src="/assets/`, "only script files from the pay listener: %s", path)
		}
		assert.NotContains(t, r.Raw, "<style", path)
		assert.False(t, styleAttr.MatchString(r.Raw), "inline style in %s", path)
		assert.False(t, handlerAttr.MatchString(r.Raw), "inline handler in %s", path)
		assert.False(t, externalRefs.MatchString(r.Raw), "external resource in %s", path)
		assert.Contains(t, r.Raw, `<meta name="viewport" content="width=device-width, initial-scale=1">`)
	}

	page := e.payGet("/" + withNet).Raw
	for _, m := range regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(page, -1) {
		ref := strings.ReplaceAll(m[1], "&amp;", "&")
		r := e.payGet(ref)
		require.Equal(t, http.StatusOK, r.Code, ref)
		assert.Contains(t, r.Header.Get("Cache-Control"), "immutable", ref)
		switch {
		case strings.HasPrefix(ref, "/assets/pay.js"):
			assert.Equal(t, "text/javascript; charset=utf-8", r.Header.Get("Content-Type"))
			assert.Contains(t, r.Raw, "/api/pay/")
		case strings.HasPrefix(ref, "/assets/pay.css"):
			assert.Equal(t, "text/css; charset=utf-8", r.Header.Get("Content-Type"))
		default:
			t.Errorf("unexpected asset %s", ref)
		}
		assert.False(t, regexp.MustCompile(`(?i)https?://|@import|url\(`).MatchString(r.Raw), "no external resource in %s", ref)
	}
	assert.Equal(t, "public, max-age=300", e.payGet("/assets/pay.js").Header.Get("Cache-Control"), "unversioned: short cache")
	assert.Equal(t, http.StatusNotFound, e.payGet("/assets/nope.js").Code)
}

func TestPayPagesHostRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 5, "external_ref": "u", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/projects/shop/payment-links", map[string]any{"slug": "tip", "title": "Tip jar", "amount": 5}).Code)

	paths := []string{"/" + id, "/api/pay/" + id, "/l/tip", "/assets/pay.js"}
	for _, path := range paths {
		assert.Equal(t, http.StatusOK, e.payGet(path).Code, path)
		// The pay listener answers its own host only.
		for _, host := range []string{apiHost, "evil.example", "pay.paywatch.test.evil.example", payHost + ":8443"} {
			r := e.payCall(request{method: "GET", path: path, host: host})
			requireError(t, r, http.StatusNotFound, "Not found")
		}
		// And the API listener does not serve the pages at all.
		requireError(t, e.do(request{method: "GET", path: path}), http.StatusNotFound, "Not found")
		requireError(t, e.do(request{method: "GET", path: path, host: payHost}), http.StatusNotFound, "Not found")
	}
	r := e.payCall(request{method: "POST", path: "/api/pay/" + id + "/select-network", host: apiHost, body: map[string]any{"network": "TRC20", "token": "USDT"}})
	requireError(t, r, http.StatusNotFound, "Not found")
	r = e.payCall(request{method: "POST", path: "/l/tip", host: "evil.example", body: url.Values{"email": {"a@b.example"}}})
	requireError(t, r, http.StatusNotFound, "Not found")
	// /health answers any host.
	assert.Equal(t, http.StatusOK, e.payCall(request{method: "GET", path: "/health", host: "10.0.0.5:8081"}).Code)
}

// secrets are merchant data that must never reach the hosted pages.
type secrets struct {
	webhookURL, metadataValue, externalRef, orderID, apiKey, webhookSecret string
}

func TestPayPagesDoNotLeakMerchantData(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	s := secrets{
		webhookURL:    "http://127.0.0.1:9/hooks/wh-path-7f3a",
		metadataValue: "meta-value-91c2",
		externalRef:   "customer-ref-5d8e",
		orderID:       "order-id-2b6f",
	}
	// The project's name is its display name: the pages name the shop
	// being paid with it.
	const projectName = "Coffee Club Roasters"
	r := e.op("POST", "/v1/accounts", map[string]any{"email": "owner@example.com", "plan": "pro"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	r = e.op("POST", "/v1/projects", map[string]any{"name": projectName, "slug": "shop", "owner_email": "owner@example.com", "webhook_url": s.webhookURL})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	s.apiKey, s.webhookSecret = r.str("api_key"), r.str("webhook_secret")
	require.Equal(t, s.webhookURL, r.str("project.webhook_url"), "the project really has a webhook URL")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/shop/wallet", hdWallet()).Code)

	create := func(body map[string]any) string {
		body["external_ref"] = s.externalRef
		body["external_order_id"] = s.orderID + "-" + strings.ToLower(time.Now().Format("150405.000000"))
		body["metadata"] = map[string]any{"note": s.metadataValue, "nested": map[string]any{"k": s.metadataValue}}
		return e.createPayment(s.apiKey, body)
	}
	withNet := create(map[string]any{"amount": 12, "network": "ARBITRUM"})
	without := create(map[string]any{"amount": 13})
	other := create(map[string]any{"amount": 14, "network": "POLYGON"})
	otherAddr := e.payGet("/api/pay/" + other).str("address")
	require.NotEmpty(t, otherAddr)

	check := func(what, body string) {
		t.Helper()
		for _, secret := range []string{s.webhookURL, "wh-path-7f3a", s.metadataValue, s.externalRef, s.orderID, s.apiKey, s.webhookSecret, "metadata", "external_ref", "webhook"} {
			assert.NotContains(t, body, secret, what)
		}
		assert.NotContains(t, body, other, "%s names another payment", what)
		assert.NotContains(t, body, otherAddr, "%s shows another payment's address", what)
	}
	for _, id := range []string{withNet, without} {
		page := e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()})
		requireHTML(t, page, http.StatusOK)
		check("page of "+id, page.Raw)
		assert.Contains(t, page.Raw, `<h1 class="shop" id="shop">`+projectName+`</h1>`)
		js := e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
		require.Equal(t, http.StatusOK, js.Code)
		check("status of "+id, js.Raw)
		for k := range js.Body {
			assert.Contains(t, payStatusFields, k, "unexpected field in the hosted status")
		}
	}
	sel := e.selectNetwork(without, nextIP(), map[string]any{"network": "TRC20", "token": "USDT"})
	require.Equal(t, http.StatusOK, sel.Code, sel.Raw)
	check("select-network", sel.Raw)
	keys := make([]string, 0, len(sel.Body))
	for k := range sel.Body {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	assert.Equal(t, []string{"address", "amount", "network", "qr_code", "success", "token"}, keys)
	check("page after selection", e.payCall(request{method: "GET", path: "/" + without, ip: nextIP()}).Raw)

	// A failed form post shows the page with the message, and still nothing more.
	r = e.payCall(request{method: "POST", path: "/" + without + "/select-network", body: url.Values{"pair": {"ARBITRUM:USDT"}}, ip: nextIP()})
	requireHTML(t, r, http.StatusConflict)
	assert.Contains(t, r.Raw, "Network already selected for this payment")
	check("refused form post", r.Raw)
}

func TestPayStatusFollowsThePayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	chain := e.chain.chain(paywatch.ARBITRUM)
	id := e.createPayment(key, map[string]any{"amount": 50, "external_ref": "u", "network": "ARBITRUM"})

	// Detected 39 blocks deep (head 100): confirming, 39 of 40.
	e.sendTransfer(id, paywatch.ARBITRUM, paywatch.USDT, txHash(1), "20", 62)
	s := e.waitPayStatus(id, paywatch.StatusConfirming, 10*time.Second)
	// The depth shown is the scanner's head (its cursor), which the scanner
	// that sendTransfer starts writes a moment after the status changes.
	require.Eventually(t, func() bool {
		s = e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
		return s.Body["confirmations"] == jsonNumber("39")
	}, 10*time.Second, 50*time.Millisecond, "39 confirmations shown")
	assert.Equal(t, jsonNumber("40"), s.Body["required_confirmations"])
	page := e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()}).Raw
	assert.Contains(t, page, `data-state="confirming"`)
	assert.Contains(t, page, `<span data-f="confirmations">39</span> of <span data-f="required_confirmations">40</span>`)
	// A transfer is on its way: no wallet request to send another.
	assert.NotContains(t, s.Body, "wallet_uri")
	assert.Contains(t, page, `<div id="wallet" class="wallet" hidden>`)

	// Confirmed, 20 of 50: partial, 30 missing.
	chain.setHead(200)
	s = e.waitPayStatus(id, paywatch.StatusPartial, 30*time.Second)
	assert.Equal(t, "20.00", s.str("paid_amount"))
	assert.Equal(t, "30.00", s.str("missing_amount"))
	assert.NotContains(t, s.Body, "confirmations")
	page = e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()}).Raw
	assert.Contains(t, page, `Still missing: <strong><span data-f="missing_amount">30.00</span>`)
	// The wallet request asks for the rest only.
	assert.Equal(t, []string{"30000000"}, parseEIP681(t, e.walletLinkOf(id)).params["uint256"])

	// The rest, 5 blocks deep: the status stays partial while it
	// confirms, and the page no longer asks for the rest.
	e.sendTransfer(id, paywatch.ARBITRUM, paywatch.USDT, txHash(2), "30", 195)
	require.Eventually(t, func() bool {
		s = e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
		return s.Body["confirmations"] != nil
	}, 10*time.Second, 50*time.Millisecond, "the follow-up transfer shows as confirming")
	assert.Equal(t, "partial", s.str("status"))
	e.noWalletLink(id, "the rest is on its way")
	assert.Contains(t, e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()}).Raw, `data-state="confirming"`)

	// Confirmed: paid.
	chain.setHead(300)
	s = e.waitPayStatus(id, paywatch.StatusPaid, 30*time.Second)
	assert.Equal(t, "50.00", s.str("paid_amount"))
	page = e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()}).Raw
	assert.Contains(t, page, `data-state="paid"`)
	assert.Regexp(t, `<section id="pay" data-qr="address" hidden>`, page, "no address to pay to any more")
	assert.Contains(t, page, `<h1 class="shop" id="shop">Shop shop</h1>`, "the paid page names the shop")
	assert.Contains(t, page, `<code id="reference-id" class="ref-id">`+id+`</code>`, "and gives the reference to keep")
	assert.Regexp(t, `id="countdown-box" class="countdown" hidden`, page)

	// Overpaid.
	over := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "ARBITRUM"})
	e.sendTransfer(over, paywatch.ARBITRUM, paywatch.USDT, txHash(3), "12", 100)
	s = e.waitPayStatus(over, paywatch.StatusOverpaid, 30*time.Second)
	assert.Equal(t, "12.00", s.str("paid_amount"))

	// Cancelled.
	cancelled := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "ARBITRUM"})
	require.Equal(t, http.StatusOK, e.call(key, "PATCH", "/v1/payments/"+cancelled, map[string]any{"status": "cancelled"}).Code)
	s = e.waitPayStatus(cancelled, paywatch.StatusCancelled, 10*time.Second)
	page = e.payCall(request{method: "GET", path: "/" + cancelled, ip: nextIP()}).Raw
	assert.Contains(t, page, `data-state="cancelled"`)
	assert.Contains(t, page, "Payment cancelled")
}

func TestPayStatusShowsExpiredThreeMinutesAfterExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20", "expires_in": 300})
	open := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "expires_in": 300})

	e.clock.Add(5*time.Minute + time.Second)
	s := e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
	assert.Equal(t, "pending", s.str("status"), "still pending right after expires_at")
	page := e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()}).Raw
	assert.Contains(t, page, `data-state="pending-late"`, "time is up, but a transfer in flight still counts")
	assert.Contains(t, page, "Time is up")

	e.clock.Add(3 * time.Minute)
	s = e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
	assert.Equal(t, "expired", s.str("status"), "shown expired 3 minutes after expires_at, like the API")
	assert.Equal(t, "expired", e.call(key, "GET", "/v1/payments/"+id, nil).str("payment.status"))
	page = e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()}).Raw
	assert.Contains(t, page, `data-state="expired"`)
	assert.Contains(t, page, "Payment expired")
	assert.Regexp(t, `<section id="pay" data-qr="address" hidden>`, page)

	// A network-less payment past its window offers no choice any more.
	page = e.payCall(request{method: "GET", path: "/" + open, ip: nextIP()}).Raw
	assert.Contains(t, page, `data-state="expired"`)
	assert.Regexp(t, `<section id="choose" hidden>`, page)
}

func TestPayPagesRateLimitPerIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	e.startOfMinute()
	const ip = "203.0.113.9"
	for range api.UnauthenticatedLimit {
		require.Equal(t, http.StatusOK, e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: ip}).Code)
	}
	r := e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: ip})
	requireError(t, r, http.StatusTooManyRequests, "Too many requests")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	// The HTML page has its own counter and answers a 429 page in HTML.
	for range api.UnauthenticatedLimit {
		require.Equal(t, http.StatusOK, e.payCall(request{method: "GET", path: "/" + id, ip: ip}).Code)
	}
	r = e.payCall(request{method: "GET", path: "/" + id, ip: ip})
	requireHTML(t, r, http.StatusTooManyRequests)
	assert.Contains(t, r.Raw, "Too many requests")
	e.clock.Add(time.Minute)
	assert.Equal(t, http.StatusOK, e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: ip}).Code)
}
