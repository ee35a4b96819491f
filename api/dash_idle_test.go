package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// The pages' own polls (the payment list's rows, a payment's status) are
// not the merchant's use of the session: a tab left open on the list ends
// its session after 2 idle hours like any other, while a merchant who
// keeps loading pages stays signed in.
func TestDashboardPollsDoNotKeepASessionAlive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	open := e.browser(t)
	key := open.owner("tab@example.com", "tab")
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/tab/wallet", hdWallet()).Code)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "open-tab", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	id := r.str("payment.id")
	busy := e.browser(t)
	busy.owner("busy@example.com", "busy")

	require.Equal(t, http.StatusOK, open.get("/dashboard/p/tab/payments").Code)
	require.Equal(t, http.StatusOK, busy.get("/dashboard/p/busy/payments").Code)
	polls := []string{"/dashboard/p/tab/payments/status?limit=20", "/dashboard/p/tab/payments/" + id + "/status"}
	for i := range 11 {
		e.clock.Add(10 * time.Minute)
		for _, u := range polls {
			assert.Equal(t, http.StatusOK, open.send(http.MethodGet, u, nil).Code, "%s after %d minutes", u, 10*(i+1))
		}
		assert.Equal(t, http.StatusOK, busy.get("/dashboard/p/busy/payments").Code)
	}
	e.clock.Add(10 * time.Minute) // 2 hours since the open tab's last page

	poll := open.send(http.MethodGet, polls[0], nil)
	assert.Equal(t, http.StatusUnauthorized, poll.Code, "the open tab's session ended")
	assert.Contains(t, poll.Body, paywatch.MsgSessionEnded)
	p := open.send(http.MethodGet, "/dashboard/p/tab/payments", nil)
	assert.Equal(t, http.StatusSeeOther, p.Code)
	assert.Equal(t, "/dashboard/login", p.Location)

	p = busy.send(http.MethodGet, "/dashboard/p/busy/payments", nil)
	assert.Equal(t, http.StatusOK, p.Code, "the merchant who loads pages stays")
	assert.Equal(t, http.StatusOK, busy.send(http.MethodGet, "/dashboard/p/busy/payments/status?limit=20", nil).Code)
}
