package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/store/storetest"
)

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// devConfig is a dev-mode configuration on private ports, a private data
// dir and a database that does not exist yet (dev creates it).
func devConfig(t testing.TB, dataDir string) Config {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL":               storetest.NewDatabaseURL(t),
		"PAYWATCH_DATA_DIR":          dataDir,
		"PAYWATCH_API_ADDR":          "127.0.0.1:0",
		"PAYWATCH_PAY_ADDR":          "127.0.0.1:0",
		"PAYWATCH_TEMPORAL_DEV_ADDR": freeAddr(t),
		"PAYWATCH_TEMPORAL_UI_ADDR":  "off",
		"PAYWATCH_METRICS_ADDR":      "127.0.0.1:0",
		"PAYWATCH_LOG_LEVEL":         "warn",
	}
	cfg, err := LoadConfig(ModeDev, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	return cfg
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startMain(t testing.TB, cfg Config, register func(worker.Registry)) (*Main, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	m := NewMain(cfg, out, out)
	m.Register = register
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		_ = m.Close()
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, out
}

func getHealth(t *testing.T, addr string) (int, api.HealthResponse) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/health")
	require.NoError(t, err)
	defer resp.Body.Close()
	var h api.HealthResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return resp.StatusCode, h
}

func TestDevHealthDrainAndShutdown(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	cfg.TemporalUIAddr = freeAddr(t)
	cfg.DrainDelay = 1500 * time.Millisecond
	m, out := startMain(t, cfg, nil)

	status, h := getHealth(t, m.APIAddr())
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", h.Status)
	assert.Equal(t, map[string]string{"database": "up", "temporal": "up"}, h.Checks)
	assert.Equal(t, version, h.Version)
	assert.GreaterOrEqual(t, h.UptimeSeconds, int64(0))

	// The pay listener answers /health too, and unknown paths get the JSON 404.
	status, _ = getHealth(t, m.PayAddr())
	assert.Equal(t, http.StatusOK, status)
	resp, err := http.Get("http://" + m.APIAddr() + "/no-such-route")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.JSONEq(t, `{"error":"Not found"}`, string(body))

	// Without PAYWATCH_SMTP_URL, dev serves its e-mail outbox.
	resp, err = http.Get("http://" + m.APIAddr() + "/dev/mail")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"messages":[]}`, string(body))

	// The start-up block names the URLs, the Temporal UI and the master key.
	printed := out.String()
	assert.Contains(t, printed, "API          "+cfg.BaseURL)
	assert.Contains(t, printed, "Pay pages    "+cfg.PayURL)
	assert.Contains(t, printed, "Temporal UI  http://"+cfg.TemporalUIAddr)
	assert.Contains(t, printed, "Master key   mk_")
	// The block the README and docs/getting-started.md show is this one.
	assertDocBannersMatch(t, printed)

	// The embedded Web UI serves its single-page app.
	resp, err = http.Get("http://" + cfg.TemporalUIAddr + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// Shutdown: /health turns 503 "draining" while the listeners are still open.
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	require.Eventually(t, func() bool {
		status, h := getHealth(t, m.APIAddr())
		return status == http.StatusServiceUnavailable && h.Status == "draining"
	}, time.Second, 20*time.Millisecond)

	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown did not finish")
	}
	_, err = http.Get("http://" + m.APIAddr() + "/health")
	assert.Error(t, err, "listener must be closed after shutdown")
}

func TestDrainFinishesInFlightRequests(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	out := &syncBuffer{}
	m := NewMain(cfg, out, out)
	entered := make(chan struct{})
	var once sync.Once
	var finished atomic.Bool
	m.extraCheck = func(ctx context.Context) error {
		once.Do(func() { close(entered) })
		time.Sleep(time.Second) // a slow dependency keeps the request in flight
		finished.Store(true)
		return nil
	}
	require.NoError(t, m.Run(context.Background()), out.String())
	t.Cleanup(func() { _ = m.Close() })

	type result struct {
		status int
		health api.HealthResponse
	}
	got := make(chan result, 1)
	go func() {
		status, h := getHealth(t, m.APIAddr())
		got <- result{status, h}
	}()
	<-entered
	require.NoError(t, m.Close())
	assert.True(t, finished.Load(), "Close returned before the in-flight request finished")

	r := <-got
	assert.Equal(t, http.StatusOK, r.status, "a request accepted before shutdown is answered, not cut off")
	assert.Equal(t, "up", r.health.Checks["test"])
}

// napWorkflow sleeps on a durable timer: only a server that kept its state
// across a restart can finish it.
func napWorkflow(ctx workflow.Context, d time.Duration) (string, error) {
	if err := workflow.Sleep(ctx, d); err != nil {
		return "", err
	}
	return "woke", nil
}

func registerNap(r worker.Registry) {
	r.RegisterWorkflowWithOptions(napWorkflow, workflow.RegisterOptions{Name: "test.nap"})
}

func TestWorkflowSurvivesRestart(t *testing.T) {
	dataDir := t.TempDir()
	cfg := devConfig(t, dataDir)
	m, _ := startMain(t, cfg, registerNap)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := m.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "nap", TaskQueue: cfg.TaskQueue,
	}, "test.nap", 2*time.Second)
	require.NoError(t, err)
	// Make sure the timer is recorded before the process goes away.
	require.Eventually(t, func() bool {
		d, err := m.temporal.DescribeWorkflowExecution(ctx, "nap", "")
		return err == nil && d.WorkflowExecutionInfo.GetHistoryLength() >= 5
	}, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, m.Close())

	// The timer falls due while nothing runs.
	time.Sleep(3 * time.Second)

	m2, _ := startMain(t, cfg, registerNap)
	var got string
	require.NoError(t, m2.temporal.GetWorkflow(ctx, "nap", run.GetRunID()).Get(ctx, &got))
	assert.Equal(t, "woke", got)
	_, h := getHealth(t, m2.APIAddr())
	assert.Equal(t, "ok", h.Status)
}

func TestDevRefusesTakenTemporalPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	cfg := devConfig(t, t.TempDir())
	cfg.TemporalDevAddr = l.Addr().String()
	m := NewMain(cfg, io.Discard, io.Discard)
	err = m.Run(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot listen on "+cfg.TemporalDevAddr)
	assert.Contains(t, err.Error(), "address already in use")
	require.NoError(t, m.Close())
}

func TestDevMasterKeyIsStable(t *testing.T) {
	dir := t.TempDir()
	k1, err := devMasterKey(dir)
	require.NoError(t, err)
	k2, err := devMasterKey(dir)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(k1, "mk_"))
	assert.Equal(t, k1, k2)
}

func TestMigrateCommand(t *testing.T) {
	url := storetest.NewDatabase(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"migrate"}, func(k string) string {
		if k == "DATABASE_URL" {
			return url
		}
		return ""
	}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Regexp(t, `database is at migration version [1-9]`, out.String())
}

func TestDevUsesConfiguredTemporalInsteadOfEmbedding(t *testing.T) {
	first, _ := startMain(t, devConfig(t, t.TempDir()), nil)

	cfg := devConfig(t, t.TempDir())
	cfg.TemporalAddress = first.Config.TemporalDevAddr
	cfg.TemporalDevAddr = "" // would fail to bind if anything tried to embed a server
	second, out := startMain(t, cfg, nil)
	assert.Nil(t, second.embedded, "no embedded server when TEMPORAL_ADDRESS is set")
	status, h := getHealth(t, second.APIAddr())
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "up", h.Checks["temporal"])
	assert.Contains(t, out.String(), "Temporal     "+first.Config.TemporalDevAddr)
}
