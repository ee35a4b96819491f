package main

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The API reference in a real headless Chromium against `paywatch dev`: from
// the dashboard's link to {base_url}/docs, where the Swagger UI embedded in
// the binary renders the OpenAPI document. Every operation of
// api/openapi.json is on the page, an operation opens, Try it out calls the
// API, all under the pages' strict Content-Security-Policy without a single
// violation, and the tab asks no other origin for anything.

// documentOperations are the operations of api/openapi.json, as "METHOD
// /path", and its webhooks, as "METHOD name"; paths are the paths alone.
func documentOperations(t *testing.T) (ops, paths []string) {
	t.Helper()
	raw, err := os.ReadFile("../../api/openapi.json")
	require.NoError(t, err)
	var doc struct {
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
		Webhooks map[string]map[string]json.RawMessage `json:"webhooks"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	for _, items := range []map[string]map[string]json.RawMessage{doc.Paths, doc.Webhooks} {
		for path, item := range items {
			for method := range item {
				switch method {
				case "get", "put", "post", "delete", "options", "head", "patch", "trace":
					ops = append(ops, strings.ToUpper(method)+" "+path)
				}
			}
		}
	}
	for path := range doc.Paths {
		paths = append(paths, path)
	}
	slices.Sort(ops)
	return ops, paths
}

// shownOperations are the operations Swagger UI shows: each one's method
// and path, as the page writes them.
const shownOperations = `[...document.querySelectorAll('.opblock-summary')].map(function (s) {
	return s.querySelector('.opblock-summary-method').innerText.trim() + ' ' + s.querySelector('.opblock-summary-path').innerText.trim();
}).sort()`

func TestBrowserAPIReference(t *testing.T) {
	browser := newBrowser(t)
	cfg := devConfig(t, t.TempDir())
	// Real ports, so that the document's server is the page's own origin.
	cfg.APIAddr, cfg.PayAddr = freeAddr(t), freeAddr(t)
	cfg.BaseURL, cfg.PayURL = "http://"+cfg.APIAddr, "http://"+cfg.PayAddr
	m, _ := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	p := newBrowserPage(t, browser, base, artifactDir(t))

	// Every request of the tab, and every policy violation from the first
	// script of each document on.
	var mu sync.Mutex
	var requests []string
	require.NoError(t, chromedp.Listen(p.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}))
	_, err := chromedp.Call(p.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchCSP})
	require.NoError(t, err)

	p.open("/dashboard/login")
	assert.EqualValues(t, http.StatusOK, p.submit("#api-reference"), "the dashboard's link")
	assert.Equal(t, base+"/docs", evalJS[string](p, `location.href`))

	ops, paths := documentOperations(t)
	require.Greater(t, len(paths), 20)
	p.waitFor("every operation of the document", `document.querySelectorAll('.opblock-summary').length >= `+strconv.Itoa(len(ops)), time.Minute)
	assert.Equal(t, ops, evalJS[[]string](p, shownOperations), "the page shows every operation of api/openapi.json")
	text := p.text("#swagger-ui")
	for _, path := range paths {
		assert.Contains(t, text, path)
	}
	assert.Contains(t, text, "paywatch API")
	p.fitsPhone()
	p.screenshot("apiref-01-list")

	// One operation open: its parameters, request body, examples and
	// responses, with a link of its own.
	p.do(chromedp.Click(chromedp.CSS(`#operations-Payments-createPayment .opblock-summary-control`)))
	p.waitFor("the operation's request body", `(document.querySelector('#operations-Payments-createPayment.is-open')||{innerText:''}).innerText.includes('external_ref')`, 30*time.Second)
	assert.Equal(t, "#/Payments/createPayment", evalJS[string](p, `location.hash`), "a link to the operation")
	p.fitsPhone()
	p.screenshot("apiref-02-operation")

	// Try it out: the page calls GET /health of its own origin and shows
	// the answer.
	const health = `#operations-Service-health`
	p.do(chromedp.Click(chromedp.CSS(health + ` .opblock-summary-control`)))
	p.waitFor("Try it out", `!!document.querySelector('`+health+` .try-out__btn')`, 30*time.Second)
	p.do(chromedp.Click(chromedp.CSS(health + ` .try-out__btn`)))
	p.waitFor("Execute", `!!document.querySelector('`+health+` .execute')`, 30*time.Second)
	p.do(chromedp.Click(chromedp.CSS(health + ` .execute`)))
	p.waitFor("the answer", `(document.querySelector('`+health+` .live-responses-table tbody .response-col_status')||{innerText:''}).innerText.trim() === '200'`, 30*time.Second)
	assert.Contains(t, p.text(health+` .live-responses-table`), `"uptime_seconds"`)
	p.fitsPhone()
	p.do(chromedp.EmulateViewport(1100, 800))
	p.screenshot("apiref-03-laptop")

	assert.Empty(t, evalJS[[]string](p, `window.__csp`), "Content-Security-Policy violations")
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, requests, base+"/openapi.json", "Swagger UI reads the document of this origin")
	assert.Contains(t, requests, base+"/health", "Try it out calls this origin")
	for _, u := range requests {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("a request left the origin: %.200s", u)
		}
	}
}
