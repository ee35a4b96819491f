package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GET /v1/transfers and GET /v1/transfers/{network}/{tx_hash} count toward
// the owner's daily API calls like every /v1 call; bad filters and unknown
// transfers get their messages and change nothing (issue 27).
func TestTransfersEndpointsCountAndRefuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusOK, e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"api_calls_per_day": 8}}).Code)

	r := e.call(key, "GET", "/v1/transfers", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, []any{}, r.get("transfers"))
	for _, q := range []string{"unmatched=maybe", "handled=2", "network=SOLANA", "token=DAI", "address=nope"} {
		requireError(t, e.call(key, "GET", "/v1/transfers?"+q, nil), http.StatusBadRequest, "Invalid transfer filter")
	}
	requireError(t, e.call(key, "GET", "/v1/transfers?created_before=yesterday", nil), http.StatusBadRequest, "Invalid created_before")
	requireError(t, e.call(key, "GET", "/v1/transfers/TRC20/"+tronHash("a"), nil), http.StatusNotFound, "Transfer not found")
	requireError(t, e.call(key, "GET", "/v1/transfers", nil), http.StatusTooManyRequests,
		"Daily API call limit exceeded. Upgrade your plan for unlimited access.")
}
