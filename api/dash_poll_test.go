package api_test

import (
	"html"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
