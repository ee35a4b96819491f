package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regenerating a project's keys e-mails its owner a security alert that
// names no secret; in dev without SMTP it lands in the outbox at
// GET /dev/mail, as JSON and as a page.
func TestRegenerateKeysSendsSecurityAlert(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.merchant("shop", "pro", nil, nil)
	r := e.op("POST", "/v1/projects/shop/regenerate-keys", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	secrets := []string{r.str("api_key"), r.str("api_secret"), r.str("webhook_secret")}

	var msg map[string]any
	require.Eventually(t, func() bool {
		d := e.do(request{method: "GET", path: "/dev/mail"})
		if d.Code != http.StatusOK {
			return false
		}
		alerts := alertsIn(d)
		if len(alerts) != 1 {
			return false
		}
		msg = alerts[0]
		return msg["sent_at"] != nil // filed in the outbox by its delivery workflow
	}, 20*time.Second, 100*time.Millisecond)
	assert.Equal(t, "shop@example.com", msg["to"])
	assert.Equal(t, "Security alert: the keys of Shop shop were regenerated", msg["subject"])
	assert.Contains(t, msg["text"], "(shop) were regenerated on ")
	for _, s := range secrets {
		assert.NotContains(t, msg["text"], s, "no secret in the e-mail")
	}

	// A project name with markup is shown as text on the page.
	r = e.op("PATCH", "/v1/projects/shop", map[string]any{"name": "<b>Evil</b>"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	require.Equal(t, http.StatusOK, e.op("POST", "/v1/projects/shop/regenerate-keys", nil).Code)
	require.Eventually(t, func() bool {
		return len(alertsIn(e.do(request{method: "GET", path: "/dev/mail"}))) == 2
	}, 20*time.Second, 100*time.Millisecond)

	page := e.do(request{method: "GET", path: "/dev/mail", header: map[string]string{"Accept": "text/html"}})
	require.Equal(t, http.StatusOK, page.Code)
	assert.Contains(t, page.Header.Get("Content-Type"), "text/html")
	assert.Contains(t, page.Raw, "Security alert: the keys of Shop shop were regenerated")
	assert.Contains(t, page.Raw, "&lt;b&gt;Evil&lt;/b&gt;")
	assert.NotContains(t, page.Raw, "<b>Evil</b>")
}

// alertsIn returns the security alerts of a GET /dev/mail answer (the
// account's set-password e-mail is there too).
func alertsIn(r response) []map[string]any {
	var out []map[string]any
	list, _ := r.Body["messages"].([]any)
	for _, m := range list {
		msg := m.(map[string]any)
		if s, _ := msg["subject"].(string); strings.HasPrefix(s, "Security alert") {
			out = append(out, msg)
		}
	}
	return out
}
