package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

const adminTestKey = "mk_admintest0123456789abcdefghij"

// adminEnv runs the real API (without workflows) over a fresh database and
// returns a function that runs `paywatch admin` against it.
func adminEnv(t *testing.T) (func(args ...string) (int, string, string), string) {
	t.Helper()
	return adminEnvOn(t, storetest.NewPool(t))
}

// adminEnvOn is adminEnv over a given database, for tests that also write
// rows no operator endpoint writes.
func adminEnvOn(t *testing.T, pool *pgxpool.Pool) (func(args ...string) (int, string, string), string) {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	h := api.New(api.Deps{
		Store:     store.New(pool),
		MasterKey: adminTestKey,
		BaseURL:   srv.URL,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv.Config.Handler = h.API()
	env := map[string]string{"PAYWATCH_BASE_URL": srv.URL, "PAYWATCH_MASTER_KEY": adminTestKey}
	return func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"admin"}, args...), func(k string) string { return env[k] }, &out, &errOut)
		return code, out.String(), errOut.String()
	}, srv.URL
}

func TestAdminCommands(t *testing.T) {
	admin, _ := adminEnv(t)
	decode := func(s string) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m), s)
		return m
	}

	code, out, errOut := admin("accounts", "create", "--email", "owner@example.com", "--plan", "pro")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "pro", decode(out)["account"].(map[string]any)["plan"])

	code, _, errOut = admin("accounts", "create", "--email", "owner@example.com")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "HTTP 409")

	code, out, errOut = admin("accounts", "update", "owner@example.com", "--limit", "projects=5", "--status", "active")
	require.Equal(t, 0, code, errOut)
	limits := decode(out)["account"].(map[string]any)["limits"].(map[string]any)
	assert.Equal(t, float64(5), limits["projects"])
	code, _, errOut = admin("accounts", "update", "owner@example.com", "--clear-protection-key")
	require.Equal(t, 0, code, errOut)

	code, out, errOut = admin("projects", "create", "--slug", "shop", "--name", "Shop", "--owner-email", "owner@example.com")
	require.Equal(t, 0, code, errOut)
	created := decode(out)
	key, _ := created["api_key"].(string)
	assert.True(t, strings.HasPrefix(key, "pk_live_"))

	code, out, errOut = admin("projects", "update", "shop", "--address-mode", "pool", "--pool-matching", "txid",
		"--min-amount", "1.25", "--payment-expiry-minutes", "30", "--active", "true")
	require.Equal(t, 0, code, errOut)
	p := decode(out)["project"].(map[string]any)
	assert.Equal(t, "pool", p["address_mode"])
	assert.Equal(t, "1.25", p["minAmount"])
	assert.Equal(t, float64(30), p["payment_expiry_minutes"])

	code, out, errOut = admin("wallet", "set", "shop", "--name", "Main",
		"--address", "TRC20=TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", "--address", "ERC20=0x9858effd232b4033e47d90003d41ec34ecaeda94")
	require.Equal(t, 0, code, errOut)
	w := decode(out)["wallet"].(map[string]any)
	assert.Equal(t, float64(1), w["addresses"].(map[string]any)["TRC20"])
	assert.Len(t, w["available_networks"], 2)

	code, _, errOut = admin("wallet", "set", "shop", "--xpub-evm", "xprv-not-allowed")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "xpubs.evm")

	code, out, errOut = admin("projects", "list")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, key)
	assert.Contains(t, out, key[:12])

	code, out, errOut = admin("projects", "regenerate-keys", "shop")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, decode(out), "api_secret")

	code, out, errOut = admin("deliveries", "shop", "--limit", "5")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []any{}, decode(out)["deliveries"])

	code, _, errOut = admin("projects", "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown command")
	code, _, _ = admin()
	assert.Equal(t, 2, code)
}

func TestAdminMasterKeyFromDataDir(t *testing.T) {
	_, url := adminEnv(t)
	// Without PAYWATCH_MASTER_KEY, the key "paywatch dev" keeps is used.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "master_key"), []byte(adminTestKey+"\n"), 0o600))
	var out, errOut bytes.Buffer
	env := map[string]string{"PAYWATCH_BASE_URL": url, "PAYWATCH_DATA_DIR": dir}
	code := run(context.Background(), []string{"admin", "projects", "list"}, func(k string) string { return env[k] }, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "master_key"), []byte("mk_wrongwrongwrongwrongwrongwrong\n"), 0o600))
	errOut.Reset()
	code = run(context.Background(), []string{"admin", "projects", "list"}, func(k string) string { return env[k] }, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "Invalid master key (HTTP 401)")
}

func TestAdminLinksCreate(t *testing.T) {
	admin, _ := adminEnv(t)
	decode := func(s string) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m), s)
		return m
	}
	code, _, errOut := admin("accounts", "create", "--email", "owner@example.com", "--plan", "free")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = admin("projects", "create", "--slug", "shop", "--owner-email", "owner@example.com")
	require.Equal(t, 0, code, errOut)

	code, out, errOut := admin("links", "create", "shop", "--slug", "hoodie", "--title", "Paywatch hoodie", "--amount", "25.50", "--token", "USDC", "--network", "ERC20")
	require.Equal(t, 0, code, errOut)
	link := decode(out)["payment_link"].(map[string]any)
	assert.Equal(t, "hoodie", link["slug"])
	assert.True(t, strings.HasSuffix(link["url"].(string), "/l/hoodie"), link["url"])
	assert.NotEmpty(t, link["id"])

	// Without --amount the buyer enters it.
	code, _, errOut = admin("links", "create", "shop", "--slug", "tip", "--title", "Tip jar")
	require.Equal(t, 0, code, errOut)

	code, _, errOut = admin("links", "create", "shop", "--slug", "x", "--title", "X", "--amount", "1e3")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--amount 1e3")
	code, _, errOut = admin("links", "create", "shop", "--title", "No slug")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--slug and --title are required")
	code, _, errOut = admin("links", "create", "shop", "--slug", "hoodie", "--title", "Again")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "A payment link with this slug already exists (HTTP 409)")
	// The free plan allows 3 links.
	code, _, errOut = admin("links", "create", "shop", "--slug", "third", "--title", "Third")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = admin("links", "create", "shop", "--slug", "fourth", "--title", "Fourth")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Plan limit exceeded: the owner's plan allows 3 payment links (HTTP 403)")
}

// "webhooks redeliver" asks for an event to be sent again; an unknown
// event is refused with the API's message. (This API has no workflow
// client: the event is left pending for the reconciler.)
func TestAdminWebhooksRedeliver(t *testing.T) {
	pool := storetest.NewPool(t)
	admin, _ := adminEnvOn(t, pool)
	code, _, errOut := admin("accounts", "create", "--email", "owner@example.com")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = admin("projects", "create", "--slug", "shop", "--owner-email", "owner@example.com")
	require.Equal(t, 0, code, errOut)
	ctx := context.Background()
	var eventID string
	require.NoError(t, pool.QueryRow(ctx, `
		WITH p AS (
			INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at)
			SELECT gen_random_uuid(), id, 'per_payment', 'ERC20', 'USDT', '0x1111111111111111111111111111111111111111', 10000000, 6, 'u', now()
			FROM projects WHERE slug = 'shop' RETURNING id, project_id)
		INSERT INTO webhook_events (event_id, project_id, payment_id, event, sequence, payload, state)
		SELECT gen_random_uuid(), project_id, id, 'payment.expired', 1, '{}', 'failed' FROM p
		RETURNING event_id::text`).Scan(&eventID))

	code, out, errOut := admin("webhooks", "redeliver", "shop", eventID)
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `{"success": true}`, out)
	var state string
	require.NoError(t, pool.QueryRow(ctx, `SELECT state FROM webhook_events WHERE event_id = $1`, eventID).Scan(&state))
	assert.Equal(t, "pending", state)

	code, _, errOut = admin("webhooks", "redeliver", "shop", "00000000-0000-4000-8000-000000000001")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Event not found (HTTP 404)")
	code, _, errOut = admin("webhooks", "redeliver", "shop")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "the project's slug and the event_id are required")
}
