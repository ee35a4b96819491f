package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 11, input: no input answers 500, validation failures on the
// interface's endpoints name no field, and webhook URLs are judged by the
// address they mean.

// snapshot is what a refused request must leave as it was: every row the
// API can write, and the projects as the operator lists them.
func (e *env) snapshot() string {
	e.t.Helper()
	var counts string
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(), `
		SELECT concat_ws(' ', (SELECT count(*) FROM accounts), (SELECT count(*) FROM projects),
		                      (SELECT count(*) FROM wallets), (SELECT count(*) FROM payments),
		                      (SELECT count(*) FROM payment_links),
		                      (SELECT string_agg(email || plan || status || limits::text, ',' ORDER BY id) FROM accounts))`).Scan(&counts))
	r := e.op("GET", "/v1/projects", nil)
	require.Equal(e.t, http.StatusOK, r.Code, r.Raw)
	return counts + " " + r.Raw
}

func TestTextPostgresCannotStoreIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	e.merchant("other", "pro", nil, nil)
	require.Equal(t, http.StatusCreated, e.createLink("shop", map[string]any{"slug": "tip", "title": "Tip jar", "amount": nil, "network": "TRC20"}).Code)
	before := e.snapshot()

	const invalidBody = "Invalid request body"
	for _, c := range []struct {
		name, method, path, body string
		operator                 bool
		msg                      string
	}{
		// The interface's endpoints.
		{"NUL in external_ref", "POST", "/v1/payments", `{"amount": 10, "external_ref": "a\u0000b"}`, false, invalidBody},
		{"NUL in external_order_id", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "external_order_id": "o\u0000"}`, false, invalidBody},
		{"NUL in a metadata key", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k\u0000": "v"}}`, false, invalidBody},
		{"NUL in a metadata value", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": ["v\u0000"]}}`, false, invalidBody},
		{"invalid UTF-8 in a metadata value", "POST", "/v1/payments", "{\"amount\": 10, \"external_ref\": \"u\", \"metadata\": {\"k\": \"v\xff\"}}", false, invalidBody},
		{"invalid UTF-8 in a metadata key", "POST", "/v1/payments", "{\"amount\": 10, \"external_ref\": \"u\", \"metadata\": {\"\xc3\": 1}}", false, invalidBody},
		{"lone surrogate in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": "\ud800"}}`, false, invalidBody},
		{"reversed surrogates in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": "\ude00\ud83d"}}`, false, invalidBody},
		{"invalid UTF-8 in external_ref", "POST", "/v1/payments", "{\"amount\": 10, \"external_ref\": \"a\xffb\"}", false, invalidBody},
		{"NUL in a payment id", "GET", "/v1/payments/a%00b", "", false, invalidBody},
		{"NUL in a list filter", "GET", "/v1/payments?created_after=%00", "", false, "Invalid created_after"},
		{"NUL in a project name", "POST", "/v1/projects", `{"slug": "new", "name": "a\u0000"}`, true, invalidBody},
		{"NUL in owner_email", "POST", "/v1/projects", `{"slug": "new", "owner_email": "shop@example.com\u0000"}`, true, invalidBody},
		{"minAmount overflow at creation", "POST", "/v1/projects", `{"slug": "new", "minAmount": 1e30}`, true, invalidBody},
		// Operator endpoints.
		{"NUL in a project name", "PATCH", "/v1/projects/other", `{"name": "a\u0000"}`, true, invalidBody},
		{"invalid UTF-8 in a project name", "PATCH", "/v1/projects/other", "{\"name\": \"a\xff\"}", true, invalidBody},
		{"NUL in owner_email", "PATCH", "/v1/projects/other", `{"owner_email": "\u0000"}`, true, invalidBody},
		{"minAmount overflow", "PATCH", "/v1/projects/other", `{"minAmount": 1e30}`, true, "minAmount must be less than 10^22"},
		{"minAmount overflow as text", "PATCH", "/v1/projects/other", `{"minAmount": "10000000000000000000000"}`, true, "minAmount must be less than 10^22"},
		{"rotation_threshold overflow", "PATCH", "/v1/projects/other", `{"rotation_threshold": 1e30}`, true, "rotation_threshold must be less than 10^22"},
		{"NUL in a wallet name", "PUT", "/v1/projects/other/wallet", `{"name": "w\u0000"}`, true, invalidBody},
		{"NUL in an xPub family", "PUT", "/v1/projects/other/wallet", `{"xpubs": {"evm\u0000": null}}`, true, invalidBody},
		{"NUL in an account e-mail in the path", "PATCH", "/v1/accounts/shop%00@example.com", `{"plan": "free"}`, true, invalidBody},
		{"invalid UTF-8 in an account e-mail in the path", "PATCH", "/v1/accounts/shop%FF@example.com", `{"plan": "free"}`, true, invalidBody},
		{"NUL in an account e-mail", "POST", "/v1/accounts", `{"email": "new\u0000@example.com"}`, true, invalidBody},
		{"NUL in a project slug in the path", "PATCH", "/v1/projects/other%00", `{"name": "x"}`, true, invalidBody},
		{"invalid UTF-8 in a project slug in the path", "POST", "/v1/projects/other%C3/regenerate-keys", "", true, invalidBody},
		{"NUL in a slug of webhook-deliveries", "GET", "/v1/projects/a%00/webhook-deliveries", "", true, invalidBody},
		{"NUL in a link title", "POST", "/v1/projects/other/payment-links", `{"slug": "l1", "title": "t\u0000"}`, true, invalidBody},
	} {
		r := request{method: c.method, path: c.path, apiKey: key}
		if c.operator {
			r = request{method: c.method, path: c.path, masterKey: testMasterKey}
		}
		if c.body != "" {
			r.body = c.body
		}
		got := e.do(r)
		requireError(t, got, http.StatusBadRequest, c.msg)
		assert.Len(t, got.Body, 1, "%s: only the message", c.name)
	}

	// The hosted link form shows its own message for a note that is not
	// UTF-8, as for one with control characters.
	r := e.submitLink("tip", url.Values{"amount": {"5"}, "note": {"caf\xe9"}})
	requireHTML(t, r, http.StatusBadRequest)
	assert.Contains(t, r.Raw, `<p class="field-error" id="note-error">Enter a note of at most 500 characters</p>`)
	r = e.submitLink("tip", url.Values{"amount": {"5"}, "name": {"\xff"}})
	requireHTML(t, r, http.StatusBadRequest)
	assert.Contains(t, r.Raw, `<p class="field-error" id="name-error">Enter a name of at most 100 characters, without special characters</p>`)

	assert.Equal(t, before, e.snapshot(), "nothing changed")

	// What PostgreSQL can store still works: escaped control characters
	// other than NUL, characters outside the BMP as surrogate pairs, the
	// largest minimum.
	r = e.call(key, "POST", "/v1/payments", `{"amount": 10, "external_ref": "tab\tref", "metadata": {"k\u0001": "line\nbreak \ud83d\ude00 😀"}}`)
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	r = e.op("PATCH", "/v1/projects/other", map[string]any{"minAmount": "9999999999999999999999.999999999999999999"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "9999999999999999999999.999999999999999999", r.str("project.minAmount"))
}

// A JSON number out of range anywhere in a body (more than 1000 digits,
// or a magnitude below 10^-1000 or from 10^1001) is refused like bad text:
// PostgreSQL's numeric fails on 1e200000 and 1e-200000 (a 500 before), and
// would keep 1e131000 as 131,001 digits and print them back.
func TestOutOfRangeNumbersAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	e.merchant("other", "pro", nil, nil)
	before := e.snapshot()

	digits := strings.Repeat("7", 1000)
	for _, c := range []struct {
		name, method, path, body string
		operator                 bool
	}{
		{"overflow in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 1e200000}}`, false},
		{"underflow in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 1e-200000}}`, false},
		{"131,001 digits in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 1e131000}}`, false},
		{"just past the range", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 1e1001}}`, false},
		{"just past the range, normalised", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 10.5E+1000}}`, false},
		{"just below the range", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": -0.1e-1000}}`, false},
		{"a zero of 20,000 decimals", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 0e-20000}}`, false},
		{"1001 digits", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 1` + digits + `}}`, false},
		{"1001 digits with a fraction", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": 0.` + digits + `}}`, false},
		{"deep in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"k": [1, {"n": [1e99999]}]}}`, false},
		{"an amount", "POST", "/v1/payments", `{"amount": 1e200000, "external_ref": "u"}`, false},
		{"an unknown field", "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "extra": 1e-99999}`, false},
		{"a cancel", "PATCH", "/v1/payments/00000000-0000-0000-0000-000000000000", `{"status": "cancelled", "n": 1e200000}`, false},
		{"minAmount at creation", "POST", "/v1/projects", `{"slug": "new", "minAmount": 1e200000}`, true},
		{"minAmount", "PATCH", "/v1/projects/other", `{"minAmount": 1e200000}`, true},
		{"an account limit", "POST", "/v1/accounts", `{"email": "new@example.com", "limits": {"projects": 1e-200000}}`, true},
		{"a link amount", "POST", "/v1/projects/other/payment-links", `{"slug": "l1", "title": "t", "amount": 1e131000}`, true},
	} {
		r := request{method: c.method, path: c.path, apiKey: key, body: c.body}
		if c.operator {
			r = request{method: c.method, path: c.path, masterKey: testMasterKey, body: c.body}
		}
		got := e.do(r)
		require.Equal(t, http.StatusBadRequest, got.Code, "%s: %s", c.name, got.Raw)
		assert.JSONEq(t, `{"error": "Invalid request body"}`, got.Raw, c.name)
	}
	assert.Equal(t, before, e.snapshot(), "nothing changed")

	// The edges of the range are stored and read back as sent.
	r := e.call(key, "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "metadata": {"big": 9.5e1000, "small": -1e-1000, "zero": 0e-1000, "long": `+digits+`, "exact": 0.`+strings.Repeat("0", 998)+`1}}`)
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	got := e.call(key, "GET", "/v1/payments/"+r.str("payment.id"), nil)
	require.Equal(t, http.StatusOK, got.Code, got.Raw)
	assert.Equal(t, digits, fmt.Sprint(got.get("payment.metadata.long")))
	assert.Equal(t, "95"+strings.Repeat("0", 999), fmt.Sprint(got.get("payment.metadata.big")))
	assert.Less(t, len(got.Raw), 10_000, "the largest numbers print back in a few kilobytes")
}

func TestCreateProjectValidationFailuresNameNoField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "free", nil, nil) // its owner can own no second project
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/accounts", map[string]any{"email": "closed@example.com"}).Code)
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/closed@example.com", map[string]any{"status": "closed"}).Code)
	before := e.snapshot()

	for name, body := range map[string]any{
		"slug missing":                map[string]any{"name": "Shop"},
		"slug null":                   map[string]any{"slug": nil},
		"slug empty":                  map[string]any{"slug": ""},
		"slug with a space":           map[string]any{"slug": "my shop"},
		"slug with a dot":             map[string]any{"slug": "my.shop"},
		"slug with a slash":           map[string]any{"slug": "my/shop"},
		"slug not ASCII":              map[string]any{"slug": "café"},
		"slug upper case":             map[string]any{"slug": "Shop"},
		"slug with an underscore":     map[string]any{"slug": "my_shop"},
		"slug starting with a hyphen": map[string]any{"slug": "-shop"},
		"slug too long":               map[string]any{"slug": strings.Repeat("s", 64)},
		"slug a number":               map[string]any{"slug": 42},
		"name empty":                  map[string]any{"slug": "new", "name": " "},
		"name too long":               map[string]any{"slug": "new", "name": strings.Repeat("n", 256)},
		"webhook_url not a URL":       map[string]any{"slug": "new", "webhook_url": "not a url"},
		"webhook_url private":         map[string]any{"slug": "new", "webhook_url": "https://10.0.0.8/hook"},
		"webhook_url private in hex":  map[string]any{"slug": "new", "webhook_url": "https://0x0a000008/hook"},
		"owner_email unknown":         map[string]any{"slug": "new", "owner_email": "ghost@example.com"},
		"owner_email closed":          map[string]any{"slug": "new", "owner_email": "closed@example.com"},
		"address_mode unknown":        map[string]any{"slug": "new", "address_mode": "random"},
		"pool_matching unknown":       map[string]any{"slug": "new", "pool_matching": "exact"},
		"minAmount negative":          map[string]any{"slug": "new", "minAmount": -1},
		"minAmount not a number":      map[string]any{"slug": "new", "minAmount": "ten"},
		"rotation_threshold zero":     map[string]any{"slug": "new", "rotation_threshold": 0},
		"micro_amount_decimals 5":     map[string]any{"slug": "new", "micro_amount_decimals": 5},
		"payment_expiry_minutes 1":    map[string]any{"slug": "new", "payment_expiry_minutes": 1},
		"active not a boolean":        map[string]any{"slug": "new", "active": "yes"},
	} {
		r := e.op("POST", "/v1/projects", body)
		require.Equal(t, http.StatusBadRequest, r.Code, "%s: %s", name, r.Raw)
		assert.JSONEq(t, `{"error": "Invalid request body"}`, r.Raw, name)
	}
	// Not validation failures: a taken slug and the owner's plan limit.
	requireError(t, e.op("POST", "/v1/projects", map[string]any{"slug": "shop"}), http.StatusConflict, "A project with this slug already exists")
	r := e.op("POST", "/v1/projects", map[string]any{"slug": "new", "owner_email": "shop@example.com"})
	require.Equal(t, http.StatusForbidden, r.Code, r.Raw)
	assert.Equal(t, before, e.snapshot(), "nothing was created")

	// The operator's PATCH keeps the messages that say what is wrong.
	requireError(t, e.op("PATCH", "/v1/projects/shop", map[string]any{"address_mode": "random"}),
		http.StatusBadRequest, "address_mode must be per_payment, per_user, dedicated or pool")
	requireError(t, e.op("PATCH", "/v1/projects/shop", map[string]any{"owner_email": "ghost@example.com"}),
		http.StatusBadRequest, "owner_email must be the email of an existing account")
}

// Every IPv4 notation a browser's URL parser or an inet_aton resolver
// reads as a private address is refused when the webhook URL is saved;
// a public address in such a notation is judged as the address it is, and
// a host that is neither a host name nor an address is a bad URL.
func TestWebhookURLInAnyIPv4NotationIsJudgedByItsAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "pro", nil, nil)
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/shop", map[string]any{"webhook_url": "https://93.184.215.14/hook"}).Code)
	before := e.snapshot()

	const private = "webhook_url must not point to a private, reserved or loopback address"
	const shape = "webhook_url must be an absolute http or https URL"
	for _, c := range []struct{ url, msg string }{
		{"https://2130706433/hook", private},               // decimal
		{"https://0x7f000001/hook", private},               // hex
		{"https://0X7F000001/hook", private},               // hex, upper case
		{"https://0177.0.0.1/hook", private},               // octal
		{"https://017700000001/hook", private},             // octal, one number
		{"https://0x7f.0.0.1/hook", private},               // hex part
		{"https://127.1/hook", private},                    // short form
		{"https://10.1/hook", private},                     // short form
		{"https://192.168.257/hook", private},              // short form, last part of two bytes
		{"https://0/hook", private},                        // 0.0.0.0
		{"https://127.000.000.001/hook", private},          // zero-padded
		{"https://127.0.0.1./hook", private},               // trailing dot
		{"https://①②⑦.0.0.1/hook", private},                // circled digits
		{"https://127。0。0。1/hook", private},                // ideographic full stops
		{"https://１２７．０．０．１/hook", private},                // full-width digits and dots
		{"https://%EF%BC%91%EF%BC%90.0.0.1/hook", private}, // escaped full-width "10"
		{"https://169.254.43518/hook", private},            // cloud metadata, short form
		{"https://ＬＯＣＡＬＨＯＳＴ/hook", private},                // full-width localhost
		{"https://256.0.0.1/hook", shape},                  // a part over 255
		{"https://1.2.3.4.5/hook", shape},                  // five parts
		{"https://0x100000000/hook", shape},                // over 32 bits
		{"https://0x0a.0x0.0x0.0x01/hook", private},        // hex parts
		{"https://09.0.0.1/hook", shape},                   // 9 is not octal
		{"https://example.1/hook", shape},                  // ends in a number, not an address
		{"https://exa*mple.com/hook", shape},               // not a host name
		{"https://-shop.example/hook", shape},              // not a host name
	} {
		requireError(t, e.op("PATCH", "/v1/projects/shop", map[string]any{"webhook_url": c.url}), http.StatusBadRequest, c.msg)
		requireError(t, e.op("POST", "/v1/projects", map[string]any{"slug": "new", "webhook_url": c.url}), http.StatusBadRequest, "Invalid request body")
	}
	assert.Equal(t, before, e.snapshot(), "nothing changed")

	// 0x5db8d70e is 93.184.215.14, a public address.
	r := e.op("PATCH", "/v1/projects/shop", map[string]any{"webhook_url": "https://0x5db8d70e/hook"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "https://0x5db8d70e/hook", r.str("project.webhook_url"))
}

// A webhook URL whose port is outside 1-65535 is refused wherever it is
// saved, as every malformed URL is, and nothing changes (issue 38, item
// 4): POST /v1/projects with the contract's one message, PATCH with the
// detailed one, and the dashboard's settings form showing it.
func TestWebhookURLPortOutOfRangeIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("port@example.com", "port")
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/port", map[string]any{"webhook_url": "https://93.184.215.14:8443/hook"}).Code)
	before := e.snapshot()

	const shape = "webhook_url must be an absolute http or https URL"
	for _, u := range []string{
		"https://93.184.215.14:99999/hook", "https://93.184.215.14:0/hook", "https://93.184.215.14:65536/hook",
		"https://[2606:4700:4700::1111]:100000/hook",
	} {
		requireError(t, e.op("POST", "/v1/projects", map[string]any{"slug": "new", "webhook_url": u}), http.StatusBadRequest, "Invalid request body")
		requireError(t, e.op("PATCH", "/v1/projects/port", map[string]any{"webhook_url": u}), http.StatusBadRequest, shape)

		b.get("/dashboard/p/port/settings")
		p := b.post("/dashboard/p/port/settings", map[string]string{
			"name": "Port shop", "webhook_url": u, "address_mode": "per_payment", "pool_matching": "micro_amount",
			"micro_amount_decimals": "3", "payment_expiry_minutes": "60",
		})
		assert.Equal(t, http.StatusBadRequest, p.Code, u)
		assert.Contains(t, p.Body, shape, "the form says why: %s", u)
	}
	assert.Equal(t, before, e.snapshot(), "nothing changed")
	r := e.op("PATCH", "/v1/projects/port", map[string]any{"webhook_url": "https://93.184.215.14:65535/hook"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "https://93.184.215.14:65535/hook", r.str("project.webhook_url"))
}

// FuzzNoInputAnswers5xx sends fuzzed paths, queries and bodies to the real
// handlers of both listeners, over real PostgreSQL and the real payment
// workflow, and fails on any 5xx. route picks the endpoint (modulo the
// table below); param fills a path segment or the query; body is sent as
// is. Run it with: go test ./api -run '^$' -fuzz FuzzNoInputAnswers5xx
// -parallel 1.
func FuzzNoInputAnswers5xx(f *testing.F) {
	e := newEnvTB(f)
	send := func(t testing.TB, h http.Handler, host, method, path, rawQuery string, body []byte, header map[string]string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		req.URL.Path, req.URL.RawQuery = path, rawQuery
		req.Host = host
		req.RemoteAddr = testIP + ":4321"
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return serve(t, h, apiListener, req)
	}
	op := map[string]string{"x-master-key": testMasterKey}
	setup := func(method, path, body string, code int) map[string]any {
		rec := send(f, e.server.API(), apiHost, method, path, "", []byte(body), op)
		require.Equal(f, code, rec.Code, "%s %s: %s", method, path, rec.Body.String())
		var out map[string]any
		require.NoError(f, json.Unmarshal(rec.Body.Bytes(), &out))
		return out
	}
	// shop takes payments of every kind; txid confirms hashes; other and
	// other@ are the operator endpoints' targets, so that no input can
	// switch off the projects the other routes use.
	setup("POST", "/v1/accounts", `{"email": "owner@fuzz.example", "plan": "pro", "limits": {"api_calls_per_day": -1, "projects": -1, "payment_links": -1}}`, http.StatusCreated)
	setup("POST", "/v1/accounts", `{"email": "other@fuzz.example"}`, http.StatusCreated)
	shop, _ := setup("POST", "/v1/projects", `{"slug": "shop", "owner_email": "owner@fuzz.example"}`, http.StatusCreated)["api_key"].(string)
	setup("PUT", "/v1/projects/shop/wallet", `{"xpubs": {"evm": "`+testXPubEVM+`", "tron": "`+testXPubTron+`"}}`, http.StatusOK)
	txid, _ := setup("POST", "/v1/projects", `{"slug": "txid", "owner_email": "owner@fuzz.example", "address_mode": "pool", "pool_matching": "txid"}`, http.StatusCreated)["api_key"].(string)
	setup("PUT", "/v1/projects/txid/wallet", `{"addresses": {"TRC20": ["`+tronAddrs[0]+`"]}}`, http.StatusOK)
	setup("POST", "/v1/projects", `{"slug": "other", "owner_email": "other@fuzz.example"}`, http.StatusCreated)
	setup("POST", "/v1/projects/shop/payment-links", `{"slug": "tip", "title": "Tip", "amount": null}`, http.StatusCreated)
	payment := func(t testing.TB, key, body string) string {
		rec := send(t, e.server.API(), apiHost, "POST", "/v1/payments", "", []byte(body), map[string]string{"x-api-key": key})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		var out struct{ Payment struct{ ID string } }
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
		return out.Payment.ID
	}

	type route struct {
		method, path string // path is joined with param when it ends in "/" or "z"
		query        bool   // param is the raw query instead
		key          string // x-api-key; "" for the master key
		pay          bool   // the pay listener (no key)
		form         bool   // body is a form
		fresh        string // a new payment of this body first, its id in the path's "{id}"
	}
	routes := []route{
		{method: "POST", path: "/v1/payments", key: shop},
		{method: "GET", path: "/v1/payments", query: true, key: shop},
		{method: "GET", path: "/v1/payments/", key: shop},
		{method: "PATCH", path: "/v1/payments/{id}", key: shop, fresh: `{"amount": 10, "external_ref": "u"}`},
		{method: "POST", path: "/v1/payments/{id}/confirm", key: txid, fresh: `{"amount": 10, "external_ref": "u", "network": "TRC20"}`},
		{method: "GET", path: "/v1/config", key: shop},
		{method: "POST", path: "/v1/projects"},
		{method: "GET", path: "/v1/projects"},
		{method: "PATCH", path: "/v1/projects/other"},
		{method: "PUT", path: "/v1/projects/other/wallet"},
		{method: "POST", path: "/v1/accounts"},
		{method: "PATCH", path: "/v1/accounts/other@fuzz.example"},
		{method: "PATCH", path: "/v1/accounts/z"},
		{method: "POST", path: "/v1/projects/other/payment-links"},
		{method: "GET", path: "/v1/projects/other/webhook-deliveries", query: true},
		{method: "GET", path: "/v1/projects/z"},
		{method: "POST", path: "/api/pay/{id}/select-network", pay: true, key: shop, fresh: `{"amount": 10, "external_ref": "u"}`},
		{method: "POST", path: "/{id}/select-network", pay: true, form: true, key: shop, fresh: `{"amount": 10, "external_ref": "u"}`},
		{method: "POST", path: "/l/tip", pay: true, form: true},
		{method: "GET", path: "/", pay: true},
		{method: "GET", path: "/api/pay/", pay: true},
		{method: "PATCH", path: "/v1/payments/", key: shop},
	}

	for _, seed := range []struct {
		route       uint8
		param, body string
	}{
		{0, "", `{"amount": 10, "external_ref": "a\u0000b"}`},
		{0, "", `{"amount": 10, "external_ref": "u", "external_order_id": "o\u0000"}`},
		{0, "", `{"amount": 10, "external_ref": "u", "metadata": {"k\u0000": "v\u0000"}}`},
		{0, "", "{\"amount\": 10, \"external_ref\": \"u\", \"metadata\": {\"k\": \"\xff\"}}"},
		{0, "", `{"amount": 10, "external_ref": "u", "metadata": {"k": "\udbff"}}`},
		{0, "", `{"amount": 1e30, "external_ref": "u", "network": "ERC20"}`},
		{0, "", `{"amount": 1e71, "external_ref": "u", "network": "TRC20", "expires_in": 86400}`},
		{0, "", `{"amount": 10, "external_ref": "u", "metadata": {"k": 1e200000}}`},
		{0, "", `{"amount": 10, "external_ref": "u", "metadata": {"k": -1e-200000, "n": [0e-20000]}}`},
		{0, "", `{"amount": 10, "external_ref": "u", "metadata": {"k": 1e131000}}`},
		{0, "", `{"amount": 1e1001, "external_ref": "u", "metadata": {"k": 9.9e1000, "n": 1e-1000}}`},
		{1, "limit=1&offset=99999999999999999999&status=pending&created_after=2026-01-01", ""},
		{1, "updated_after=%00&created_after=\xff", ""},
		{2, "\x00", ""},
		{2, "\xff", ""},
		{3, "", `{"status": "cancelled"}`},
		{4, "", `{"tx_hash": "` + strings.Repeat("ab", 32) + `"}`},
		{4, "", `{"tx_hash": "0x\u0000"}`},
		{5, "", ""},
		{6, "", `{"slug": "x", "name": "a\u0000"}`},
		{6, "", `{"slug": "y", "minAmount": 1e30, "rotation_threshold": 1e30}`},
		{6, "", `{"slug": "z", "webhook_url": "https://①②⑦.0.0.1/hook", "owner_email": "\u0000"}`},
		{7, "", ""},
		{8, "", `{"minAmount": 1e30}`},
		{8, "", `{"name": "\u0000", "owner_email": "x\u0000", "webhook_url": "http://0x7f000001/"}`},
		{8, "", `{"payment_expiry_minutes": 1e30, "micro_amount_decimals": -1e300}`},
		{8, "", `{"minAmount": 1e200000, "rotation_threshold": 1e-200000}`},
		{9, "", `{"name": "w\u0000", "xpubs": {"evm": "\u0000"}, "addresses": {"TRC20": ["\u0000"]}}`},
		{10, "", `{"email": "a\u0000@b.c", "limits": {"projects": 1e30}}`},
		{11, "", `{"plan": "pro", "status": "\u0000", "limits": {"wallets": 99999999999999999999}}`},
		{12, "\x00@fuzz.example", `{"plan": "pro"}`},
		{13, "", `{"slug": "l\u0000", "title": "t", "amount": 1e80}`},
		{13, "", `{"slug": "big", "title": "t", "amount": 1e70, "network": "TRC20"}`},
		{14, "payment_id=%00&limit=1e3", ""},
		{15, "\x00/webhook-deliveries", ""},
		{16, "", `{"network": "TRC20\u0000", "token": "USDT"}`},
		{16, "", `{"network": "ERC20", "token": "USDC"}`},
		{16, "", `{"network": "ERC20", "token": "USDC", "n": 1e200000}`},
		{17, "", "network=TRC20&token=%00&pair=%FF"},
		{18, "", "amount=1e999&email=%00&name=%FF&note=%C3"},
		{18, "", "amount=999999999999999.999999&note=a%0Ab"},
		{18, "", "amount=5&name=%FF&note=%C3"},
		{19, "\x00", ""},
		{20, "\xff", ""},
		{21, "\x00", `{"status": "cancelled"}`},
	} {
		f.Add(seed.route, seed.param, []byte(seed.body))
	}

	ips := 0
	f.Fuzz(func(t *testing.T, n uint8, param string, body []byte) {
		// A minute per input keeps every per-minute limit out of the way.
		e.clock.Add(time.Minute)
		r := routes[int(n)%len(routes)]
		path, query := r.path, ""
		switch {
		case r.query:
			query = param
		case strings.HasSuffix(path, "/") || strings.HasSuffix(path, "z"):
			path += param
		}
		if r.fresh != "" {
			path = strings.Replace(path, "{id}", payment(t, r.key, r.fresh), 1)
		}
		header := map[string]string{"x-api-key": r.key}
		h, host, l := e.server.API(), apiHost, apiListener
		switch {
		case r.pay:
			h, host, header, l = e.server.Pay(), payHost, nil, payListener
		case r.key == "":
			header = op
		}
		if r.form {
			header = map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
		}
		ips++
		req := httptest.NewRequest(r.method, "/", bytes.NewReader(body))
		req.URL.Path, req.URL.RawQuery = path, query
		req.Host = host
		req.RemoteAddr = fmt.Sprintf("198.51.%d.%d:4321", ips/250%250, ips%250+1)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := serve(t, h, l, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s %q: %d %s", r.method, path, query, body, rec.Code, rec.Body.String())
		}
	})
}

// A body that names a key twice, at any depth, is refused with 400
// "Invalid request body" and changes nothing: Go's decoder would take the
// last value, so {"status":"paid","status":"cancelled"} cancelled the
// payment (issue 28, item 19). The same keys once each are taken.
func TestDuplicateKeysAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	e.merchant("other", "pro", nil, nil)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	id := r.str("payment.id")
	before := e.snapshot()
	for _, c := range []struct {
		name, method, path, body string
		operator                 bool
	}{
		{"a cancel", "PATCH", "/v1/payments/" + id, `{"status":"paid","status":"cancelled"}`, false},
		{"a creation", "POST", "/v1/payments", `{"amount": 10, "amount": 1000, "external_ref": "v"}`, false},
		{"in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "w", "metadata": {"a": 1, "a": 2}}`, false},
		{"deep in metadata", "POST", "/v1/payments", `{"amount": 10, "external_ref": "w", "metadata": {"l": [{"a": 1}, {"b": {"c": 1, "c": 1}}]}}`, false},
		{"a project", "PATCH", "/v1/projects/other", `{"name": "A", "name": "B"}`, true},
		{"a cancel, another case", "PATCH", "/v1/payments/" + id, `{"status":"paid","STATUS":"cancelled"}`, false},
		{"a cancel, long s", "PATCH", "/v1/payments/" + id, `{"status":"paid","ſtatus":"cancelled"}`, false},
	} {
		req := request{method: c.method, path: c.path, apiKey: key, body: c.body}
		if c.operator {
			req = request{method: c.method, path: c.path, masterKey: testMasterKey, body: c.body}
		}
		got := e.do(req)
		require.Equal(t, http.StatusBadRequest, got.Code, "%s: %s", c.name, got.Raw)
		assert.JSONEq(t, `{"error": "Invalid request body"}`, got.Raw, c.name)
	}
	assert.Equal(t, before, e.snapshot(), "nothing changed")
	got := e.do(request{method: "POST", path: "/v1/payments", apiKey: key,
		body: `{"amount": 10, "external_ref": "x", "metadata": {"a": {"k": 1}, "b": {"k": 1}, "l": [{"k": 1}, {"k": 2}]}}`})
	assert.Equal(t, http.StatusCreated, got.Code, "the same key in sibling objects is no duplicate: %s", got.Raw)
}
