package api_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A payment made through a payment link shows, on its page and in the
// list, the link's title and what the buyer entered (name, e-mail, note),
// escaped, rather than only the raw external_ref "link:<slug>:<email>"
// (issue 28, item 5).
func TestDashboardLinkPaymentShowsTheBuyer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("buy@example.com", "buy")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/buy/wallet", hdWallet()).Code)
	r := e.createLink("buy", map[string]any{"slug": "tee", "title": "Tee <b>M</b>", "amount": 12, "token": "USDT", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	linkID := r.str("payment_link.id")
	id := paymentIDOf(t, e.submitLink("tee", url.Values{"email": {"ana@example.com"}, "name": {"Ana <i>Lima</i>"}, "note": {"Blue, please.\nThanks"}}))

	p := b.get("/dashboard/p/buy/payments/" + id)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	link := section(p.Body, "payment-link", "dd")
	assert.Contains(t, link, `href="/dashboard/p/buy/payments?link=`+linkID+`"`, "the title leads to the link's payments")
	assert.Contains(t, link, `>Tee &lt;b&gt;M&lt;/b&gt;</a>`)
	assert.Contains(t, section(p.Body, "buyer-name", "dd"), `Ana &lt;i&gt;Lima&lt;/i&gt;`)
	assert.Contains(t, section(p.Body, "buyer-email", "dd"), `<a href="mailto:ana@example.com"`)
	assert.Contains(t, section(p.Body, "buyer-note", "dd"), "Blue, please.\nThanks")
	assert.NotContains(t, p.Body, "<b>M</b>")
	assert.NotContains(t, p.Body, "<i>Lima</i>")

	list := b.get("/dashboard/p/buy/payments")
	require.Equal(t, http.StatusOK, list.Code, list.Body)
	rows := section(list.Body, "payments", "table")
	assert.Contains(t, rows, `>Tee &lt;b&gt;M&lt;/b&gt;</a>`)
	assert.Contains(t, rows, `Ana &lt;i&gt;Lima&lt;/i&gt;`)
	assert.Contains(t, rows, `ana@example.com`)
	assert.NotContains(t, rows, "link:tee:", "the list shows the buyer, not the raw reference")

	// A payment made through the API shows its external_ref.
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "order-77", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Contains(t, section(b.get("/dashboard/p/buy/payments").Body, "payments", "table"), ">order-77</td>")
}

// The payment list answers its count, rows and pages alone at
// .../payments/status with the list's query, for its script to poll: the
// same filters and page, no frame, and for a signed-out visitor a 401
// rather than the sign-in page (issue 28, item 3).
func TestDashboardPaymentListRowsForThePoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("liv@example.com", "liv")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/liv/wallet", hdWallet()).Code)
	var ids []string
	for _, ref := range []string{"first", "second", "third"} {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": ref, "network": "TRC20"})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		ids = append(ids, r.str("payment.id"))
	}
	_, err := e.store.Pool().Exec(t.Context(), `UPDATE payments SET status = 'cancelled' WHERE id = $1`, ids[0])
	require.NoError(t, err)

	p := b.get("/dashboard/p/liv/payments?status=pending&limit=20&created_after=")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	poll := regexp.MustCompile(`id="payments-live" data-rows-url="([^"]+)"`).FindStringSubmatch(p.Body)
	require.NotNil(t, poll, "the list names what its script polls")
	u := html.UnescapeString(poll[1])
	assert.Equal(t, "/dashboard/p/liv/payments/status?limit=20&status=pending", u)

	rows := b.send(http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, rows.Code, rows.Body)
	assert.Contains(t, rows.Header.Get("Content-Type"), "text/html")
	assert.NotContains(t, rows.Body, "<html", "the rows alone")
	assert.Contains(t, rows.Body, `id="payments-total" class="count">2 payments<`)
	assert.Contains(t, rows.Body, `data-id="`+ids[1]+`"`)
	assert.NotContains(t, rows.Body, `data-id="`+ids[0]+`"`, "the status filter holds")

	// A change shows in the next poll.
	_, err = e.store.Pool().Exec(t.Context(), `UPDATE payments SET status = 'cancelled' WHERE id = $1`, ids[1])
	require.NoError(t, err)
	rows = b.send(http.MethodGet, u, nil)
	assert.Contains(t, rows.Body, `1 payment<`)
	assert.NotContains(t, rows.Body, `data-id="`+ids[1]+`"`)

	// The second page stays the second page.
	rowID := regexp.MustCompile(`data-id="([0-9a-f-]{36})"`)
	first := rowID.FindAllStringSubmatch(b.send(http.MethodGet, "/dashboard/p/liv/payments/status?limit=1", nil).Body, -1)
	rows = b.send(http.MethodGet, "/dashboard/p/liv/payments/status?limit=1&offset=1", nil)
	second := rowID.FindAllStringSubmatch(rows.Body, -1)
	require.Len(t, first, 1)
	require.Len(t, second, 1)
	assert.NotEqual(t, first[0][1], second[0][1])
	assert.Contains(t, rows.Body, `rel="prev"`)

	// Refused filters: no poll, the message on the page.
	p = b.get("/dashboard/p/liv/payments?status=lost")
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.NotContains(t, p.Body, "data-rows-url")

	b.post("/dashboard/logout", nil)
	rows = b.send(http.MethodGet, u, nil)
	assert.Equal(t, http.StatusUnauthorized, rows.Code, "the script stops; it is not sent to the sign-in page")
	other := e.browser(t)
	other.owner("oth-liv@example.com", "oth-liv")
	assert.Equal(t, http.StatusNotFound, other.send(http.MethodGet, u, nil).Code)
}

// timeElement is the one way the dashboard writes an instant.
var timeElement = regexp.MustCompile(`<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}, \d\d:\d\d UTC</time>`)

// Every dashboard page writes its dates one way: a <time> with the UTC
// instant, the exact UTC value as its title, and "27 Nov 2026, 14:52 UTC"
// as its text, which the script puts in the viewer's time zone. No page
// prints another form (2026-11-27, 2026-11-27 14:52:03, RFC 3339) in its
// text (issue 28, item 10).
func TestDashboardOneDateFormat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	shop := newUnmatchedShop(t, e, "dts@example.com", "dts")
	b := shop.owner
	pid := projectID(t, e, "dts")
	_, err := e.store.Pool().Exec(t.Context(), `
		WITH ev AS (
			INSERT INTO webhook_events (event_id, project_id, payment_id, event, sequence, payload, state)
			VALUES (gen_random_uuid(), $1, $2, 'payment.completed', 1, '{}', 'delivered') RETURNING event_id)
		INSERT INTO webhook_attempts (event_id, attempt, status_code, response_body, state)
		SELECT event_id, 1, 200, 'ok', 'delivered' FROM ev`, pid, shop.payment)
	require.NoError(t, err)
	r := e.createLink("dts", map[string]any{"slug": "dts-tee", "title": "Tee"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	b.get("/dashboard/p/dts/unmatched")
	b.post("/dashboard/p/dts/unmatched/handled", map[string]string{"network": "TRC20", "tx_hash": shop.another, "log_index": "0", "note": "refunded"})
	b.get("/dashboard/p/dts/viewers")
	b.post("/dashboard/p/dts/viewers", map[string]string{"email": "viewer-dts@example.com"})

	oldForms := regexp.MustCompile(`\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d`)
	attrs := regexp.MustCompile(`[a-z-]+="[^"]*"`) // values, links, the poll's query
	pages := map[string]int{                       // page: <time> elements at least
		"/dashboard/p/dts/payments":                          1,
		"/dashboard/p/dts/payments/" + shop.payment:          6, // details, timeline, later transfer, delivery
		"/dashboard/p/dts/unmatched?show=all":                2, // seen, handled
		"/dashboard/p/dts/links":                             1,
		"/dashboard/p/dts/viewers":                           1,
		"/dashboard/p/dts/payments/status?limit=20":          1,
		"/dashboard/p/dts/payments?created_after=2026-01-01": 0,
	}
	for path, least := range pages {
		p := b.get(path)
		require.Equal(t, http.StatusOK, p.Code, path)
		times := regexp.MustCompile(`<time[^>]*>[^<]*</time>`).FindAllString(p.Body, -1)
		assert.GreaterOrEqual(t, len(times), least, path)
		for _, tm := range times {
			assert.Regexp(t, "^"+timeElement.String()+"$", tm, path)
		}
		rest := attrs.ReplaceAllString(timeElement.ReplaceAllString(p.Body, ""), "")
		assert.Empty(t, oldForms.FindAllString(rest, -1), "%s prints a date another way", path)
	}
	// The filters count UTC days while the rows show the viewer's time:
	// they say so.
	filtered := b.get("/dashboard/p/dts/payments?created_after=2026-01-01").Body
	assert.Contains(t, filtered, "created after 1 Jan 2026 (UTC)")
	assert.Contains(t, filtered, `<label for="created_after">Created after (UTC)</label>`)
	assert.Contains(t, filtered, `<label for="updated_after">Updated after (UTC)</label>`)
	assert.True(t, strings.Contains(b.get("/dashboard/p/dts/payments/"+shop.payment).Body, "Handled by"), "the later transfer is marked handled")
}

// A memo payment's page shows its memo, the reference a transfer to the
// shared Solana wallet must carry; another payment's shows none.
func TestDashboardPaymentShowsTheMemo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	key := b.owner("memo@example.com", "memo")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/memo/wallet", fullWallet()).Code)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "u", "network": "SOLANA", "token": "USDC"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	memo := r.str("payment.memo")
	require.NotEmpty(t, memo)
	p := b.get("/dashboard/p/memo/payments/" + r.str("payment.id"))
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, section(p.Body, "payment-memo", "dd"), "<code class=\"wrap-any\">"+memo+"</code>")
	assert.Contains(t, section(p.Body, "payment-details", "dl"), testSolanaWallet)

	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "u", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	p = b.get("/dashboard/p/memo/payments/" + r.str("payment.id"))
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.NotContains(t, p.Body, `id="payment-memo"`)
}
