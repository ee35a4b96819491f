package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape reads GET /metrics of the metrics listener at addr.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// labels returns a sample's labels as a map.
func labels(s *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range s.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// sample returns the value of the counter or gauge of family name whose
// labels include want, and whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, s := range fams[name].GetMetric() {
		got := labels(s)
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			return s.GetCounter().GetValue() + s.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// `paywatch dev` serves /metrics on its own listener: the paywatch_*
// families with their labels, the Temporal SDK's own (client and worker),
// and a payment cancelled through the API counted once as cancelled.
func TestMetricsEndpoint(t *testing.T) {
	m, out := startMain(t, devConfig(t, t.TempDir()), nil)
	require.NotEmpty(t, m.MetricsAddr())
	assert.NotEqual(t, m.APIAddr(), m.MetricsAddr())
	assert.Contains(t, out.String(), "Metrics      http://"+m.MetricsAddr()+"/metrics")

	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(receiver.Close)
	c := apiClient{t: t, base: "http://" + m.APIAddr()}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@merchant.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{
		"name": "Shop", "slug": "shop", "owner_email": "ops@merchant.test", "webhook_url": receiver.URL,
	})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{"xpubs": map[string]any{"evm": accountXPub(t, 60)}})
	require.Equal(t, http.StatusOK, code, body)
	code, body = c.do("POST", "/v1/payments", merchant, map[string]any{"amount": 5, "external_ref": "c-1", "network": "ERC20"})
	require.Equal(t, http.StatusCreated, code, body)
	id := body["payment"].(map[string]any)["id"].(string)
	code, body = c.do("PATCH", "/v1/payments/"+id, merchant, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, code, body)

	var fams map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		fams = scrape(t, m.MetricsAddr())
		cancelled, _ := sample(fams, "paywatch_payments_total", map[string]string{"status": "cancelled"})
		delivered, _ := sample(fams, "paywatch_webhook_deliveries_total", map[string]string{"outcome": "delivered"})
		_, sdk := fams["temporal_request_total"]
		return cancelled == 1 && delivered == 1 && sdk
	}, 30*time.Second, 200*time.Millisecond, "the cancellation, its webhook and the SDK's requests are counted\n%s", out.String())

	paid, ok := sample(fams, "paywatch_payments_total", map[string]string{"status": "paid"})
	assert.True(t, ok, "every status is listed, at 0 until a payment enters it")
	assert.Zero(t, paid)
	for _, name := range []string{"paywatch_scanner_head", "paywatch_scanner_scanned", "paywatch_scanner_lag_blocks"} {
		var networks []string
		for _, s := range fams[name].GetMetric() {
			networks = append(networks, labels(s)["network"])
		}
		assert.ElementsMatch(t, []string{"TRC20", "BEP20", "ERC20", "POLYGON", "ARBITRUM", "BASE", "SOLANA", "TON"}, networks, name)
	}
	for _, n := range []string{"TRC20", "ERC20"} {
		calls, _ := sample(fams, "paywatch_rpc_requests_total", map[string]string{"network": n, "outcome": "ok"})
		assert.Positive(t, calls, "%s: the scanner's requests are counted", n)
		_, ok := sample(fams, "paywatch_rpc_requests_total", map[string]string{"network": n, "outcome": "rate_limited"})
		assert.True(t, ok, n)
	}

	hist := fams["paywatch_http_request_duration_seconds"]
	require.NotNil(t, hist)
	assert.Equal(t, dto.MetricType_HISTOGRAM, hist.GetType())
	var routes []string
	for _, s := range hist.GetMetric() {
		l := labels(s)
		routes = append(routes, l["route"]+" "+l["code"])
		assert.NotContains(t, l["route"], id, "the route pattern, never the raw path")
	}
	assert.Contains(t, routes, "/v1/payments/:id 200")
	assert.Contains(t, routes, "/v1/payments 201")

	// The worker's metrics come through the same client handler.
	var sdk []string
	for name := range fams {
		if strings.HasPrefix(name, "temporal_") {
			sdk = append(sdk, name)
		}
	}
	assert.Contains(t, sdk, "temporal_worker_start_total", "the worker's metrics")
	assert.Contains(t, sdk, "temporal_request_total", "the client's metrics")
}

// dev's default metrics address taken (Prometheus on 127.0.0.1:9090) is a
// warning and the process runs without the listener; an address set
// explicitly that cannot be bound is fatal.
func TestMetricsDefaultAddrTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	for _, byDefault := range []bool{true, false} {
		out := &syncBuffer{}
		m := NewMain(Config{Mode: ModeAPI, MetricsAddr: taken.Addr().String(), MetricsAddrDefault: byDefault}, out, out)
		m.startMetrics()
		err := m.serveMetrics()
		for _, srv := range m.servers {
			_ = srv.Close()
		}
		if byDefault {
			require.NoError(t, err)
			assert.Empty(t, m.MetricsAddr(), "no listener")
			assert.Contains(t, out.String(), "level=WARN msg=\"metrics listener off")
		} else {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "metrics: listen on "+taken.Addr().String())
		}
	}
}
