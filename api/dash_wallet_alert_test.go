package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/store"
)

// Issue 38, item 4: removing a static address on the dashboard e-mails the
// owner the wallet's security alert, as saving the wallet does, naming the
// network, the address and the account that removed it; a refused removal
// sends none.
func TestDashboardStaticAddressRemovalAlertsTheOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser(t)
	key := b.owner("rmalert@example.com", "rmalert")
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/projects/rmalert", map[string]any{"address_mode": "pool", "pool_matching": "txid"}).Code)
	b.get("/dashboard/p/rmalert/wallet")
	p := b.post("/dashboard/p/rmalert/wallet", map[string]string{"action": "save", "name": "Main",
		"addresses_TRC20": tronAddrs[0] + "\n" + tronAddrs[2], "password": dashPassword, "new_protection_key": "rm-alert-guard-key"})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	alerts := func() []store.Mail {
		ms, err := e.store.ListMail(t.Context(), 100)
		require.NoError(t, err)
		var out []store.Mail
		for _, m := range ms {
			if m.To == "rmalert@example.com" && strings.Contains(m.Subject, "the wallet of") {
				out = append(out, m)
			}
		}
		return out
	}
	saved := alerts()
	require.Len(t, saved, 1, "saving the wallet alerts the owner")

	// A payment holds an address: its removal is refused, and tells no one.
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "c1", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	busy := r.str("payment.address")
	p = b.post("/dashboard/p/rmalert/wallet", map[string]string{"remove_address": "TRC20 " + busy})
	require.Equal(t, http.StatusConflict, p.Code)
	assert.Len(t, alerts(), 1, "a refused removal sends no alert")

	free := tronAddrs[0]
	if free == busy {
		free = tronAddrs[2]
	}
	p = b.post("/dashboard/p/rmalert/wallet", map[string]string{"remove_address": "TRC20 " + free})
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	got := alerts()
	require.Len(t, got, 2, "removing a static address alerts the owner")
	removed := got[0]
	if removed.ID == saved[0].ID {
		removed = got[1]
	}
	assert.Contains(t, removed.Subject, "Security alert: the wallet of")
	assert.Contains(t, removed.Text, "- the TRC20 static address "+free+" was removed by rmalert@example.com")
}
