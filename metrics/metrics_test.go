package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/metrics"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/webhooks"
)

// The scanner gauges are read from chain_cursors and scanner_failures at
// every scrape, for the offered networks; a network not scanned yet shows
// zeros, a failing scanner its failed polls in a row.
func TestScannerGaugesReadChainCursors(t *testing.T) {
	ctx := context.Background()
	pool := storetest.NewPool(t)
	st := store.New(pool, store.WithNetworks([]paywatch.Network{paywatch.ERC20, paywatch.TRC20}))
	m := metrics.New(nil)
	require.NoError(t, m.WatchScanners(st))

	_, err := pool.Exec(ctx, `INSERT INTO chain_cursors (network, height, head, updated_at) VALUES ('ERC20', 100, 130, '2025-03-01T12:00:00Z')`)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, st.RecordScanFailure(ctx, paywatch.TRC20, "rpc endpoints unavailable"))
	}
	want := `
# HELP paywatch_scanner_failed_polls Polls of the network's scanner that failed in a row, up to now; 0 while its polls work. /health calls the scanner failing from 3 (api.FailingPolls).
# TYPE paywatch_scanner_failed_polls gauge
paywatch_scanner_failed_polls{network="ERC20"} 0
paywatch_scanner_failed_polls{network="TRC20"} 3
# HELP paywatch_scanner_head Newest block of the network the scanner has seen.
# TYPE paywatch_scanner_head gauge
paywatch_scanner_head{network="ERC20"} 130
paywatch_scanner_head{network="TRC20"} 0
# HELP paywatch_scanner_lag_blocks Blocks the scanner is behind the network's head (head - scanned); /health turns degraded past PAYWATCH_MAX_LAG_BLOCKS.
# TYPE paywatch_scanner_lag_blocks gauge
paywatch_scanner_lag_blocks{network="ERC20"} 30
paywatch_scanner_lag_blocks{network="TRC20"} 0
# HELP paywatch_scanner_scanned Last block of the network whose transfers the scanner has recorded.
# TYPE paywatch_scanner_scanned gauge
paywatch_scanner_scanned{network="ERC20"} 100
paywatch_scanner_scanned{network="TRC20"} 0
`
	names := []string{"paywatch_scanner_head", "paywatch_scanner_scanned", "paywatch_scanner_lag_blocks", "paywatch_scanner_failed_polls"}
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...))
	v := gauge(t, m, "paywatch_scanner_updated_timestamp_seconds", "ERC20")
	assert.Equal(t, float64(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).Unix()), v)

	// The next scrape reads the cursor again.
	_, err = pool.Exec(ctx, `UPDATE chain_cursors SET height = 125 WHERE network = 'ERC20'`)
	require.NoError(t, err)
	assert.Equal(t, float64(5), gauge(t, m, "paywatch_scanner_lag_blocks", "ERC20"))

	// Today's RPC requests, as the scanners add them, and the budget.
	_, err = st.AddRPCUsage(ctx, paywatch.ERC20, time.Now(), 700, 10_000)
	require.NoError(t, err)
	total, err := st.AddRPCUsage(ctx, paywatch.ERC20, time.Now(), 50, 10_000)
	require.NoError(t, err)
	assert.Equal(t, uint64(750), total)
	_, err = st.AddRPCUsage(ctx, paywatch.ERC20, time.Now().Add(-24*time.Hour), 99_999, 10_000)
	require.NoError(t, err)
	assert.Equal(t, float64(750), gauge(t, m, "paywatch_rpc_requests_today", "ERC20"), "today's only")
	assert.Equal(t, float64(10_000), gauge(t, m, "paywatch_rpc_daily_budget", "ERC20"))
	assert.Equal(t, float64(0), gauge(t, m, "paywatch_rpc_budget_overrun_requests", "ERC20"))
	assert.Equal(t, float64(0), gauge(t, m, "paywatch_rpc_requests_today", "TRC20"))
	// Past the budget (payments waited on the network): by how much.
	_, err = st.AddRPCUsage(ctx, paywatch.ERC20, time.Now(), 9_500, 10_000)
	require.NoError(t, err)
	assert.Equal(t, float64(250), gauge(t, m, "paywatch_rpc_budget_overrun_requests", "ERC20"))
}

// gauge scrapes m and returns the value of name for network n.
func gauge(t *testing.T, m *metrics.Metrics, name string, n paywatch.Network) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if s.GetLabel()[0].GetValue() == string(n) {
				return s.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s{network=%q}", name, n)
	return 0
}

type failingStatus struct{}

func (failingStatus) ChainStatus(context.Context) ([]store.ChainStatus, error) {
	return nil, errors.New("database down")
}

// /metrics serves the text format; the counters start at 0 for every
// known label value; a failing collector leaves only its own gauges out;
// the Temporal SDK's metrics land in the same registry.
func TestHandlerServesEveryFamily(t *testing.T) {
	m := metrics.New(nil)
	require.NoError(t, m.WatchScanners(failingStatus{}))
	observe := m.RPCObserver(paywatch.BEP20)
	observe(chains.RPCRateLimited)
	m.WebhookAttempt(webhooks.Delivered)
	m.PaymentEntered(paywatch.StatusPaid)
	m.ObserveRequest("/v1/payments/:id", 200, 30*time.Millisecond)
	m.ObserveRequest("", 404, time.Millisecond)

	sdk := m.TemporalHandler()
	sdk.WithTags(map[string]string{"namespace": "default"}).Counter("temporal_request").Inc(1)
	require.NoError(t, m.Close()) // flushes the SDK's buffered metrics

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + metrics.Path)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	text := string(body)
	for _, line := range []string{
		`paywatch_rpc_requests_total{network="BEP20",outcome="rate_limited"} 1`,
		`paywatch_rpc_requests_total{network="BEP20",outcome="ok"} 0`,
		`paywatch_webhook_deliveries_total{outcome="delivered"} 1`,
		`paywatch_webhook_deliveries_total{outcome="retry"} 0`,
		`paywatch_payments_total{status="paid"} 1`,
		`paywatch_payments_total{status="expired"} 0`,
		`paywatch_http_request_duration_seconds_count{code="200",route="/v1/payments/:id"} 1`,
		`paywatch_http_request_duration_seconds_count{code="404",route="unmatched"} 1`,
		`temporal_request_total{namespace="default"} 1`,
		`go_goroutines `,
	} {
		assert.Contains(t, text, line)
	}
	assert.NotContains(t, text, "paywatch_scanner_lag_blocks{", "no gauges when the database cannot be read")

	resp, err = http.Get(srv.URL + "/other")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// A Temporal SDK metric that cannot be registered (one name reported with
// two sets of tags) is logged at WARN once, however often the SDK retries.
func TestSDKRegisterErrorWarnsOncePerName(t *testing.T) {
	var logs bytes.Buffer
	m := metrics.New(slog.New(slog.NewTextHandler(&logs, nil)))
	sdk := m.TemporalHandler()
	sdk.WithTags(map[string]string{"namespace": "default"}).Counter("temporal_request").Inc(1)
	sdk.WithTags(map[string]string{"task_queue": "a"}).Counter("temporal_request").Inc(1)
	sdk.WithTags(map[string]string{"task_queue": "b"}).Counter("temporal_request").Inc(1)
	sdk.WithTags(map[string]string{"operation": "x"}).Counter("temporal_request").Inc(1)
	require.NoError(t, m.Close())
	assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN msg=\"temporal SDK metric not registered"), logs.String())
	assert.Contains(t, logs.String(), "metric=temporal_request")
}
