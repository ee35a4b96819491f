package main

import (
	"bytes"
	"context"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDevDefaults(t *testing.T) {
	cfg, err := LoadConfig(ModeDev, envOf(nil))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, "postgres://postgres@127.0.0.1:5432/paywatch?sslmode=disable", cfg.DatabaseURL)
	assert.True(t, cfg.EmbeddedTemporal())
	assert.Equal(t, "default", cfg.TemporalNamespace)
	assert.Equal(t, ".data", cfg.DataDir)
	assert.Equal(t, "127.0.0.1:8080", cfg.APIAddr)
	assert.Equal(t, "127.0.0.1:8081", cfg.PayAddr)
	assert.Equal(t, "http://127.0.0.1:8080", cfg.BaseURL)
	assert.Equal(t, "http://127.0.0.1:8081", cfg.PayURL)
	assert.Equal(t, "127.0.0.1:7233", cfg.TemporalDevAddr)
	assert.Equal(t, "127.0.0.1:8233", cfg.TemporalUIAddr)
	assert.True(t, cfg.WebhookAllowPrivate)
	assert.True(t, cfg.WebhookAllowHTTP)
	assert.Empty(t, cfg.TrustedProxies)
	assert.True(t, cfg.Devnet)
	assert.Equal(t, time.Second, cfg.DevnetBlockInterval)
	assert.Zero(t, cfg.DrainDelay)
}

func TestServeDefaultsAreStrict(t *testing.T) {
	cfg, err := LoadConfig(ModeServe, envOf(map[string]string{
		"DATABASE_URL":                 "postgres://db/paywatch",
		"TEMPORAL_ADDRESS":             "temporal:7233",
		"PAYWATCH_MASTER_KEY":          "mk_0123456789abcdefghijklmnop",
		"PAYWATCH_ERC20_RPC_URL":       "https://a.example, https://b.example",
		"PAYWATCH_ERC20_USDT_CONTRACT": "0xdAC17F958D2ee523a2206206994597C13D831ec7",
	}))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.False(t, cfg.WebhookAllowPrivate)
	assert.False(t, cfg.WebhookAllowHTTP, "HTTPS webhooks in production")
	assert.False(t, cfg.Devnet)
	assert.False(t, cfg.EmbeddedTemporal())
	assert.Equal(t, 5*time.Second, cfg.DrainDelay)
	assert.Equal(t, []string{"https://a.example", "https://b.example"}, cfg.RPCURLs[paywatch.ERC20])
	assert.Equal(t, "0xdAC17F958D2ee523a2206206994597C13D831ec7", cfg.Contracts[paywatch.ERC20][paywatch.USDT])
}

func TestTrustedProxies(t *testing.T) {
	cfg, err := LoadConfig(ModeServe, envOf(map[string]string{
		"PAYWATCH_TRUSTED_PROXIES": " 10.0.0.0/8, 192.168.1.7 ,fd00::/8,172.16.5.9/12",
	}))
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("fd00::/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
	}, cfg.TrustedProxies)

	_, err = LoadConfig(ModeServe, envOf(map[string]string{"PAYWATCH_TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `PAYWATCH_TRUSTED_PROXIES: "proxy.internal" is not a CIDR`)
}

func TestValidateNamesEveryProblem(t *testing.T) {
	cases := []struct {
		name string
		mode Mode
		env  map[string]string
		want []string
	}{
		{"serve without anything", ModeServe, nil,
			[]string{"DATABASE_URL is required for paywatch serve", "TEMPORAL_ADDRESS is required for paywatch serve", "PAYWATCH_MASTER_KEY is required for paywatch serve"}},
		{"api without master key", ModeAPI, map[string]string{"DATABASE_URL": "postgres://x/y", "TEMPORAL_ADDRESS": "t:7233"},
			[]string{"PAYWATCH_MASTER_KEY is required for paywatch api"}},
		{"worker needs no master key", ModeWorker, map[string]string{"TEMPORAL_ADDRESS": "t:7233"},
			[]string{"DATABASE_URL is required for paywatch worker"}},
		{"master key prefix", ModeDev, map[string]string{"PAYWATCH_MASTER_KEY": "secret-secret-secret-secret"},
			[]string{"PAYWATCH_MASTER_KEY must start with mk_"}},
		{"short master key", ModeDev, map[string]string{"PAYWATCH_MASTER_KEY": "mk_short"},
			[]string{"PAYWATCH_MASTER_KEY is too short"}},
		{"bad listener", ModeDev, map[string]string{"PAYWATCH_API_ADDR": "8080"},
			[]string{`PAYWATCH_API_ADDR: "8080" is not host:port`}},
		{"bad public URL", ModeDev, map[string]string{"PAYWATCH_PAY_URL": "ftp://pay"},
			[]string{`PAYWATCH_PAY_URL: "ftp://pay" is not an http(s) URL`}},
		{"devnet outside dev", ModeServe, map[string]string{"DATABASE_URL": "postgres://x/y", "TEMPORAL_ADDRESS": "t:7233", "PAYWATCH_MASTER_KEY": "mk_0123456789abcdefghijklmnop", "PAYWATCH_DEVNET": "true"},
			[]string{"PAYWATCH_DEVNET is only available in paywatch dev"}},
		{"log level", ModeDev, map[string]string{"PAYWATCH_LOG_LEVEL": "loud"},
			[]string{`PAYWATCH_LOG_LEVEL: "loud" is not debug, info, warn or error`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(tc.mode, envOf(tc.env))
			require.NoError(t, err)
			err = cfg.Validate()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadConfigRejectsMalformedValues(t *testing.T) {
	_, err := LoadConfig(ModeDev, envOf(map[string]string{
		"PAYWATCH_DEVNET_BLOCK_INTERVAL": "fast",
		"PAYWATCH_WEBHOOK_ALLOW_PRIVATE": "maybe",
	}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `PAYWATCH_DEVNET_BLOCK_INTERVAL: "fast" is not a duration`)
	assert.Contains(t, err.Error(), `PAYWATCH_WEBHOOK_ALLOW_PRIVATE: "maybe" is not a boolean`)
}

func TestServeRefusesToStartWithoutRequiredVariables(t *testing.T) {
	var errOut bytes.Buffer
	code := run(context.Background(), []string{"serve"}, envOf(nil), io.Discard, &errOut)
	assert.Equal(t, 2, code)
	for _, v := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "PAYWATCH_MASTER_KEY"} {
		assert.Contains(t, errOut.String(), v)
	}
}

func TestDevWithTemporalAddressStartsNoServer(t *testing.T) {
	cfg, err := LoadConfig(ModeDev, envOf(map[string]string{"TEMPORAL_ADDRESS": "temporal.internal:7233"}))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.False(t, cfg.EmbeddedTemporal(), "an operator's Temporal cluster replaces the embedded server")
	assert.True(t, cfg.Devnet, "dev keeps its devnet chains")
}

func TestMailConfig(t *testing.T) {
	cfg, err := LoadConfig(ModeDev, envOf(map[string]string{}))
	require.NoError(t, err)
	assert.Empty(t, cfg.SMTPURL, "dev keeps e-mail in the outbox")
	assert.Equal(t, "paywatch <noreply@localhost>", cfg.MailFrom)

	cfg, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_SMTP_URL": "smtps://u:p@mail.example:465", "PAYWATCH_MAIL_FROM": "Shop <pay@shop.example>"}))
	require.NoError(t, err)
	assert.Equal(t, "smtps://u:p@mail.example:465", cfg.SMTPURL)

	require.NoError(t, cfg.Validate())

	validate := func(env map[string]string) error {
		cfg, err := LoadConfig(ModeDev, envOf(env))
		require.NoError(t, err)
		return cfg.Validate()
	}
	for _, bad := range []string{"http://mail.example", "smtp://", "smtp://user:s3cret@mail.example:port", "smtp://mail.example:99999999999999999999"} {
		err := validate(map[string]string{"PAYWATCH_SMTP_URL": bad})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "PAYWATCH_SMTP_URL", bad)
		assert.NotContains(t, err.Error(), "s3cret", "the password never reaches a message")
	}
	err = validate(map[string]string{"PAYWATCH_SMTP_URL": "smtp://mail.example", "PAYWATCH_MAIL_FROM": "not an address"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PAYWATCH_MAIL_FROM")
}

func TestTelegramConfig(t *testing.T) {
	cfg, err := LoadConfig(ModeDev, envOf(map[string]string{}))
	require.NoError(t, err)
	assert.Empty(t, cfg.TelegramBotToken, "chat notifications are off by default")
	assert.Equal(t, "https://api.telegram.org", cfg.TelegramAPIURL)

	validate := func(env map[string]string) error {
		cfg, err := LoadConfig(ModeDev, envOf(env))
		require.NoError(t, err)
		return cfg.Validate()
	}
	require.NoError(t, validate(map[string]string{"PAYWATCH_TELEGRAM_BOT_TOKEN": "123456:ABC-def_ghi", "PAYWATCH_TELEGRAM_API_URL": "http://127.0.0.1:9999/"}))
	err = validate(map[string]string{"PAYWATCH_TELEGRAM_API_URL": "api.telegram.org"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PAYWATCH_TELEGRAM_API_URL")
	err = validate(map[string]string{"PAYWATCH_TELEGRAM_BOT_TOKEN": "123456:secret part/with slash"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret part", "the token never reaches a message")
}

func TestCacheSizes(t *testing.T) {
	cfg, err := LoadConfig(ModeDev, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 1000, cfg.WorkflowCacheSize, "the SDK's 10,000 would keep 10,000 open payments in memory")
	assert.Equal(t, 1000, cfg.TemporalHistoryCacheSize, "the server's 128,000 would keep every recently active payment in memory")

	cfg, err = LoadConfig(ModeWorker, envOf(map[string]string{
		"PAYWATCH_WORKFLOW_CACHE_SIZE":         " 5000 ",
		"PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE": "20_000",
	}))
	require.NoError(t, err)
	assert.Equal(t, 5000, cfg.WorkflowCacheSize)
	assert.Equal(t, 20000, cfg.TemporalHistoryCacheSize)

	cfg, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_WORKFLOW_CACHE_SIZE": "0"}))
	require.NoError(t, err)
	assert.Zero(t, cfg.WorkflowCacheSize, "0 turns the worker's cache off")

	for env, want := range map[string]string{
		"PAYWATCH_WORKFLOW_CACHE_SIZE":         `PAYWATCH_WORKFLOW_CACHE_SIZE: "-1" is not a whole number of at least 0`,
		"PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE": `PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE: "-1" is not a whole number of at least 100`,
	} {
		_, err := LoadConfig(ModeDev, envOf(map[string]string{env: "-1"}))
		require.Error(t, err, env)
		assert.Contains(t, err.Error(), want)
	}
	_, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE": "50"}))
	require.Error(t, err, "a cache full of workflows in use fails requests")
	assert.Contains(t, err.Error(), `PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE: "50" is not a whole number of at least 100`)
	_, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_WORKFLOW_CACHE_SIZE": "lots"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `PAYWATCH_WORKFLOW_CACHE_SIZE: "lots" is not a whole number`)
}

func TestMaxLagBlocks(t *testing.T) {
	cfg, err := LoadConfig(ModeServe, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, uint64(100), cfg.MaxLagBlocks)

	cfg, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_MAX_LAG_BLOCKS": " 2500 "}))
	require.NoError(t, err)
	assert.Equal(t, uint64(2500), cfg.MaxLagBlocks)
	cfg, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_MAX_LAG_BLOCKS": "10_000"}))
	require.NoError(t, err, "underscores group digits, as in the other counts")
	assert.Equal(t, uint64(10000), cfg.MaxLagBlocks)

	for _, bad := range []string{"0", "-5", "lots", "1.5", "99999999999999999999"} {
		_, err := LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_MAX_LAG_BLOCKS": bad}))
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), `PAYWATCH_MAX_LAG_BLOCKS: "`+bad+`" is not a whole number of at least 1`)
	}
}

func TestMetricsAddr(t *testing.T) {
	cfg, err := LoadConfig(ModeDev, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9090", cfg.MetricsAddr, "dev serves /metrics on loopback")
	assert.True(t, cfg.MetricsAddrDefault, "dev's default: a taken port is a warning")

	for _, mode := range []Mode{ModeServe, ModeAPI, ModeWorker} {
		cfg, err := LoadConfig(mode, envOf(nil))
		require.NoError(t, err)
		assert.Empty(t, cfg.MetricsAddr, "%s: off unless set", mode)
	}
	cfg, err = LoadConfig(ModeWorker, envOf(map[string]string{"PAYWATCH_METRICS_ADDR": " 0.0.0.0:9464 "}))
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0:9464", cfg.MetricsAddr)
	assert.False(t, cfg.MetricsAddrDefault)
	cfg, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_METRICS_ADDR": "127.0.0.1:9090"}))
	require.NoError(t, err)
	assert.False(t, cfg.MetricsAddrDefault, "set explicitly, even to the default: a taken port is fatal")
	cfg, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_METRICS_ADDR": "off"}))
	require.NoError(t, err)
	assert.Empty(t, cfg.MetricsAddr)

	cfg, err = LoadConfig(ModeDev, envOf(map[string]string{"PAYWATCH_METRICS_ADDR": "9090"}))
	require.NoError(t, err)
	err = cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `PAYWATCH_METRICS_ADDR: "9090" is not host:port (or off)`)
}

// PAYWATCH_<NETWORK>_RPC_HEADERS go to every endpoint of the network, and
// _<N> adds or replaces headers of the N-th; values are percent-decoded;
// a malformed list is refused without echoing its values.
func TestRPCHeaders(t *testing.T) {
	cfg, err := LoadConfig(ModeServe, envOf(map[string]string{
		"PAYWATCH_TRC20_RPC_URL":       "https://api.trongrid.io,grpcs://grpc.example:443",
		"PAYWATCH_TRC20_RPC_HEADERS":   "TRON-PRO-API-KEY=k1, X-Team=a%2Cb",
		"PAYWATCH_TRC20_RPC_HEADERS_2": "Authorization=Bearer%20t2,TRON-PRO-API-KEY=k2",
		"PAYWATCH_ERC20_RPC_URL":       "https://mainnet.infura.io/v3/key",
	}))
	require.NoError(t, err)
	require.Len(t, cfg.RPCHeaders[paywatch.TRC20], 2)
	first, second := cfg.RPCHeaders[paywatch.TRC20][0], cfg.RPCHeaders[paywatch.TRC20][1]
	assert.Equal(t, "k1", first.Get("Tron-Pro-Api-Key"))
	assert.Equal(t, "a,b", first.Get("X-Team"))
	assert.Empty(t, first.Get("Authorization"))
	assert.Equal(t, "k2", second.Get("Tron-Pro-Api-Key"), "the endpoint's own value wins")
	assert.Equal(t, "Bearer t2", second.Get("Authorization"))
	assert.Equal(t, "a,b", second.Get("X-Team"))
	assert.Nil(t, cfg.RPCHeaders[paywatch.ERC20], "no headers: nil")

	for env, msg := range map[string]string{
		"PAYWATCH_TRC20_RPC_HEADERS=secret-without-name":  "PAYWATCH_TRC20_RPC_HEADERS: entry 1 is not Name=value",
		"PAYWATCH_TRC20_RPC_HEADERS=Bad Name=secret":      "PAYWATCH_TRC20_RPC_HEADERS: entry 1 is not Name=value",
		"PAYWATCH_TRC20_RPC_HEADERS_3=X-Key=secret":       "PAYWATCH_TRC20_RPC_HEADERS_3 is set, but PAYWATCH_TRC20_RPC_URL has 2 endpoints",
		"PAYWATCH_TRC20_RPC_HEADERS_1=X-Key=secret%zz":    "PAYWATCH_TRC20_RPC_HEADERS_1: the value of X-Key is not valid",
		"PAYWATCH_TRC20_RPC_HEADERS=X-Key=secret%0d%0aX:": "PAYWATCH_TRC20_RPC_HEADERS: the value of X-Key is not valid",
		"PAYWATCH_TRC20_RPC_HEADERS=X-Key=":               "PAYWATCH_TRC20_RPC_HEADERS: the value of X-Key is not valid",
		"PAYWATCH_TRC20_RPC_HEADERS=X~Key=secret":         "PAYWATCH_TRC20_RPC_HEADERS: entry 1 is not Name=value",
		"PAYWATCH_TRC20_RPC_HEADERS_5=X-Key=secret":       "PAYWATCH_TRC20_RPC_HEADERS_5 is set, but PAYWATCH_TRC20_RPC_URL has 2 endpoints",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := LoadConfig(ModeServe, envOf(map[string]string{"PAYWATCH_TRC20_RPC_URL": "https://a.example,https://b.example", k: v}))
		require.Error(t, err, env)
		assert.Contains(t, err.Error(), msg)
		assert.NotContains(t, err.Error(), "secret")
	}
}

// PAYWATCH_<NETWORK>_POLL_INTERVAL and _IDLE_POLL_INTERVAL set a network's
// scanner pace; a malformed one is refused by name.
func TestPollIntervals(t *testing.T) {
	cfg, err := LoadConfig(ModeServe, envOf(map[string]string{
		"PAYWATCH_BEP20_POLL_INTERVAL":      "1s",
		"PAYWATCH_ERC20_IDLE_POLL_INTERVAL": "5m",
	}))
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Network]time.Duration{paywatch.BEP20: time.Second}, cfg.PollIntervals)
	assert.Equal(t, map[paywatch.Network]time.Duration{paywatch.ERC20: 5 * time.Minute}, cfg.IdlePollIntervals)
	_, err = LoadConfig(ModeServe, envOf(map[string]string{"PAYWATCH_TRC20_POLL_INTERVAL": "soon"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `PAYWATCH_TRC20_POLL_INTERVAL: "soon" is not a duration`)
}

// PAYWATCH_<NETWORK>_DAILY_BUDGET sets a network's daily RPC budget
// (underscores group digits); anything but a positive whole number is
// refused by name.
func TestDailyBudgets(t *testing.T) {
	cfg, err := LoadConfig(ModeServe, envOf(map[string]string{"PAYWATCH_TRC20_DAILY_BUDGET": "90_000"}))
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Network]uint64{paywatch.TRC20: 90_000}, cfg.DailyBudgets)
	for _, bad := range []string{"lots", "0", "-5", "1.5"} {
		_, err = LoadConfig(ModeServe, envOf(map[string]string{"PAYWATCH_BEP20_DAILY_BUDGET": bad}))
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "PAYWATCH_BEP20_DAILY_BUDGET: ")
	}
}

// PAYWATCH_<NETWORK>_QUORUM asks that many of the network's endpoints to
// agree (chains.Config.Quorum); it must be a whole number from 1 to the
// number of its RPC URLs, and a bad one is refused by name.
func TestQuorum(t *testing.T) {
	cfg, err := LoadConfig(ModeServe, envOf(map[string]string{
		"PAYWATCH_ERC20_RPC_URL": "https://a.example,https://b.example,https://c.example",
		"PAYWATCH_ERC20_QUORUM":  " 2 ",
		"PAYWATCH_BEP20_RPC_URL": "https://a.example",
		"PAYWATCH_BEP20_QUORUM":  "1",
		"PAYWATCH_TRC20_RPC_URL": "grpc.example:50051",
	}))
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Network]int{paywatch.ERC20: 2, paywatch.BEP20: 1}, cfg.Quorums)
	assert.Equal(t, 2, providerConfig(cfg, paywatch.ERC20).Quorum)
	assert.Zero(t, providerConfig(cfg, paywatch.TRC20).Quorum, "not set: one endpoint at a time")

	for env, msg := range map[string]string{
		"PAYWATCH_ERC20_QUORUM=3":   "PAYWATCH_ERC20_QUORUM is 3, but PAYWATCH_ERC20_RPC_URL has 2 distinct endpoints",
		"PAYWATCH_ERC20_QUORUM=0":   `PAYWATCH_ERC20_QUORUM: "0" is not a whole number of at least 1`,
		"PAYWATCH_ERC20_QUORUM=-1":  `PAYWATCH_ERC20_QUORUM: "-1" is not a whole number of at least 1`,
		"PAYWATCH_ERC20_QUORUM=two": `PAYWATCH_ERC20_QUORUM: "two" is not a whole number of at least 1`,
		"PAYWATCH_ERC20_QUORUM=1.5": `PAYWATCH_ERC20_QUORUM: "1.5" is not a whole number of at least 1`,
		"PAYWATCH_POLYGON_QUORUM=2": "PAYWATCH_POLYGON_QUORUM is 2, but PAYWATCH_POLYGON_RPC_URL has 0 distinct endpoints",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := LoadConfig(ModeServe, envOf(map[string]string{"PAYWATCH_ERC20_RPC_URL": "https://a.example,https://b.example", k: v}))
		require.Error(t, err, env)
		assert.Contains(t, err.Error(), msg, env)
	}
	_, err = LoadConfig(ModeServe, envOf(map[string]string{
		"PAYWATCH_ERC20_RPC_URL": "https://a.example,https://a.example", "PAYWATCH_ERC20_QUORUM": "2"}))
	require.Error(t, err, "one node twice is no quorum")
	assert.Contains(t, err.Error(), "has 1 distinct endpoints")
}
