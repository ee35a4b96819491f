package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

func TestTemporalServeConfig(t *testing.T) {
	cfg, err := loadTemporalServeConfig(envOf(map[string]string{
		"PAYWATCH_TEMPORAL_DATABASE_URL": "postgres://u:secret@db.internal/temporal?sslmode=require",
	}))
	require.NoError(t, err)
	assert.Equal(t, "postgres://u:secret@db.internal/temporal_visibility?sslmode=require", cfg.VisibilityURL)
	assert.Equal(t, "127.0.0.1:7233", cfg.ListenAddr)
	assert.Equal(t, "127.0.0.1:8233", cfg.UIAddr)
	assert.Equal(t, "default", cfg.Namespace)
	assert.Empty(t, cfg.MetricsAddr, "off unless set, as outside dev")
	assert.Equal(t, DefaultTemporalHistoryCacheSize, cfg.HistoryCacheSize)

	cfg, err = loadTemporalServeConfig(envOf(map[string]string{
		"PAYWATCH_TEMPORAL_DATABASE_URL": "postgres://u@db/t", "PAYWATCH_TEMPORAL_UI_ADDR": "off",
		"PAYWATCH_TEMPORAL_LISTEN_ADDR": "0.0.0.0:7233", "TEMPORAL_NAMESPACE": "shop", "PAYWATCH_METRICS_ADDR": "0.0.0.0:8000",
	}))
	require.NoError(t, err)
	assert.Empty(t, cfg.UIAddr)
	assert.Equal(t, "0.0.0.0:7233", cfg.ListenAddr)
	assert.Equal(t, "shop", cfg.Namespace)
	assert.Equal(t, "0.0.0.0:8000", cfg.MetricsAddr)

	// Every problem is named at once.
	_, err = loadTemporalServeConfig(envOf(map[string]string{"PAYWATCH_TEMPORAL_LISTEN_ADDR": "7233", "PAYWATCH_LOG_LEVEL": "loud"}))
	require.Error(t, err)
	for _, want := range []string{"PAYWATCH_TEMPORAL_DATABASE_URL is required", "PAYWATCH_TEMPORAL_LISTEN_ADDR", "PAYWATCH_LOG_LEVEL"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = loadTemporalServeConfig(envOf(map[string]string{"PAYWATCH_TEMPORAL_DATABASE_URL": "postgres://u@db/"}))
	assert.ErrorContains(t, err, "names no database")

	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"temporal"}, envOf(nil), &out, &errOut))
	assert.Contains(t, errOut.String(), "Usage: paywatch temporal serve")
	errOut.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"temporal", "serve"}, envOf(nil), &out, &errOut))
	assert.Contains(t, errOut.String(), "PAYWATCH_TEMPORAL_DATABASE_URL is required")
}

// One `paywatch temporal serve` per database: a second waits for the lock,
// then gives up; the lock goes with the first one's connection.
func TestTemporalServeLock(t *testing.T) {
	url := storetest.NewDatabase(t)
	ctx := context.Background()
	first, err := lockTemporalDatabase(ctx, url)
	require.NoError(t, err)
	defer func(d time.Duration) { temporalLockWait = d }(temporalLockWait)
	temporalLockWait = time.Second
	_, err = lockTemporalDatabase(ctx, url)
	assert.ErrorContains(t, err, "another paywatch temporal serve is running on "+store.Redact(url))
	require.NoError(t, first.Close(ctx))
	second, err := lockTemporalDatabase(ctx, url)
	require.NoError(t, err)
	defer second.Close(ctx)

	// A server whose lock connection is gone stops (and its restart waits
	// for the lock again).
	defer func(d time.Duration) { temporalLockCheck = d }(temporalLockCheck)
	temporalLockCheck = 50 * time.Millisecond
	pid := second.PgConn().PID()
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	require.NoError(t, err)
	assert.Error(t, holdLock(ctx, second))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.NoError(t, holdLock(cctx, admin), "a server that stops gives the lock back quietly")
}

func TestDevnetServeOutput(t *testing.T) {
	out := devnetEnv([]devnet.NetworkStatus{
		{Network: "TRC20", RPCURL: "127.0.0.1:5000", Tokens: map[paywatch.Token]string{"USDT": devnet.TronUSDTContract}},
		{Network: "ERC20", RPCURL: "http://127.0.0.1:5001", Tokens: map[paywatch.Token]string{"USDT": "0xT", "USDC": "0xC"}},
	}, "a block every 1s", "127.0.0.1:8090")
	assert.Equal(t, map[string]string{
		"PAYWATCH_TRC20_RPC_URL":       "127.0.0.1:5000",
		"PAYWATCH_TRC20_USDT_CONTRACT": devnet.TronUSDTContract,
		"PAYWATCH_ERC20_RPC_URL":       "http://127.0.0.1:5001",
		"PAYWATCH_ERC20_USDT_CONTRACT": "0xT",
		"PAYWATCH_ERC20_USDC_CONTRACT": "0xC",
	}, parseEnvLines(out), "an env file for paywatch serve, api and worker")
	assert.Contains(t, out, "# paywatch devnet serve: devnet chains (a block every 1s); devnet endpoints at http://127.0.0.1:8090/devnet")

	// The devnet endpoints answer loopback hosts only (no DNS rebinding).
	h := loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for host, want := range map[string]int{
		"127.0.0.1:8090": http.StatusTeapot, "localhost:8090": http.StatusTeapot, "[::1]:8090": http.StatusTeapot,
		"evil.example:8090": http.StatusNotFound, "10.0.0.1:8090": http.StatusNotFound,
	} {
		req := httptest.NewRequest("GET", "/devnet", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, want, rec.Code, host)
	}
}
