package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// createLink calls the operator endpoint and returns the answer.
func (e *env) createLink(project string, body map[string]any) response {
	e.t.Helper()
	return e.op("POST", "/v1/projects/"+project+"/payment-links", body)
}

// submitLink posts the buyer form of a link.
func (e *env) submitLink(slug string, form url.Values) response {
	e.t.Helper()
	return e.payCall(request{method: "POST", path: "/l/" + slug, body: form, ip: nextIP()})
}

// paymentIDOf reads the payment id from a link form's redirect.
func paymentIDOf(t *testing.T, r response) string {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, r.Code, r.Raw)
	loc := r.Header.Get("Location")
	require.Regexp(t, `^/[0-9a-f-]{36}$`, loc)
	return strings.TrimPrefix(loc, "/")
}

func TestPaymentLinkCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "pro", map[string]any{"minAmount": 1}, hdWallet())

	r := e.createLink("shop", map[string]any{"slug": "hoodie", "title": "Paywatch hoodie", "amount": 25.5, "token": "USDT", "network": nil})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["success"])
	assert.Regexp(t, uuidRE, r.str("payment_link.id"))
	assert.Equal(t, "hoodie", r.str("payment_link.slug"))
	assert.Equal(t, payURL+"/l/hoodie", r.str("payment_link.url"))

	for _, body := range []map[string]any{
		{"slug": "tip", "title": "Tip jar", "amount": nil},
		{"slug": "usdc-erc20", "title": "Fixed network", "amount": 10, "token": "USDC", "network": "ERC20"},
		{"slug": "tron", "title": "Tron only", "amount": 10.123456, "network": "TRC20"},
	} {
		r := e.createLink("shop", body)
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	}
	r = e.do(request{method: "POST", path: "/api/v1/projects/shop/payment-links", masterKey: testMasterKey, body: map[string]any{"slug": "alias", "title": "Via /api/v1"}})
	assert.Equal(t, http.StatusCreated, r.Code, r.Raw)

	for _, c := range []struct {
		body map[string]any
		code int
		msg  string
	}{
		{map[string]any{"slug": "hoodie", "title": "Again"}, http.StatusConflict, "A payment link with this slug already exists"},
		{map[string]any{"title": "No slug"}, http.StatusBadRequest, "slug is required"},
		{map[string]any{"slug": "Bad Slug", "title": "x"}, http.StatusBadRequest, "slug must be lowercase letters, digits and hyphens (for example my-shop), at most 63 characters"},
		{map[string]any{"slug": "no-title"}, http.StatusBadRequest, "title is required (at most 200 characters)"},
		{map[string]any{"slug": "long-title", "title": strings.Repeat("x", 201)}, http.StatusBadRequest, "title is required (at most 200 characters)"},
		{map[string]any{"slug": "str-amount", "title": "x", "amount": "10"}, http.StatusBadRequest, "Invalid request body"},
		{map[string]any{"slug": "zero", "title": "x", "amount": 0}, http.StatusBadRequest, "amount must be positive"},
		{map[string]any{"slug": "digits", "title": "x", "amount": 1.1234567}, http.StatusBadRequest, "amount has more than 6 decimal places"},
		{map[string]any{"slug": "minimum", "title": "x", "amount": 0.5}, http.StatusBadRequest, "Amount must be at least $1.00 (project minimum)"},
		{map[string]any{"slug": "pair", "title": "x", "token": "USDC", "network": "TRC20"}, http.StatusBadRequest, "USDC is not supported on TRC20"},
		{map[string]any{"slug": "net", "title": "x", "network": "trc20"}, http.StatusBadRequest, `unknown network "trc20": network names are uppercase, e.g. TRC20`},
	} {
		requireError(t, e.createLink("shop", c.body), c.code, c.msg)
	}
	requireError(t, e.createLink("nope", map[string]any{"slug": "x", "title": "x"}), http.StatusNotFound, "Project not found")
	requireError(t, e.do(request{method: "POST", path: "/v1/projects/shop/payment-links", body: map[string]any{"slug": "x", "title": "x"}}),
		http.StatusUnauthorized, "Invalid master key")

	// Slugs are one URL space across projects.
	e.merchant("other", "pro", nil, otherHDWallet())
	requireError(t, e.createLink("other", map[string]any{"slug": "hoodie", "title": "Mine"}), http.StatusConflict, "A payment link with this slug already exists")
}

func TestPaymentLinkPlanLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "free", nil, hdWallet())
	for i := range 3 {
		r := e.createLink("shop", map[string]any{"slug": "l" + strconv.Itoa(i), "title": "Link"})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	}
	requireError(t, e.createLink("shop", map[string]any{"slug": "l3", "title": "Link"}),
		http.StatusForbidden, "Plan limit exceeded: the owner's plan allows 3 payment links")

	// The counter is the owner's, across projects.
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"projects": 2}}).Code)
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/projects", map[string]any{"slug": "shop2", "owner_email": "shop@example.com"}).Code)
	requireError(t, e.createLink("shop2", map[string]any{"slug": "l3", "title": "Link"}),
		http.StatusForbidden, "Plan limit exceeded: the owner's plan allows 3 payment links")

	// An admin override lifts it.
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"payment_links": 4}}).Code)
	require.Equal(t, http.StatusCreated, e.createLink("shop2", map[string]any{"slug": "l3", "title": "Link"}).Code)
	requireError(t, e.createLink("shop", map[string]any{"slug": "l4", "title": "Link"}),
		http.StatusForbidden, "Plan limit exceeded: the owner's plan allows 4 payment links")
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"payment_links": -1}}).Code)
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "l4", "title": "Link"}).Code)

	// Concurrent creations cannot overshoot the limit: a pro owner has 25.
	e.merchant("busy", "pro", nil, otherHDWallet())
	for i := range 23 {
		require.Equal(t, http.StatusCreated, e.createLink("busy", map[string]any{"slug": "b" + strconv.Itoa(i), "title": "Link"}).Code)
	}
	var mu sync.Mutex
	codes := map[int]int{}
	parallel(5, func(i int) {
		r := e.createLink("busy", map[string]any{"slug": "race" + strconv.Itoa(i), "title": "Link"})
		mu.Lock()
		codes[r.Code]++
		mu.Unlock()
	})
	assert.Equal(t, map[int]int{http.StatusCreated: 2, http.StatusForbidden: 3}, codes)

	// A project without an owner has no plan to count against.
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/projects", map[string]any{"slug": "orphan"}).Code)
	requireError(t, e.createLink("orphan", map[string]any{"slug": "o", "title": "Link"}),
		http.StatusForbidden, "The project has no owner: payment links count against the owner's plan, so set owner_email first")
}

// webhookSink records the webhooks it receives.
type webhookSink struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []map[string]any
	errs []string
}

func newWebhookSink(t *testing.T) *webhookSink {
	s := &webhookSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := json.Unmarshal(raw, &m); err != nil {
			s.errs = append(s.errs, err.Error())
		}
		if r.Header.Get("X-Service-Signature") == "" {
			s.errs = append(s.errs, "unsigned")
		}
		s.got = append(s.got, m)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *webhookSink) event(name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.got {
		if m["event"] == name {
			return m
		}
	}
	return nil
}

func TestPaymentLinkFixedAmountFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{allowPrivate: true})
	sink := newWebhookSink(t)
	key := e.merchant("shop", "pro", map[string]any{"webhook_url": sink.srv.URL + "/hook"}, hdWallet())
	r := e.createLink("shop", map[string]any{"slug": "hoodie", "title": "Paywatch hoodie <size M>", "amount": 25, "token": "USDT"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	linkID := r.str("payment_link.id")

	page := e.payGet("/l/hoodie")
	requireHTML(t, page, http.StatusOK)
	// The buyer pays the shop (the project's display name) for the item
	// (the link's title).
	assert.Contains(t, page.Raw, `<title>Pay Shop shop: Paywatch hoodie &lt;size M&gt;</title>`)
	assert.Contains(t, page.Raw, `<h1 class="shop" id="shop">Pay Shop shop</h1>`)
	assert.Contains(t, page.Raw, `<p class="item" id="item">Paywatch hoodie &lt;size M&gt;</p>`)
	assert.Contains(t, page.Raw, `<span id="link-amount">25.00</span> USDT`)
	assert.Contains(t, page.Raw, `<form method="post" action="/l/hoodie" id="link-form"`)
	assert.NotContains(t, page.Raw, `name="amount"`, "the amount is fixed")
	for _, f := range []string{`name="email"`, `name="name"`, `name="note"`} {
		assert.Contains(t, page.Raw, f)
	}

	id := paymentIDOf(t, e.submitLink("hoodie", url.Values{"email": {" Buyer@Example.com "}, "name": {"Ana Lima"}, "note": {"Blue, please.\nThanks"}}))
	pay := e.payGet("/" + id)
	requireHTML(t, pay, http.StatusOK)
	assert.Contains(t, pay.Raw, `data-state="choose"`, "the network is chosen on the payment page")
	assert.Contains(t, pay.Raw, `>25.00</span>`)
	assert.NotContains(t, pay.Raw, "TRC20:USDC")
	assert.Contains(t, pay.Raw, `value="ARBITRUM:USDT"`)
	assert.NotContains(t, pay.Raw, `value="ARBITRUM:USDC"`, "the link is for USDT")
	assert.True(t, workflowRunning(t, id))
	// The payment page names the shop and the item too, and gives the
	// payment id as the reference to keep, not the link's external_ref.
	assert.Contains(t, pay.Raw, `<h1 class="shop" id="shop">Shop shop</h1>`)
	assert.Contains(t, pay.Raw, `<p class="item" id="item">Paywatch hoodie &lt;size M&gt;</p>`)
	assert.Contains(t, pay.Raw, `<code id="reference-id" class="ref-id">`+id+`</code>`)
	assert.NotContains(t, pay.Raw, "link:hoodie")

	var ref, email, name, note, link string
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `
		SELECT external_ref, buyer_email, buyer_name, buyer_note, payment_link_id::text FROM payments WHERE id = $1`, id).
		Scan(&ref, &email, &name, &note, &link))
	assert.Equal(t, "link:hoodie:buyer@example.com", ref)
	assert.Equal(t, "buyer@example.com", email)
	assert.Equal(t, "Ana Lima", name)
	assert.Equal(t, "Blue, please.\nThanks", note)
	assert.Equal(t, linkID, link)
	g := e.call(key, "GET", "/v1/payments/"+id, nil)
	assert.Equal(t, "25.00", g.str("payment.amount"))
	assert.Equal(t, "link:hoodie:buyer@example.com", g.str("payment.external_ref"))

	// Paid: the webhook carries the link and the buyer.
	sel := e.selectNetwork(id, nextIP(), map[string]any{"network": "ARBITRUM", "token": "USDT"})
	require.Equal(t, http.StatusOK, sel.Code, sel.Raw)
	e.sendTransfer(id, paywatch.ARBITRUM, paywatch.USDT, txHash(7), "25", 10)
	e.waitPayStatus(id, paywatch.StatusPaid, 30*time.Second)
	pay = e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()})
	assert.Contains(t, pay.Raw, `data-state="paid"`)
	for _, want := range []string{`<h1 class="shop" id="shop">Shop shop</h1>`, `<p class="item" id="item">Paywatch hoodie &lt;size M&gt;</p>`,
		`<code id="reference-id" class="ref-id">` + id + `</code>`, "Quote it if you contact Shop shop about this payment."} {
		assert.Contains(t, pay.Raw, want, "the paid page")
	}
	var hook map[string]any
	require.Eventually(t, func() bool { hook = sink.event("payment.completed"); return hook != nil }, 20*time.Second, 100*time.Millisecond)
	assert.Equal(t, id, hook["payment_id"])
	assert.Equal(t, "buyer@example.com", hook["buyer_email"])
	assert.Equal(t, "Ana Lima", hook["buyer_name"])
	assert.Equal(t, "Blue, please.\nThanks", hook["buyer_note"])
	assert.Equal(t, linkID, hook["payment_link_id"])
	assert.Equal(t, "hoodie", hook["payment_link_slug"])
	assert.Empty(t, sink.errs)

	// A payment made through the API carries no link fields.
	plain := e.createPayment(key, map[string]any{"amount": 5, "external_ref": "u", "network": "ARBITRUM"})
	e.sendTransfer(plain, paywatch.ARBITRUM, paywatch.USDT, txHash(8), "5", 10)
	e.waitPayStatus(plain, paywatch.StatusPaid, 30*time.Second)
	require.Eventually(t, func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.got) >= 2
	}, 20*time.Second, 100*time.Millisecond)
	sink.mu.Lock()
	for _, m := range sink.got {
		if m["payment_id"] == plain {
			assert.NotContains(t, m, "payment_link_id")
			assert.NotContains(t, m, "buyer_email")
		}
	}
	sink.mu.Unlock()
}

func TestPaymentLinkBuyerAmountAndValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "tip", "title": "Tip jar", "amount": nil, "network": "TRC20"}).Code)

	page := e.payGet("/l/tip")
	requireHTML(t, page, http.StatusOK)
	assert.Contains(t, page.Raw, `<input id="amount" name="amount" type="text" inputmode="decimal"`)
	assert.Contains(t, page.Raw, "Amount (USDT)")
	assert.Contains(t, page.Raw, "on Tron (TRC20)")

	for _, c := range []struct {
		form  url.Values
		field string
		msg   string
	}{
		{url.Values{"amount": {""}}, "amount", "Enter an amount such as 25 or 25.50"},
		{url.Values{"amount": {"ten"}}, "amount", "Enter an amount such as 25 or 25.50"},
		{url.Values{"amount": {"-5"}}, "amount", "Enter an amount such as 25 or 25.50"},
		{url.Values{"amount": {"1e3"}}, "amount", "Enter an amount such as 25 or 25.50"},
		{url.Values{"amount": {"12,50"}}, "amount", "Enter an amount such as 25 or 25.50"},
		{url.Values{"amount": {"0.000"}}, "amount", "Enter an amount greater than zero"},
		{url.Values{"amount": {"1.1234567"}}, "amount", "Enter an amount with at most 6 decimal places"},
		{url.Values{"amount": {"0.05"}}, "amount", "The amount must be at least 0.10"},
		{url.Values{"amount": {"5"}, "email": {"not-an-email"}}, "email", "Enter a valid email address, or leave it empty"},
		{url.Values{"amount": {"5"}, "email": {"Ana <ana@example.com>"}}, "email", "Enter a valid email address, or leave it empty"},
		{url.Values{"amount": {"5"}, "name": {strings.Repeat("n", 101)}}, "name", "Enter a name of at most 100 characters, without special characters"},
		{url.Values{"amount": {"5"}, "name": {"Ana\x00"}}, "name", "Enter a name of at most 100 characters, without special characters"},
		{url.Values{"amount": {"5"}, "note": {strings.Repeat("n", 501)}}, "note", "Enter a note of at most 500 characters"},
	} {
		r := e.submitLink("tip", c.form)
		requireHTML(t, r, http.StatusBadRequest)
		assert.Contains(t, r.Raw, `<p class="field-error" id="`+c.field+`-error">`+c.msg+`</p>`, "%v", c.form)
		assert.Contains(t, r.Raw, `id="`+c.field+`" name="`+c.field+`"`)
	}

	// What the buyer typed comes back, escaped.
	r := e.submitLink("tip", url.Values{"amount": {"x"}, "email": {"a@example.com"}, "name": {`<script>alert("x")</script>`}, "note": {"</textarea><b>hi</b>"}})
	requireHTML(t, r, http.StatusBadRequest)
	assert.Contains(t, r.Raw, `value="a@example.com"`)
	assert.Contains(t, r.Raw, `value="&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"`)
	assert.Contains(t, r.Raw, `&lt;/textarea&gt;&lt;b&gt;hi&lt;/b&gt;</textarea>`)
	assert.NotContains(t, r.Raw, `<script>alert`)

	// A good amount, read exactly, on the link's fixed network: the page
	// shows the address at once.
	id := paymentIDOf(t, e.submitLink("tip", url.Values{"amount": {"12.345678"}}))
	s := e.payGet("/api/pay/" + id)
	assert.Equal(t, "12.345678", s.str("amount"))
	assert.Equal(t, "TRC20", s.str("network"))
	assert.Equal(t, testTronIndex1, s.str("address"))
	var ref string
	var email *string
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT external_ref, buyer_email FROM payments WHERE id = $1`, id).Scan(&ref, &email))
	assert.Regexp(t, `^link:tip:[a-z0-9]{16}$`, ref, "no email: a random reference")
	assert.Nil(t, email)
	assert.Contains(t, e.payGet("/"+id).Raw, `data-state="pending"`)
}

func TestPaymentLinkUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	for _, path := range []string{"/l/nope", "/l/Bad_Slug", "/l/" + strings.Repeat("a", 70)} {
		r := e.payGet(path)
		requireHTML(t, r, http.StatusNotFound)
		assert.Contains(t, r.Raw, "<h1>Not found</h1>")
	}
	requireHTML(t, e.submitLink("nope", url.Values{"amount": {"5"}}), http.StatusNotFound)

	// A merchant that cannot take payments: the page says so and has no form.
	e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "tip", "title": "Tip jar"}).Code)
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/shop", map[string]any{"active": false}).Code)
	r := e.payGet("/l/tip")
	requireHTML(t, r, http.StatusOK)
	assert.Contains(t, r.Raw, "This merchant is currently not accepting payments")
	assert.NotContains(t, r.Raw, "<form")
	r = e.submitLink("tip", url.Values{"amount": {"5"}})
	requireHTML(t, r, http.StatusBadRequest)
	assert.Contains(t, r.Raw, "This merchant is currently not accepting payments")

	// A refusal of the creation itself shows on the form.
	e.merchant("nowallet", "pro", nil, nil)
	require.Equal(t, http.StatusCreated, e.createLink("nowallet", map[string]any{"slug": "nw", "title": "No wallet", "amount": 5}).Code)
	r = e.submitLink("nw", url.Values{})
	requireHTML(t, r, http.StatusBadRequest)
	assert.Contains(t, r.Raw, `<p class="error" role="alert" id="form-error">Project has no wallet assigned</p>`)
}

func TestPaymentLinkTokenNarrowsTheChoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20, paywatch.ARBITRUM}})
	e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "usdc", "title": "USDC only", "amount": 5, "token": "USDC"}).Code)
	id := paymentIDOf(t, e.submitLink("usdc", url.Values{"email": {"b@example.com"}}))

	s := e.payGet("/api/pay/" + id)
	nets := s.Body["available_networks"].([]any)
	require.Len(t, nets, 1, "TRC20 has no USDC")
	assert.Equal(t, "ARBITRUM", nets[0].(map[string]any)["network"])
	assert.Equal(t, []any{"USDC"}, nets[0].(map[string]any)["tokens"])
	page := e.payGet("/" + id).Raw
	assert.Contains(t, page, `value="ARBITRUM:USDC"`)
	assert.NotContains(t, page, `value="ARBITRUM:USDT"`)

	requireError(t, e.selectNetwork(id, nextIP(), map[string]any{"network": "ARBITRUM", "token": "USDT"}),
		http.StatusBadRequest, "USDT on ARBITRUM is not available for this merchant")
	r := e.selectNetwork(id, nextIP(), map[string]any{"network": "ARBITRUM", "token": "USDC"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "USDC", r.str("token"))
}
