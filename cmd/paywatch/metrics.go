package main

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/metrics"
)

// The process's metrics (PAYWATCH_METRICS_ADDR): m.metrics is nil when the
// listener is off, and then every hook below is nil too, so nothing is
// counted.

// startMetrics builds the process's registry when its listener is on.
func (m *Main) startMetrics() {
	if m.Config.MetricsAddr != "" {
		m.metrics = metrics.New(m.logger)
	}
}

// rpcObserver gives each network's chain client its request counter.
func (m *Main) rpcObserver() func(paywatch.Network) func(chains.RPCOutcome) {
	if m.metrics == nil {
		return nil
	}
	return m.metrics.RPCObserver
}

// temporalMetrics is the Temporal client's metrics handler (its workers
// report through it too); nil keeps the SDK's no-op one.
func (m *Main) temporalMetrics() client.MetricsHandler {
	if m.metrics == nil {
		return nil
	}
	return m.metrics.TemporalHandler()
}

// activityMetrics counts webhook attempts and status changes.
func (m *Main) activityMetrics() activities.Metrics {
	if m.metrics == nil {
		return nil
	}
	return m.metrics
}

// requestObserver times the API and pay listeners' requests.
func (m *Main) requestObserver() func(route string, code int, took time.Duration) {
	if m.metrics == nil {
		return nil
	}
	return m.metrics.ObserveRequest
}

// serveMetrics opens the metrics listener. A process that runs the
// scanners also reports their progress, read from chain_cursors at each
// scrape. When dev's default address is taken, it warns and the process
// runs without the listener (MetricsAddrDefault).
func (m *Main) serveMetrics() error {
	if m.metrics == nil {
		return nil
	}
	if m.Config.RunsWorker() {
		if err := m.metrics.WatchScanners(m.store); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	addr, err := m.listen(m.Config.MetricsAddr, m.metrics.Handler())
	if err != nil && m.Config.MetricsAddrDefault {
		// dev's default 127.0.0.1:9090 is also Prometheus's port.
		m.logger.Warn("metrics listener off: its default address is taken; set PAYWATCH_METRICS_ADDR to another host:port, or off",
			"addr", m.Config.MetricsAddr, "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	m.metricsAddr = addr
	return nil
}

// MetricsAddr is the bound address of the metrics listener after Run; ""
// when it is off.
func (m *Main) MetricsAddr() string { return m.metricsAddr }
