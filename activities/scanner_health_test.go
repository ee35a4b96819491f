package activities_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// The scanner counts its failed polls in PostgreSQL, where /health reads
// them in whichever process serves it: a provider that fails every call
// leaves a failure record naming the network, with a redacted last error;
// the first poll that works again clears it.
func TestScannerRecordsFailingPollsForHealth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}, BlockInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	defer d.Close()
	st, _ := d.Network(n)
	// The provider: the devnet chain behind a switch that answers 503.
	upstream, err := url.Parse(st.RPCURL)
	require.NoError(t, err)
	var down atomic.Bool
	forward := httputil.NewSingleHostReverseProxy(upstream)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		r.URL.Path = upstream.Path
		forward.ServeHTTP(w, r)
	}))
	defer provider.Close()
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{provider.URL + "/v2/api-key-in-path"}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)
	// A payment waits, so the scanner follows the head (an idle one stays
	// chains.RecentBlocks behind it and would show no progress here).
	db.watch(t, n, paywatch.USDT, randomAddress(t, n), 1)
	logs := &levelCount{}
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: &signalLog{}, Logger: slog.New(logs),
		PollInterval: map[paywatch.Network]time.Duration{n: 50 * time.Millisecond},
	})
	status := func() store.ChainStatus {
		t.Helper()
		all, err := db.store.ChainStatus(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		return all[0]
	}

	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 300 * time.Millisecond}, nil)
	require.NoError(t, err)
	healthy := status()
	assert.Positive(t, healthy.Scanned)
	assert.Zero(t, healthy.FailedPolls)
	assert.True(t, healthy.FailingSince.IsZero())

	// Every endpoint fails: polls back off 1 s, 2 s, 4 s…, each counted.
	// The third failing poll comes about 3 s in (later on a loaded
	// machine); the next not before 7 s.
	down.Store(true)
	before := time.Now()
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 5500 * time.Millisecond}, nil)
	require.NoError(t, err)
	failing := status()
	assert.GreaterOrEqual(t, failing.FailedPolls, 3, "%+v", failing)
	assert.WithinRange(t, failing.FailingSince, before.Add(-time.Second), time.Now())
	assert.Contains(t, failing.LastError, "rpc endpoints unavailable")
	assert.Contains(t, failing.LastError, "503")
	assert.Equal(t, healthy.Scanned, failing.Scanned, "no progress meanwhile")
	assert.Equal(t, 1, logs.count(slog.LevelError), "one ERROR when the scanner became failing")

	// A scanner of a later run (another worker, after a restart) clears
	// the record with its first good poll.
	down.Store(false)
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 300 * time.Millisecond}, nil)
	require.NoError(t, err)
	recovered := status()
	assert.Zero(t, recovered.FailedPolls)
	assert.True(t, recovered.FailingSince.IsZero())
	assert.Empty(t, recovered.LastError)
	assert.Greater(t, recovered.Scanned, healthy.Scanned)
}

// A scanner whose only endpoint was never reachable has no cursor, and is
// reported all the same.
func TestScannerThatNeverReachedItsChainIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.ERC20
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/v2/api-key-in-path"
	dead.Close()
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{deadURL}})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: &signalLog{}})
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 1500 * time.Millisecond}, nil)
	require.NoError(t, err)
	_, ok, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	require.False(t, ok, "never scanned")
	all, err := db.store.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, n, all[0].Network)
	assert.GreaterOrEqual(t, all[0].FailedPolls, 2)
	assert.Contains(t, all[0].LastError, "connection refused")
	assert.NotContains(t, all[0].LastError, "api-key-in-path", "the endpoint's URL is redacted")
}

// A failing scanner logs at ERROR once when /health starts calling it
// failing, then every 100th failed poll; at WARN its first failure, a
// changed error and every tenth; nothing else.
func TestScannerFailureLogLevels(t *testing.T) {
	t.Parallel()
	var errors, warns []int
	for fails := 1; fails <= 300; fails++ {
		level, ok := activities.FailureLevel(fails, false)
		switch {
		case ok && level == slog.LevelError:
			errors = append(errors, fails)
		case ok && level == slog.LevelWarn:
			warns = append(warns, fails)
		case ok:
			t.Errorf("failure %d logged at %v", fails, level)
		}
	}
	assert.Equal(t, []int{paywatch.FailingPolls, 100, 200, 300}, errors)
	assert.Equal(t, 1, warns[0])
	assert.Equal(t, 10, warns[1])
	assert.NotContains(t, warns, paywatch.FailingPolls)
	level, ok := activities.FailureLevel(7, true)
	assert.True(t, ok, "a changed error is logged")
	assert.Equal(t, slog.LevelWarn, level)
}

// levelCount is a slog.Handler that counts the records at each level.
type levelCount struct {
	mu     sync.Mutex
	counts map[slog.Level]int
}

func (h *levelCount) Enabled(context.Context, slog.Level) bool { return true }

func (h *levelCount) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[slog.Level]int{}
	}
	h.counts[r.Level]++
	return nil
}

func (h *levelCount) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelCount) WithGroup(string) slog.Handler      { return h }

func (h *levelCount) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[l]
}

// A provider that echoes the caller's key in its refusals, over TRON's
// HTTP API with the key in a header and in the URL's path: neither the
// scanner's logs nor its failure record (what /health shows) carry it.
func TestScannerHealthAndLogsNeverShowAKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const key = "c2f1e0d9-8b7a-4655-a4b3-c2d1e0f9a8b7"
	n := paywatch.TRC20
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"Error":"ApiKey ` + r.Header.Get("TRON-PRO-API-KEY") + ` not valid for ` + r.URL.Path + `"}`))
	}))
	defer echo.Close()
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{echo.URL + "/" + key},
		Headers: []http.Header{{"TRON-PRO-API-KEY": {key}}}})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)
	var logged strings.Builder
	var mu sync.Mutex
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: &signalLog{},
		Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logged.Write(p)
		}), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 1500 * time.Millisecond}, nil)
	require.NoError(t, err)
	all, err := db.store.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Contains(t, all[0].LastError, "HTTP 401", "the refusal is recorded")
	assert.NotContains(t, all[0].LastError, key)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logged.String(), "HTTP 401")
	assert.NotContains(t, logged.String(), key)
}

// writerFunc is a function as an io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
