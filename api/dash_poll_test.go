package api_test

import (
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// The list's poll answers 304 with no body while the list is as the page
// (or the last answer) showed it: its ETag is a hash of the rows, which
// the page carries for the first poll to send (issue 28, item 3).
func TestDashboardPaymentListPollNotModified(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("etag@example.com", "etag")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/etag/wallet", hdWallet()).Code)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "etag-1", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	id := r.str("payment.id")

	pg := b.get("/dashboard/p/etag/payments?limit=20")
	require.Equal(t, http.StatusOK, pg.Code, pg.Body)
	m := regexp.MustCompile(`id="payments-live" data-rows-url="([^"]+)" data-etag="([^"]+)"`).FindStringSubmatch(pg.Body)
	require.NotNil(t, m, "the list carries what its first poll sends")
	u, etag := html.UnescapeString(m[1]), html.UnescapeString(m[2])
	ifNoneMatch := func(v string) http.Header { return http.Header{"If-None-Match": {v}} }

	same := b.sendHeader(http.MethodGet, u, nil, ifNoneMatch(etag))
	assert.Equal(t, http.StatusNotModified, same.Code)
	assert.Empty(t, same.Body)
	assert.Equal(t, etag, same.Header.Get("ETag"))
	assert.Equal(t, http.StatusNotModified, b.sendHeader(http.MethodGet, u, nil, ifNoneMatch(`"other", W/`+etag)).Code)

	full := b.send(http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, full.Code)
	assert.Equal(t, etag, full.Header.Get("ETag"), "the page and its poll agree while nothing changed")
	assert.Contains(t, full.Body, `data-id="`+id+`"`)

	_, err := e.store.Pool().Exec(t.Context(), `UPDATE payments SET status = 'cancelled' WHERE id = $1`, id)
	require.NoError(t, err)
	changed := b.sendHeader(http.MethodGet, u, nil, ifNoneMatch(etag))
	require.Equal(t, http.StatusOK, changed.Code, "a change is sent")
	assert.Contains(t, changed.Body, `data-state="cancelled `)
	next := changed.Header.Get("ETag")
	assert.NotEqual(t, etag, next)
	assert.Equal(t, http.StatusNotModified, b.sendHeader(http.MethodGet, u, nil, ifNoneMatch(next)).Code)
}

// The polls of the payment page and of the payment list are read by a
// script that expects JSON: a payment or project it cannot see is a 404
// with the API's {"error": ...} body, never the dashboard's HTML page
// (issue 38, item 4). dash.js stops polling on a 404 and says so.
func TestDashboardPollsAnswerNotFoundInJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("poll404@example.com", "poll404")
	key := e.merchant("elsewhere", "pro", nil, hdWallet())
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "x", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	theirs := r.str("payment.id")

	for path, msg := range map[string]string{
		"/dashboard/p/poll404/payments/00000000-0000-4000-8000-000000000000/status": paywatch.MsgPaymentNotFound,
		"/dashboard/p/poll404/payments/not-a-uuid/status":                           paywatch.MsgPaymentNotFound,
		"/dashboard/p/poll404/payments/" + theirs + "/status":                       paywatch.MsgPaymentNotFound,
		"/dashboard/p/elsewhere/payments/" + theirs + "/status":                     paywatch.MsgNotFound,
		"/dashboard/p/elsewhere/payments/status?limit=20":                           paywatch.MsgNotFound,
	} {
		p := b.sendHeader(http.MethodGet, path, nil, http.Header{"Accept": {"application/json"}})
		assert.Equal(t, http.StatusNotFound, p.Code, path)
		assert.True(t, strings.HasPrefix(p.Header.Get("Content-Type"), "application/json"), "%s: %s", path, p.Header.Get("Content-Type"))
		var got map[string]any
		if assert.NoError(t, json.Unmarshal([]byte(p.Body), &got), "%s: %s", path, p.Body) {
			assert.Equal(t, map[string]any{"error": msg}, got, path)
		}
	}
	// The page itself stays a page.
	p := b.get("/dashboard/p/poll404/payments/00000000-0000-4000-8000-000000000000")
	assert.Equal(t, http.StatusNotFound, p.Code)
	assert.True(t, strings.HasPrefix(p.Header.Get("Content-Type"), "text/html"), p.Header.Get("Content-Type"))
}
