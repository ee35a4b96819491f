package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/api"
)

func TestHostRuleAndUnknownRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})

	r := e.do(request{method: "GET", path: "/health", host: "10.1.2.3:8080"})
	assert.Equal(t, http.StatusOK, r.Code, "health answers any host")

	r = e.do(request{method: "GET", path: "/v1/projects", host: "evil.example", masterKey: testMasterKey})
	requireError(t, r, http.StatusNotFound, "Not found")
	r = e.do(request{method: "GET", path: "/v1/projects", host: "API.paywatch.test:443", masterKey: testMasterKey})
	assert.Equal(t, http.StatusOK, r.Code, "host match ignores case and the default port")

	r = e.do(request{method: "GET", path: "/api/v1/projects", masterKey: testMasterKey})
	assert.Equal(t, http.StatusOK, r.Code, "the /api/v1 form of one reference")

	requireError(t, e.do(request{method: "GET", path: "/v1/nothing"}), http.StatusNotFound, "Not found")
	requireError(t, e.do(request{method: "DELETE", path: "/v1/payments"}), http.StatusNotFound, "Not found")
}

func TestMasterKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	requireError(t, e.do(request{method: "GET", path: "/v1/projects"}), http.StatusUnauthorized, "Invalid master key")
	requireError(t, e.do(request{method: "GET", path: "/v1/projects", masterKey: testMasterKey + "x"}), http.StatusUnauthorized, "Invalid master key")
	requireError(t, e.do(request{method: "POST", path: "/v1/accounts", body: map[string]any{"email": "a@b.co"}, masterKey: "mk_wrong"}),
		http.StatusUnauthorized, "Invalid master key")

	// A wrong key is a 401 far beyond the 30 a minute of unknown API keys
	// (operations.md §2); only a flood from one IP is cut off.
	require.GreaterOrEqual(t, api.InvalidMasterKeyLimit, 600)
	for i := range api.InvalidMasterKeyLimit {
		r := e.do(request{method: "GET", path: "/v1/projects", masterKey: "mk_guess", ip: "203.0.113.9"})
		require.Equal(t, http.StatusUnauthorized, r.Code, "wrong key %d", i+1)
		require.Equal(t, "Invalid master key", r.Body["error"])
	}
	r := e.do(request{method: "GET", path: "/v1/projects", masterKey: "mk_guess", ip: "203.0.113.9"})
	requireError(t, r, http.StatusTooManyRequests, "Too many requests")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	requireError(t, e.do(request{method: "GET", path: "/v1/projects", masterKey: "mk_guess", ip: "203.0.113.10"}),
		http.StatusUnauthorized, "Invalid master key")
	assert.Equal(t, http.StatusOK, e.op("GET", "/v1/projects", nil).Code, "the right key still works")
}

func TestAccountEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	r := e.op("POST", "/v1/accounts", map[string]any{"email": "Owner@Example.com", "plan": "free"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["success"])
	assert.Equal(t, "owner@example.com", r.str("account.email"))
	assert.Equal(t, "free", r.str("account.plan"))
	assert.Equal(t, "active", r.str("account.status"))

	r = e.op("POST", "/v1/accounts", map[string]any{"email": "owner@example.com", "plan": "pro"})
	assert.Equal(t, http.StatusConflict, r.Code)
	r = e.op("POST", "/v1/accounts", map[string]any{"email": "x@example.com", "plan": "gold"})
	assert.Equal(t, http.StatusBadRequest, r.Code)
	requireError(t, e.op("POST", "/v1/accounts", `{"email": 5}`), http.StatusBadRequest, "Invalid request body")

	r = e.op("PATCH", "/v1/accounts/owner@example.com", map[string]any{
		"plan": "pro", "status": "suspended", "limits": map[string]any{"projects": 7, "api_calls_per_day": -1},
	})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "pro", r.str("account.plan"))
	assert.Equal(t, "suspended", r.str("account.status"))
	assert.Equal(t, "7", string(r.get("account.limits.projects").(jsonNumber)))
	r = e.op("PATCH", "/v1/accounts/owner@example.com", map[string]any{"limits": map[string]any{"projects": nil}})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "3", string(r.get("account.limits.projects").(jsonNumber)), "pro default again")
	assert.Equal(t, http.StatusBadRequest, e.op("PATCH", "/v1/accounts/owner@example.com", map[string]any{"limits": map[string]any{"bogus": 1}}).Code)
	assert.Equal(t, http.StatusBadRequest, e.op("PATCH", "/v1/accounts/owner@example.com", map[string]any{"status": "deleted"}).Code)
	assert.Equal(t, http.StatusNotFound, e.op("PATCH", "/v1/accounts/ghost@example.com", map[string]any{"plan": "pro"}).Code)
}

func TestAccountCreationChecksLimitsFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	for _, limits := range []any{map[string]any{"bogus": 1}, map[string]any{"projects": -2}, map[string]any{"wallets": "many"}} {
		r := e.op("POST", "/v1/accounts", map[string]any{"email": "owner@example.com", "limits": limits})
		require.Equal(t, http.StatusBadRequest, r.Code, r.Raw)
	}
	// Nothing was created: the same email is still free.
	r := e.op("POST", "/v1/accounts", map[string]any{"email": "owner@example.com", "plan": "pro", "limits": map[string]any{"projects": 5}})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, "5", string(r.get("account.limits.projects").(jsonNumber)))
}

func TestAccountEmailInPathMayBeEscaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/accounts", map[string]any{"email": "owner@shop.example"}).Code)

	r := e.op("PATCH", "/v1/accounts/owner%40shop.example", map[string]any{"plan": "pro"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "owner@shop.example", r.str("account.email"))
	assert.Equal(t, "pro", r.str("account.plan"))
	r = e.op("PATCH", "/api/v1/accounts/owner%40shop.example", map[string]any{"status": "suspended"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	r = e.op("PATCH", "/v1/accounts/owner@shop.example", map[string]any{"status": "active"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	// Decoded once, not twice: %2540 is the literal text %40.
	requireError(t, e.op("PATCH", "/v1/accounts/owner%2540shop.example", map[string]any{"plan": "pro"}),
		http.StatusNotFound, "Account not found")

	// A malformed escape, as a proxy might pass one on.
	req := httptest.NewRequest("PATCH", "/v1/accounts/owner", strings.NewReader(`{"plan": "pro"}`))
	req.URL.RawPath = "/v1/accounts/owner%zz"
	req.Host = apiHost
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-master-key", testMasterKey)
	rec := serve(t, e.server.API(), apiListener, req)
	assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"error": "Invalid request body"}`, rec.Body.String())
}

func TestProjectEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})

	// Without owner: created with a warning; its key does not work.
	r := e.op("POST", "/v1/projects", map[string]any{"name": "Lonely", "slug": "lonely"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.NotEmpty(t, r.str("warning"))
	key := r.str("api_key")
	assert.True(t, strings.HasPrefix(key, "pk_live_"), key)
	assert.True(t, strings.HasPrefix(r.str("webhook_secret"), "whsec_"))
	assert.Equal(t, key, r.str("project.api_key"))
	assert.Nil(t, r.Body["api_secret"], "the master-key API returns only the API key and webhook secret")
	requireError(t, e.call(key, "GET", "/v1/config", nil), http.StatusUnauthorized, "Invalid API key")

	// Slug rules and uniqueness.
	for _, slug := range []string{"", "Bad", "bad_slug", "-bad", "bad-"} {
		r = e.op("POST", "/v1/projects", map[string]any{"name": "x", "slug": slug})
		assert.Equal(t, http.StatusBadRequest, r.Code, "slug %q", slug)
	}
	assert.Equal(t, http.StatusBadRequest, e.op("POST", "/v1/projects", map[string]any{"name": "x"}).Code, "slug is required")
	assert.Equal(t, http.StatusConflict, e.op("POST", "/v1/projects", map[string]any{"slug": "lonely"}).Code)

	// The owner must exist and be active.
	assert.Equal(t, http.StatusBadRequest, e.op("POST", "/v1/projects", map[string]any{"slug": "p1", "owner_email": "ghost@example.com"}).Code)

	// Webhook URLs in private or reserved ranges are refused.
	for _, u := range []string{
		"http://127.0.0.1/hook", "https://localhost/hook", "http://10.0.0.8/x", "http://192.168.1.1/x", "http://169.254.169.254/latest",
		"http://[::1]/x", "http://[fd00::1]/x", "http://[::ffff:10.0.0.1]/x", "http://100.64.0.1/x", "ftp://example.com/x", "not a url",
	} {
		r = e.op("POST", "/v1/projects", map[string]any{"slug": "hooky", "webhook_url": u})
		assert.Equal(t, http.StatusBadRequest, r.Code, "webhook_url %s", u)
	}
	r = e.op("POST", "/v1/projects", map[string]any{"slug": "hooky", "webhook_url": "https://93.184.215.14/hook"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)

	// Settings through PATCH.
	e.op("POST", "/v1/accounts", map[string]any{"email": "o@example.com", "plan": "free"})
	r = e.op("PATCH", "/v1/projects/lonely", map[string]any{
		"owner_email": "o@example.com", "address_mode": "pool", "pool_matching": "txid", "minAmount": 1.5,
		"micro_amount_decimals": 2, "rotation_threshold": "500", "payment_expiry_minutes": 30, "name": "Renamed",
	})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "o@example.com", r.str("project.owner_email"))
	assert.Equal(t, "pool", r.str("project.address_mode"))
	assert.Equal(t, "txid", r.str("project.pool_matching"))
	assert.Equal(t, "1.50", r.str("project.minAmount"))
	assert.Equal(t, "500.00", r.str("project.rotation_threshold"))
	assert.Equal(t, "Renamed", r.str("project.name"))
	assert.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/config", nil).Code, "an owner makes the key work")
	assert.Equal(t, http.StatusBadRequest, e.op("PATCH", "/v1/projects/lonely", map[string]any{"address_mode": "random"}).Code)
	assert.Equal(t, http.StatusBadRequest, e.op("PATCH", "/v1/projects/lonely", map[string]any{"micro_amount_decimals": 5}).Code)
	assert.Equal(t, http.StatusBadRequest, e.op("PATCH", "/v1/projects/lonely", map[string]any{"webhook_url": "http://127.0.0.1:9/x"}).Code)
	assert.Equal(t, http.StatusNotFound, e.op("PATCH", "/v1/projects/nope", map[string]any{"name": "x"}).Code)

	// Plan limit: free accounts own one project.
	r = e.op("POST", "/v1/projects", map[string]any{"slug": "second", "owner_email": "o@example.com"})
	assert.Equal(t, http.StatusForbidden, r.Code, r.Raw)

	// The list shows the key's prefix and never a secret.
	r = e.op("GET", "/v1/projects", nil)
	require.Equal(t, http.StatusOK, r.Code)
	assert.NotContains(t, r.Raw, key)
	assert.NotContains(t, r.Raw, "whsec_")
	items := r.Body["projects"].([]any)
	require.Len(t, items, 2)
	first := items[0].(map[string]any)
	assert.Equal(t, key[:12], first["api_key_prefix"])
	assert.Equal(t, "lonely", first["slug"])
}

func TestWebhookURLAllowPrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true, allowPrivate: true})
	r := e.op("POST", "/v1/projects", map[string]any{"slug": "dev", "webhook_url": "http://127.0.0.1:9000/hook"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, "http://127.0.0.1:9000/hook", r.str("project.webhook_url"))
	assert.Equal(t, http.StatusBadRequest, e.op("POST", "/v1/projects", map[string]any{"slug": "dev2", "webhook_url": "gopher://x"}).Code)
}

func TestWalletEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "free", nil, nil)

	r := e.op("PUT", "/v1/projects/shop/wallet", map[string]any{"xpubs": map[string]any{"evm": testXPrv}})
	require.Equal(t, http.StatusBadRequest, r.Code)
	assert.Contains(t, r.str("error"), "xpubs.evm")
	assert.Contains(t, r.str("error"), "private key")
	r = e.op("PUT", "/v1/projects/shop/wallet", map[string]any{"xpubs": map[string]any{"tron": "xpub-nonsense"}})
	require.Equal(t, http.StatusBadRequest, r.Code)
	assert.Contains(t, r.str("error"), "xpubs.tron")
	r = e.op("PUT", "/v1/projects/shop/wallet", map[string]any{"addresses": map[string]any{"ERC20": []string{"0x123"}}})
	require.Equal(t, http.StatusBadRequest, r.Code)
	assert.Contains(t, r.str("error"), "addresses.ERC20[0]")
	requireError(t, e.op("PUT", "/v1/projects/shop/wallet", map[string]any{"addresses": map[string]any{"ERC20": "0x1"}}),
		http.StatusBadRequest, "Invalid request body")

	r = e.op("PUT", "/v1/projects/shop/wallet", map[string]any{
		"name":      "Main",
		"xpubs":     map[string]any{"evm": testXPubEVM},
		"addresses": map[string]any{"TRC20": []string{tronAddrs[0], tronAddrs[1]}, "ERC20": []string{strings.ToLower(evmAddrs[0])}},
	})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "Main", r.str("wallet.name"))
	assert.Equal(t, true, r.get("wallet.xpubs.evm"))
	assert.Equal(t, false, r.get("wallet.xpubs.tron"))
	assert.Equal(t, "2", string(r.get("wallet.addresses.TRC20").(jsonNumber)))
	// per_payment: the evm xpub serves the five EVM networks.
	nets := r.get("wallet.available_networks").([]any)
	require.Len(t, nets, 5)
	assert.Equal(t, "BEP20", nets[0].(map[string]any)["network"])
	assert.Equal(t, "BASE", nets[4].(map[string]any)["network"])

	// A second project of a free owner would exceed the wallet limit: the
	// owner first needs a higher project limit to have one.
	e.op("PATCH", "/v1/accounts/shop@example.com", map[string]any{"limits": map[string]any{"projects": 2}})
	require.Equal(t, http.StatusCreated, e.op("POST", "/v1/projects", map[string]any{"slug": "shop2", "owner_email": "shop@example.com"}).Code)
	r = e.op("PUT", "/v1/projects/shop2/wallet", hdWallet())
	assert.Equal(t, http.StatusForbidden, r.Code, r.Raw)
	assert.Equal(t, http.StatusNotFound, e.op("PUT", "/v1/projects/nope/wallet", hdWallet()).Code)
}

// More watch-only keys for tests that need several wallets.
const (
	// The external chains m/44'/60'/0'/0 and m/44'/195'/0'/0 of the test
	// mnemonic: other strings for the same addresses as testXPubEVM and
	// testXPubTron.
	testXPubEVMExternal  = "xpub6EF8jXqFeFEW5bwMU7RpQtHkzE4KJxcqJtvkCjJumzW8CPpacXkb92ek4WzLQXjL93HycJwTPUAcuNxCqFPKKU5m5Z2Vq4nCyh5CyPeBFFr"
	testXPubTronExternal = "xpub6EuK4CZWW5urEHdwAVDdDw327danAtccFcrXYvgf1DHrPXRwErt36xStQ2PNhn4hpwzPbzJ8pJVpewgChRnSs59q5Ay61GCfQZKUe71gbLq"
	// Account xpubs of a second wallet (the BIP32 seed
	// sha256("paywatch second test wallet")).
	testXPubEVM2  = "xpub6ChoXjmYbBBUSYWguCr89kNQuH1PQ9nNwAb1MhtKSoqeUVdYxagTJKrWcFYgN9ueXfYR6pMMgqGFGW23XkhQJ4bYCrJLGtrSGGoVq6sJhe4"
	testXPubTron2 = "xpub6ByFDymkPaVqJvsTLsSFKqxedCn33Y2SZWACasWzQ3XJ1mCx3TM4aSBMwfoFJeh9y7A6JXfLLYvcz2WmPc1xsJC9B6X4G48NP1S2SFrNmUZ"
)

// otherHDWallet is a wallet with both xpubs of the second test wallet, for a
// project beside one holding hdWallet: two projects never share an xPub.
func otherHDWallet() map[string]any {
	return map[string]any{"xpubs": map[string]any{"evm": testXPubEVM2, "tron": testXPubTron2}}
}

func TestWalletXPubBelongsToOneProject(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "pro", nil, hdWallet())
	e.merchant("other", "pro", nil, nil)

	// The same key, or its external chain (depth 4), derives the shop's
	// deposit addresses: one transfer would credit both projects.
	for _, c := range []struct{ family, xpub string }{
		{"evm", testXPubEVM}, {"evm", testXPubEVMExternal}, {"tron", testXPubTron}, {"tron", testXPubTronExternal},
	} {
		requireError(t, e.op("PUT", "/v1/projects/other/wallet", map[string]any{"xpubs": map[string]any{c.family: c.xpub}}),
			http.StatusConflict, "xpubs."+c.family+": this xPub is already used by another project")
	}
	r := e.op("PUT", "/v1/projects/other/wallet", map[string]any{"name": "Other"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, map[string]any{"evm": false, "tron": false}, r.get("wallet.xpubs"), "the refused keys were not saved")

	// The shop saving its own keys again, in either form, is idempotent.
	r = e.op("PUT", "/v1/projects/shop/wallet", hdWallet())
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	r = e.op("PUT", "/v1/projects/shop/wallet", map[string]any{"xpubs": map[string]any{"evm": testXPubEVMExternal}})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, true, r.get("wallet.xpubs.evm"))

	r = e.op("PUT", "/v1/projects/other/wallet", otherHDWallet())
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, map[string]any{"evm": true, "tron": true}, r.get("wallet.xpubs"))
}

func TestWalletStaticAddressRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("a", "pro", nil, nil)
	e.merchant("b", "pro", nil, nil)
	rounds := []struct{ network, address string }{
		{"TRC20", tronAddrs[0]}, {"TRC20", tronAddrs[1]}, {"TRC20", tronAddrs[2]},
		{"ERC20", evmAddrs[0]}, {"BEP20", evmAddrs[1]}, {"POLYGON", evmAddrs[2]},
	}
	for _, round := range rounds {
		answers := make([]response, 2)
		parallel(2, func(i int) {
			answers[i] = e.op("PUT", "/v1/projects/"+[]string{"a", "b"}[i]+"/wallet", staticWallet(round.network, round.address))
		})
		ok := 0
		for _, r := range answers {
			if r.Code == http.StatusOK {
				ok++
				continue
			}
			requireError(t, r, http.StatusConflict, "addresses."+round.network+": "+round.address+" is already registered by another project")
		}
		require.Equal(t, 1, ok, "%s %s: exactly one project gets the address", round.network, round.address)
	}
	var n int
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM static_addresses`).Scan(&n))
	assert.Equal(t, len(rounds), n)
}

func TestRegenerateKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	require.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/config", nil).Code)

	r := e.op("POST", "/v1/projects/shop/regenerate-keys", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	newKey := r.str("api_key")
	assert.NotEqual(t, key, newKey)
	assert.True(t, strings.HasPrefix(r.str("api_secret"), "sk_live_"))
	assert.True(t, strings.HasPrefix(r.str("webhook_secret"), "whsec_"))

	requireError(t, e.call(key, "GET", "/v1/config", nil), http.StatusUnauthorized, "Invalid API key")
	assert.Equal(t, http.StatusOK, e.call(newKey, "GET", "/v1/config", nil).Code)
	assert.Equal(t, http.StatusNotFound, e.op("POST", "/v1/projects/nope/regenerate-keys", nil).Code)
}

func TestWebhookDeliveriesListing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("shop", "pro", nil, hdWallet())
	r := e.op("GET", "/v1/projects/shop/webhook-deliveries?limit=10", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, []any{}, r.Body["deliveries"])
	requireError(t, e.op("GET", "/v1/projects/shop/webhook-deliveries?limit=0", nil), http.StatusBadRequest, "Invalid limit or offset")
	assert.Equal(t, http.StatusNotFound, e.op("GET", "/v1/projects/nope/webhook-deliveries", nil).Code)
}
