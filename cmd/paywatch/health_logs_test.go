package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/api"
)

// chainOf returns the /health entry of network n.
func chainOf(h api.HealthResponse, n paywatch.Network) (api.ChainStatus, bool) {
	for _, ch := range h.Chains {
		if ch.Network == string(n) {
			return ch, true
		}
	}
	return api.ChainStatus{}, false
}

// /health on `paywatch dev` names a network whose RPC endpoints all fail
// (ERC20 points at an address nobody listens on) and one whose scanner is
// more than PAYWATCH_MAX_LAG_BLOCKS behind its head (BEP20, its cursor
// moved back by hand), and calls every other scanner ok.
func TestDevHealthNamesLaggingAndFailingScanners(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	cfg.RPCURLs = map[paywatch.Network][]string{paywatch.ERC20: {"http://" + freeAddr(t) + "/v3/rpc-key-in-path"}}
	cfg.DevnetBlockInterval = 0 // blocks only for transfers: the cursors stay where the test puts them
	cfg.MaxLagBlocks = 50
	m, out := startMain(t, cfg, nil)

	var h api.HealthResponse
	require.Eventually(t, func() bool {
		var status int
		status, h = getHealth(t, m.APIAddr())
		erc, _ := chainOf(h, paywatch.ERC20)
		bep, _ := chainOf(h, paywatch.BEP20)
		return status == http.StatusOK && erc.Status == api.ChainFailing && bep.Status == api.ChainOK && bep.Scanned > 0
	}, 30*time.Second, 250*time.Millisecond, "ERC20 never failing: %+v\n%s", h, out.String())
	assert.Equal(t, "degraded", h.Status)
	erc, _ := chainOf(h, paywatch.ERC20)
	assert.GreaterOrEqual(t, erc.FailedPolls, api.FailingPolls)
	require.NotNil(t, erc.FailingSince)
	require.Len(t, h.Problems, 1, h.Problems)
	assert.Contains(t, h.Problems[0], "ERC20 scanner failing")
	for _, ch := range h.Chains {
		if ch.Network != string(paywatch.ERC20) {
			assert.Equal(t, api.ChainOK, ch.Status, ch.Network)
		}
	}
	assert.NotContains(t, out.String(), "rpc-key-in-path", "the endpoint's key stays out of the log")

	// BEP20 falls 60 blocks behind its head: more than the 50 allowed.
	ctx := context.Background()
	_, err := m.pool.Exec(ctx, `UPDATE chain_cursors SET head = height + 60 WHERE network = 'BEP20'`)
	require.NoError(t, err)
	_, h = getHealth(t, m.APIAddr())
	assert.Equal(t, "degraded", h.Status)
	bep, _ := chainOf(h, paywatch.BEP20)
	assert.Equal(t, api.ChainLagging, bep.Status)
	assert.Equal(t, uint64(60), bep.LagBlocks)
	assert.Contains(t, h.Problems, "BEP20 scanner lagging: 60 blocks behind the head (more than 50)")

	// 50 behind is within the limit.
	_, err = m.pool.Exec(ctx, `UPDATE chain_cursors SET head = height + 50 WHERE network = 'BEP20'`)
	require.NoError(t, err)
	_, h = getHealth(t, m.APIAddr())
	bep, _ = chainOf(h, paywatch.BEP20)
	assert.Equal(t, api.ChainOK, bep.Status)
	require.Len(t, h.Problems, 1, "only ERC20 is left: %v", h.Problems)
}

// csrfIn finds a page's form token.
var csrfIn = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// dashVisitor is a browser without JavaScript: cookies, redirects, forms.
type dashVisitor struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func (v *dashVisitor) page(resp *http.Response, err error) (int, string) {
	v.t.Helper()
	require.NoError(v.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := csrfIn.FindSubmatch(b); m != nil {
		v.csrf = string(m[1])
	}
	return resp.StatusCode, string(b)
}

func (v *dashVisitor) get(path string) (int, string) { return v.page(v.http.Get(v.base + path)) }

func (v *dashVisitor) post(path string, fields map[string]string) (int, string) {
	form := url.Values{"csrf": {v.csrf}}
	for k, f := range fields {
		form.Set(k, f)
	}
	return v.page(v.http.PostForm(v.base+path, form))
}

// waitDevMail returns the text of the newest dev-outbox e-mail to addr
// whose subject contains subject.
func waitDevMail(t *testing.T, base, to, subject string) string {
	t.Helper()
	var text string
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/dev/mail")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var box struct {
			Messages []struct{ To, Subject, Text string }
		}
		if json.NewDecoder(resp.Body).Decode(&box) != nil {
			return false
		}
		for _, msg := range box.Messages {
			if msg.To == to && strings.Contains(msg.Subject, subject) {
				text = msg.Text
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "no e-mail to %s about %q", to, subject)
	return text
}

// A payment's whole life on `paywatch dev` with the log at DEBUG: an
// operator sets up an account and a project, the owner sets a password
// from the e-mailed link and signs in to the dashboard, the merchant's
// backend creates a payment that a devnet transfer pays, and the signed
// webhook arrives; meanwhile ERC20's RPC endpoint (its key in the URL) is
// down. None of the secrets involved appears in the log.
func TestNoSecretInTheDebugLog(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	cfg.LogLevel = "debug"
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	cfg.RPCURLs = map[paywatch.Network][]string{paywatch.ERC20: {"http://rpc-user:rpc-password@" + freeAddr(t) + "/v3/rpc-key-in-path?key=rpc-key-in-query"}}
	stdout, logs := &syncBuffer{}, &syncBuffer{}
	m := NewMain(cfg, stdout, logs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, m.Run(ctx), logs.String())
	t.Cleanup(func() { _ = m.Close() })
	base := "http://" + m.APIAddr()
	c := apiClient{t: t, base: base}
	masterKey := m.Config.MasterKey
	master := map[string]string{"x-master-key": masterKey}

	sink := &webhookSink{}
	receiver := httptest.NewServer(sink)
	t.Cleanup(receiver.Close)

	const owner, password = "owner@shop.test", "correct horse battery staple"
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": owner, "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{
		"name": "Shop", "slug": "shop", "owner_email": owner, "webhook_url": receiver.URL + "/hooks",
	})
	require.Equal(t, http.StatusCreated, code, body)
	apiKey := body["api_key"].(string)
	webhookSecret := body["webhook_secret"].(string)
	sink.mu.Lock()
	sink.secret = webhookSecret
	sink.mu.Unlock()
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{
		"name": "main", "xpubs": map[string]any{"evm": accountXPub(t, 60), "tron": accountXPub(t, 195)},
	})
	require.Equal(t, http.StatusOK, code, body)
	// A wrong key is refused without being written down either.
	code, _ = c.do("GET", "/v1/payments", map[string]string{"x-api-key": "pk_wrong-key-typed-by-hand"}, nil)
	require.Equal(t, http.StatusUnauthorized, code)

	// The owner sets a password from the e-mail and signs in.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	v := &dashVisitor{t: t, base: base, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	link := regexp.MustCompile(`/dashboard/password/reset\?token=([A-Za-z0-9_-]+)`).FindStringSubmatch(
		waitDevMail(t, base, owner, "Set your paywatch password"))
	require.NotNil(t, link)
	resetToken := link[1]
	code, _ = v.get(link[0])
	require.Equal(t, http.StatusOK, code)
	code, page := v.post("/dashboard/password/reset", map[string]string{"token": resetToken, "password": password})
	require.Equal(t, http.StatusOK, code, page)
	v.get("/dashboard/login")
	code, page = v.post("/dashboard/login", map[string]string{"email": owner, "password": password})
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "Shop")
	u, _ := url.Parse(base + "/dashboard/")
	var sessionToken string
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "paywatch_session" {
			sessionToken = ck.Value
		}
	}
	require.NotEmpty(t, sessionToken, "signed in")
	csrfToken := v.csrf // the signed-in page's form token

	// The merchant's backend takes a payment; a devnet transfer pays it.
	merchant := map[string]string{"x-api-key": apiKey}
	code, body = c.do("POST", "/v1/payments", merchant, map[string]any{
		"amount": 12, "external_ref": "customer-1", "network": "BEP20", "token": "USDT",
	})
	require.Equal(t, http.StatusCreated, code, body)
	p := body["payment"].(map[string]any)
	id := p["id"].(string)
	code, _, errOut := devnetCLI(base)("send", "--network", "BEP20", "--token", "USDT", "--to", p["address"].(string), "--amount", "12")
	require.Equal(t, 0, code, errOut)
	require.Eventually(t, func() bool { return sink.find(id, "payment.completed") != nil },
		time.Minute, 100*time.Millisecond, "no payment.completed\n%s", logs.String())
	assert.Zero(t, sink.bad)
	code, _ = v.get("/dashboard")
	require.Equal(t, http.StatusOK, code)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "scan failed; retrying") },
		10*time.Second, 100*time.Millisecond, "ERC20's failures are logged")

	got := logs.String()
	require.Contains(t, got, "level=DEBUG", "the log was at DEBUG")
	require.Contains(t, got, "msg=request", "access log lines")
	for name, secret := range map[string]string{
		"API key":                  apiKey,
		"webhook secret":           webhookSecret,
		"master key":               masterKey,
		"account password":         password,
		"session token":            sessionToken,
		"CSRF token":               csrfToken,
		"password link token":      resetToken,
		"wrong API key":            "pk_wrong-key-typed-by-hand",
		"RPC URL password":         "rpc-password",
		"RPC key in the URL path":  "rpc-key-in-path",
		"RPC key in the URL query": "rpc-key-in-query",
	} {
		require.NotEmpty(t, secret, name)
		assert.NotContains(t, got, secret, "the %s is in the log", name)
	}
	assert.Contains(t, stdout.String(), "Master key   "+masterKey, "dev prints its master key on stdout, for the developer, not in the log")
}
