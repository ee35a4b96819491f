package api_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

// logLines is a JSON log, one record a line, safe for the server's goroutines.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// records returns the records whose msg is msg.
func (l *logLines) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// Every request gets one access log line with its route pattern (never
// its path or query), status, duration and request id, and the id comes
// back as X-Request-Id. A trusted proxy's well-formed X-Request-Id is kept;
// a client's is not.
func TestAccessLogLinePerRequest(t *testing.T) {
	t.Parallel()
	logs := &logLines{}
	pool := storetest.NewPool(t)
	proxy := netip.MustParsePrefix("10.0.0.0/8")
	s := api.New(api.Deps{
		Version:        "test",
		Logger:         slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Store:          store.New(pool),
		MasterKey:      testMasterKey,
		BaseURL:        "https://" + apiHost,
		PayURL:         payURL,
		TrustedProxies: []netip.Prefix{proxy},
		Dashboard:      true,
	})
	call := func(method, target, host, peer string, header map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		req.Host = host
		req.RemoteAddr = peer + ":4321"
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return serve(t, s.API(), apiListener, req)
	}
	const paymentID = "5b0c3f5e-6a8e-4d0e-9a8e-0f6c1d2b3a49"
	const token = "tok_very-secret-reset-token"
	answers := []*httptest.ResponseRecorder{
		call("GET", "/v1/payments/"+paymentID, apiHost, testIP, map[string]string{"x-api-key": "pk_wrong"}),
		call("GET", "/dashboard/password/reset?token="+token, apiHost, testIP, nil),
		call("GET", "/no-such-route", apiHost, testIP, nil),
		call("GET", "/v1/config", "elsewhere.test", testIP, nil), // the host rule's 404
		call("GET", "/health", apiHost, testIP, nil),
		call("GET", "/health", apiHost, "10.1.2.3", map[string]string{"X-Request-Id": "lb-7f3e2a.1"}),
		call("GET", "/health", apiHost, testIP, map[string]string{"X-Request-Id": "client-chosen"}),
		call("GET", "/health", apiHost, "10.1.2.3", map[string]string{"X-Request-Id": "bad id\nlevel=ERROR"}),
	}
	lines := logs.records(t, "request")
	require.Len(t, lines, len(answers), logs.String())
	want := []struct {
		route  string
		status int
		level  string
	}{
		{"/v1/payments/:id", 401, "INFO"},
		{"/dashboard/password/reset", 200, "INFO"},
		{"", 404, "INFO"},
		{"", 404, "INFO"},
		{"/health", 200, "DEBUG"},
		{"/health", 200, "DEBUG"},
		{"/health", 200, "DEBUG"},
		{"/health", 200, "DEBUG"},
	}
	ids := map[string]bool{}
	for i, line := range lines {
		id := answers[i].Header().Get("X-Request-Id")
		require.NotEmpty(t, id, "answer %d carries its request id", i)
		assert.Equal(t, id, line["requestId"], "line %d", i)
		assert.Equal(t, want[i].route, line["route"], "line %d", i)
		assert.Equal(t, float64(want[i].status), line["status"], "line %d", i)
		assert.Equal(t, float64(answers[i].Code), line["status"], "line %d: the status sent", i)
		assert.Equal(t, want[i].level, line["level"], "line %d", i)
		assert.Equal(t, "GET", line["method"])
		assert.Contains(t, line, "durationMs")
		assert.Contains(t, line, "bytes")
		assert.Contains(t, line, "clientIp")
		ids[id] = true
	}
	assert.Len(t, ids, len(lines), "every request has its own id")
	assert.Equal(t, "lb-7f3e2a.1", answers[5].Header().Get("X-Request-Id"), "a trusted proxy's id is kept")
	assert.NotEqual(t, "client-chosen", answers[6].Header().Get("X-Request-Id"), "a client's is not")
	assert.Regexp(t, `^[0-9a-f]{32}$`, answers[6].Header().Get("X-Request-Id"))
	assert.Regexp(t, `^[0-9a-f]{32}$`, answers[7].Header().Get("X-Request-Id"), "a malformed one is replaced")
	assert.NotContains(t, logs.String(), paymentID, "paths are not logged")
	assert.NotContains(t, logs.String(), token, "queries are not logged")
	assert.NotContains(t, logs.String(), "pk_wrong")

	// A failure the client is not told about is logged with the request's id.
	pool.Close()
	r := call("GET", "/v1/payments", apiHost, testIP, map[string]string{"x-api-key": "pk_any"})
	require.Equal(t, http.StatusInternalServerError, r.Code, r.Body.String())
	failed := logs.records(t, "request failed")
	require.Len(t, failed, 1, logs.String())
	assert.Equal(t, r.Header().Get("X-Request-Id"), failed[0]["requestId"])
	lines = logs.records(t, "request")
	last := lines[len(lines)-1]
	assert.Equal(t, float64(500), last["status"])
	assert.Equal(t, "/v1/payments", last["route"])
	assert.Equal(t, r.Header().Get("X-Request-Id"), last["requestId"])
}
