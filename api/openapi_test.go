package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 17, part 1: api/openapi.json describes every endpoint of the API
// listener and the hosted page's JSON. Every request an API test sends
// through the harness, and its answer, is checked against it (serve), so a
// field added to a response without the document fails the test that saw
// it.

// listener names the two Echo instances of api.Server.
type listener string

const (
	apiListener listener = "api"
	payListener listener = "pay"
)

// openAPIFile is the document as the repository holds it.
const openAPIFile = "openapi.json"

// docPayURL is the document's {pay_url} server, paywatch dev's default.
const docPayURL = "http://127.0.0.1:8081"

// contract is api/openapi.json loaded and validated once, with a router
// that matches paths whatever the host: the harness's hosts are not the
// document's servers.
var contract struct {
	once   sync.Once
	err    error
	doc    *openapi3.T
	router routers.Router
	// listeners are the listeners of each path: the API listener's
	// (the document's server) unless the path's own servers say
	// otherwise, as they do for {pay_url}'s paths and /health.
	listeners map[string][]listener
}

// loadContract loads the document, validates it as OpenAPI 3.1 (examples
// included) and builds its router.
func loadContract() error {
	contract.once.Do(func() {
		raw, err := os.ReadFile(openAPIFile)
		if err != nil {
			contract.err = err
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(raw)
		if err != nil {
			contract.err = fmt.Errorf("load %s: %w", openAPIFile, err)
			return
		}
		if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation(), openapi3.EnableSchemaFormatValidation(), openapi3.EnableSchemaPatternValidation()); err != nil {
			contract.err = fmt.Errorf("%s is not a valid OpenAPI document: %w", openAPIFile, err)
			return
		}
		contract.doc = doc
		contract.listeners = map[string][]listener{}
		// The router matches on paths alone: it is built on a copy whose
		// servers are dropped, so that the harness's hosts match.
		bare, err := openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			contract.err = err
			return
		}
		for path, item := range bare.Paths.Map() {
			if len(item.Servers) == 0 {
				contract.listeners[path] = []listener{apiListener}
			}
			for _, s := range item.Servers {
				switch s.URL {
				case bare.Servers[0].URL:
					contract.listeners[path] = append(contract.listeners[path], apiListener)
				case docPayURL:
					contract.listeners[path] = append(contract.listeners[path], payListener)
				default:
					contract.err = fmt.Errorf("%s: server %s is neither {base_url} nor {pay_url}", path, s.URL)
					return
				}
			}
			item.Servers = nil
		}
		bare.Servers = nil
		contract.router, contract.err = gorillamux.NewRouter(bare)
	})
	return contract.err
}

// skippedRoute reports whether an Echo route of the API listener is
// outside the document on purpose: HTML pages (the dashboard, the API
// reference and the guide under /docs, the dev outbox as a browser sees
// it) and the devnet endpoints of paywatch dev.
func skippedRoute(path string) bool {
	for _, p := range []string{"/dashboard", "/docs", "/dev/mail", "/devnet"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// payJSONRoutes are the pay listener's JSON routes, which the document
// covers; the rest of the pay listener is HTML pages and assets.
var payJSONRoutes = map[string]bool{"/api/pay/:id": true, "/api/pay/:id/select-network": true, "/health": true}

// docPath turns an Echo route into the document's path: /api/v1 is an
// alias of /v1, and parameters are compared by position.
var echoParam = regexp.MustCompile(`:[a-z_]+`)
var docParam = regexp.MustCompile(`\{[a-z_]+\}`)

func docPath(echoPath string) string {
	if rest, ok := strings.CutPrefix(echoPath, "/api/v1/"); ok {
		echoPath = "/v1/" + rest
	}
	return echoParam.ReplaceAllString(echoPath, "{}")
}

// echoRoute returns the route pattern Echo picks for the request, "" when
// no route of the request's method matches (Echo's 404).
func echoRoute(e *echo.Echo, req *http.Request) string {
	c := e.NewContext(req, nil)
	e.Router().Find(req.Method, echo.GetPath(req), c)
	for _, r := range e.Routes() {
		if r.Method == req.Method && r.Path == c.Path() {
			return r.Path
		}
	}
	return ""
}

// serve sends req to the listener's handler, as the tests do, and checks
// the exchange against the document.
func serve(t testing.TB, h http.Handler, l listener, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		if err != nil {
			t.Fatalf("read request body: %v", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	sent := req.Clone(context.Background())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	checkExchange(t, h, l, sent, body, rec)
	return rec
}

// checkExchange checks one request and its answer against the document.
// Requests for another Host (answered by the host rule), unrouted paths
// (Echo's 404) and the routes outside the document are not checked. A
// routed request of the API listener the document lacks is an error, as
// is an answer the document does not describe, its status included. A
// request the document refuses must be refused: the tests send invalid
// input on purpose, and the server's 4xx answer to it must then be one
// the document lists.
func checkExchange(t testing.TB, h http.Handler, l listener, req *http.Request, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	if err := loadContract(); err != nil {
		t.Errorf("%v", err)
		return
	}
	if req.Method == http.MethodHead {
		return
	}
	e, ok := h.(*echo.Echo)
	if !ok {
		t.Errorf("the %s listener is a %T, not Echo", l, h)
		return
	}
	route := echoRoute(e, req)
	wantHost := apiHost
	if l == payListener {
		wantHost = payHost
	}
	switch {
	case route == "":
		return
	case req.Host != wantHost && req.Host != wantHost+":443" && route != "/health": // the host rule's 404; /health answers any Host
		return
	case l == payListener && !payJSONRoutes[route]:
		return
	case l == apiListener && skippedRoute(route):
		return
	}
	what := fmt.Sprintf("%s %s (route %s on the %s listener)", req.Method, req.URL.RequestURI(), route, l)

	// The document knows /v1 only; /api/v1 is its alias.
	vreq := req.Clone(context.Background())
	if rest, ok := strings.CutPrefix(vreq.URL.Path, "/api/v1/"); ok {
		vreq.URL.Path = "/v1/" + rest
		if vreq.URL.RawPath != "" {
			vreq.URL.RawPath = "/v1/" + strings.TrimPrefix(vreq.URL.RawPath, "/api/v1/")
		}
	}
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	found, params, err := contract.router.FindRoute(vreq)
	if err != nil {
		t.Errorf("api/openapi.json lacks %s: %v", what, err)
		return
	}
	if !slices.Contains(contract.listeners[found.Path], l) {
		t.Errorf("api/openapi.json has %s, but not on the %s listener", found.Path, l)
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    vreq,
		PathParams: params,
		Route:      found,
		Options: &openapi3filter.Options{
			SkipSettingDefaults: true,
			AuthenticationFunc:  keyPresent,
		},
	}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && rec.Code < 400 {
		t.Errorf("api/openapi.json refuses the request %s, but the server answered %d %s\nrequest body: %s\ndocument: %v",
			what, rec.Code, rec.Body.String(), body, reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 rec.Code,
		Header:                 rec.Header(),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(rec.Body.Bytes())
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("the answer to %s does not match api/openapi.json: %d %s\n%v", what, rec.Code, rec.Body.String(), err)
	}
}

// checkWebhookPayload checks a webhook body a receiver accepted against
// the document's webhooks section.
func checkWebhookPayload(t testing.TB, body []byte) {
	t.Helper()
	if err := loadContract(); err != nil {
		t.Errorf("%v", err)
		return
	}
	hook := contract.doc.Webhooks["payment"]
	if hook == nil || hook.Post == nil {
		t.Errorf("api/openapi.json has no webhooks.payment.post")
		return
	}
	schema := hook.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("webhook body is not JSON: %v", err)
		return
	}
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("webhook body does not match api/openapi.json's webhooks.payment: %s\n%v", body, err)
	}
}

// keyPresent is the document's security check: the key's header is sent.
// Whether the key is right is the server's to say (401), which the
// document lists.
func keyPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.RequestValidationInput.Request.Header.Get(in.SecurityScheme.Name) == "" {
		return in.NewError(errors.New("missing " + in.SecurityScheme.Name))
	}
	return nil
}

func TestOpenAPIDocumentIsValid31(t *testing.T) {
	require.NoError(t, loadContract())
	assert.True(t, strings.HasPrefix(contract.doc.OpenAPI, "3.1."), "openapi is %s", contract.doc.OpenAPI)
	assert.True(t, contract.doc.IsOpenAPI31OrLater())
	// Every object with properties that an answer or a webhook carries is
	// closed: a field the server adds without the document fails the
	// exchange that carries it. (The document itself, GET /openapi.json,
	// is the one open answer.)
	var open []string
	seen := map[*openapi3.Schema]bool{}
	var walk func(where string, ref *openapi3.SchemaRef)
	walk = func(where string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		sc := ref.Value
		seen[sc] = true
		if ref.Ref != "" {
			where = ref.Ref
		}
		if len(sc.Properties) > 0 && (sc.AdditionalProperties.Has == nil || *sc.AdditionalProperties.Has) {
			open = append(open, where)
		}
		for name, p := range sc.Properties {
			walk(where+"."+name, p)
		}
		for _, list := range []openapi3.SchemaRefs{sc.OneOf, sc.AnyOf, sc.AllOf} {
			for _, p := range list {
				walk(where, p)
			}
		}
		walk(where+"[]", sc.Items)
		walk(where+"{}", sc.AdditionalProperties.Schema)
	}
	for path, item := range contract.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if path == "/openapi.json" {
				continue
			}
			for code, r := range op.Responses.Map() {
				for _, mt := range r.Value.Content {
					walk(method+" "+path+" "+code, mt.Schema)
				}
			}
		}
	}
	walk("webhooks.payment", contract.doc.Webhooks["payment"].Post.RequestBody.Value.Content.Get("application/json").Schema)
	slices.Sort(open)
	assert.Empty(t, slices.Compact(open), "objects of answers without additionalProperties: false")
	assert.True(t, seen[contract.doc.Components.Schemas["Payment"].Value], "the walk reaches the components")
}

func TestOpenAPIServedWithThisInstancesAddresses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	r := e.do(request{method: "GET", path: "/openapi.json"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.Equal(t, "3.1.0", r.str("openapi"))
	servers := r.get("servers").([]any)
	assert.Equal(t, "https://"+apiHost, servers[0].(map[string]any)["url"])
	raw, err := os.ReadFile(openAPIFile)
	require.NoError(t, err)
	want := strings.NewReplacer(`"http://127.0.0.1:8080"`, `"https://`+apiHost+`"`, `"http://127.0.0.1:8081"`, `"`+payURL+`"`).Replace(string(raw))
	assert.Equal(t, want, r.Raw, "the served document is the file, with this instance's servers")
	assert.Contains(t, r.Raw, `"url": "`+payURL+`"`)
	// Examples keep dev's addresses.
	assert.Contains(t, r.Raw, "http://127.0.0.1:8080/docs/getting-started")
}

// TestOpenAPICoversEveryRoute checks the document against the routes the
// server registers, both ways.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	require.NoError(t, loadContract())
	e := newEnv(t, envOptions{noWorkflows: true})
	documented := map[string]bool{} // "listener METHOD /path/{}" of the document
	for path, item := range contract.doc.Paths.Map() {
		for method := range item.Operations() {
			for _, l := range contract.listeners[path] {
				documented[string(l)+" "+method+" "+docParam.ReplaceAllString(path, "{}")] = true
			}
		}
	}
	served := map[string]bool{}
	for _, c := range []struct {
		l listener
		h http.Handler
	}{{apiListener, e.server.API()}, {payListener, e.server.Pay()}} {
		for _, r := range c.h.(*echo.Echo).Routes() {
			switch {
			case c.l == apiListener && skippedRoute(r.Path):
				continue
			case c.l == payListener && !payJSONRoutes[r.Path]:
				continue
			case r.Method == echo.RouteNotFound:
				continue
			}
			key := string(c.l) + " " + r.Method + " " + docPath(r.Path)
			served[key] = true
			assert.True(t, documented[key], "%s %s of the %s listener is not in api/openapi.json", r.Method, r.Path, c.l)
		}
	}
	var stale []string
	for key := range documented {
		if !served[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	assert.Empty(t, stale, "api/openapi.json describes what no route serves")
}

// recordingTB keeps the errors checkExchange reports instead of failing.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestOpenAPICheckCatchesWhatTheDocumentLacks shows the exchange check at
// work on answers altered after the fact: a field the document lacks, a
// status it does not list, a success for a request it refuses.
func TestOpenAPICheckCatchesWhatTheDocumentLacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	newReq := func(method, path, body string) *http.Request {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = apiHost
		req.RemoteAddr = testIP + ":4321"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", key)
		return req
	}
	check := func(req *http.Request, body string, code int, answer string) []string {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/json")
		rec.WriteHeader(code)
		_, _ = io.WriteString(rec, answer)
		r := &recordingTB{TB: t}
		checkExchange(r, e.server.API(), apiListener, req, []byte(body), rec)
		return r.errs
	}

	real := serve(t, e.server.API(), apiListener, newReq("GET", "/v1/config", ""))
	require.Equal(t, http.StatusOK, real.Code, real.Body.String())
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(real.Body.Bytes(), &cfg))
	assert.Empty(t, check(newReq("GET", "/v1/config", ""), "", http.StatusOK, real.Body.String()))

	cfg["surprise"] = 1
	extra, _ := json.Marshal(cfg)
	errs := check(newReq("GET", "/api/v1/config", ""), "", http.StatusOK, string(extra))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "surprise")

	errs = check(newReq("GET", "/v1/config", ""), "", http.StatusTeapot, `{"error": "I'm a teapot"}`)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "status is not supported")

	body := `{"amount": "10", "external_ref": "u"}`
	errs = check(newReq("POST", "/v1/payments", body), body, http.StatusBadRequest, `{"error": "Invalid request body"}`)
	assert.Empty(t, errs, "a refused request answered with a listed 400")
	errs = check(newReq("POST", "/v1/payments", body), body, http.StatusCreated, `{"success": true}`)
	require.Len(t, errs, 2, "%q", errs)
	assert.Contains(t, errs[0], "refuses the request")
	assert.Contains(t, errs[1], "does not match")
}
