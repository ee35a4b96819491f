package api_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A buyer's e-mail address may hold ?, &, = and # before its @; its
// mailto: link on the payment's page names that one address and adds no
// header field (cc, subject, body) to the merchant's new message.
func TestDashboardBuyerMailtoAddsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	b := e.browser(t)
	b.owner("mto@example.com", "mto")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/mto/wallet", hdWallet()).Code)
	r := e.createLink("mto", map[string]any{"slug": "mto-tee", "title": "Tee", "amount": 12, "token": "USDT", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	const addr = "x?cc=boss&subject=refund&body=pay-now#top@evil.test"
	id := paymentIDOf(t, e.submitLink("mto-tee", url.Values{"email": {addr}}))

	p := b.get("/dashboard/p/mto/payments/" + id)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	cell := section(p.Body, "buyer-email", "dd")
	m := regexp.MustCompile(`<a href="([^"]+)"`).FindStringSubmatch(cell)
	require.NotNil(t, m, cell)
	href, err := url.Parse(html.UnescapeString(m[1]))
	require.NoError(t, err)
	assert.Equal(t, "mailto", href.Scheme)
	assert.Empty(t, href.RawQuery, "no header fields")
	assert.Empty(t, href.Fragment)
	to, err := url.PathUnescape(href.Opaque)
	require.NoError(t, err)
	assert.Equal(t, addr, to, "the link names the address the buyer typed")
	assert.Contains(t, cell, ">"+html.EscapeString(addr)+"</a>")
}
