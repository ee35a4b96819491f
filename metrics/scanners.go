package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paywatch/paywatch/store"
)

// scrapeTimeout bounds the database read of one scrape.
const scrapeTimeout = 5 * time.Second

// ScannerStatus reads the scan progress of the offered networks, as
// /health reports it; *store.Store implements it (from chain_cursors).
type ScannerStatus interface {
	ChainStatus(ctx context.Context) ([]store.ChainStatus, error)
}

// WatchScanners adds the scanner gauges, read from st at every scrape:
// paywatch_scanner_head, paywatch_scanner_scanned,
// paywatch_scanner_lag_blocks,
// paywatch_scanner_updated_timestamp_seconds and
// paywatch_scanner_failed_polls, paywatch_rpc_requests_today,
// paywatch_rpc_daily_budget and paywatch_rpc_budget_overrun_requests, by
// network. Reading them at
// scrape time keeps them right whichever worker process runs a network's
// scanner.
func (m *Metrics) WatchScanners(st ScannerStatus) error {
	return m.reg.Register(&scannerCollector{st: st})
}

var (
	headDesc = prometheus.NewDesc("paywatch_scanner_head",
		"Newest block of the network the scanner has seen.", []string{"network"}, nil)
	scannedDesc = prometheus.NewDesc("paywatch_scanner_scanned",
		"Last block of the network whose transfers the scanner has recorded.", []string{"network"}, nil)
	lagDesc = prometheus.NewDesc("paywatch_scanner_lag_blocks",
		"Blocks the scanner is behind the network's head (head - scanned); /health turns degraded past PAYWATCH_MAX_LAG_BLOCKS.", []string{"network"}, nil)
	updatedDesc = prometheus.NewDesc("paywatch_scanner_updated_timestamp_seconds",
		"When the scanner last recorded progress on the network (Unix time); absent before its first batch. A scanner that stopped leaves lag unchanged but this old.", []string{"network"}, nil)
	failedPollsDesc = prometheus.NewDesc("paywatch_scanner_failed_polls",
		"Polls of the network's scanner that failed in a row, up to now; 0 while its polls work. /health calls the scanner failing from 3 (api.FailingPolls).", []string{"network"}, nil)
	requestsTodayDesc = prometheus.NewDesc("paywatch_rpc_requests_today",
		"RPC requests made to the network's endpoints this UTC day, as its scanners recorded them (every 30 s).", []string{"network"}, nil)
	budgetDesc = prometheus.NewDesc("paywatch_rpc_daily_budget",
		"PAYWATCH_<NETWORK>_DAILY_BUDGET: the RPC requests the network may use per UTC day; absent without one.", []string{"network"}, nil)
	overrunDesc = prometheus.NewDesc("paywatch_rpc_budget_overrun_requests",
		"RPC requests made this UTC day past the network's daily budget: a budget never stops a scanner while payments wait on its network; absent without a budget.", []string{"network"}, nil)
)

// scannerCollector reads chain_cursors and scanner_failures at scrape time.
type scannerCollector struct {
	st ScannerStatus
}

// Describe sends the scanner gauges' descriptions.
func (c *scannerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- headDesc
	ch <- scannedDesc
	ch <- lagDesc
	ch <- updatedDesc
	ch <- failedPollsDesc
	ch <- requestsTodayDesc
	ch <- budgetDesc
	ch <- overrunDesc
}

// Collect reads every offered network's progress. When the read fails
// the gauges are left out of this scrape (the handler logs why) rather
// than reported as 0.
func (c *scannerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	rows, err := c.st.ChainStatus(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(lagDesc, err)
		return
	}
	for _, r := range rows {
		n := string(r.Network)
		ch <- prometheus.MustNewConstMetric(headDesc, prometheus.GaugeValue, float64(r.Head), n)
		ch <- prometheus.MustNewConstMetric(scannedDesc, prometheus.GaugeValue, float64(r.Scanned), n)
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(r.LagBlocks), n)
		ch <- prometheus.MustNewConstMetric(failedPollsDesc, prometheus.GaugeValue, float64(r.FailedPolls), n)
		ch <- prometheus.MustNewConstMetric(requestsTodayDesc, prometheus.GaugeValue, float64(r.RPCRequestsToday), n)
		if r.RPCDailyBudget > 0 {
			ch <- prometheus.MustNewConstMetric(budgetDesc, prometheus.GaugeValue, float64(r.RPCDailyBudget), n)
			over := r.RPCRequestsToday - min(r.RPCRequestsToday, r.RPCDailyBudget)
			ch <- prometheus.MustNewConstMetric(overrunDesc, prometheus.GaugeValue, float64(over), n)
		}
		if !r.UpdatedAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(updatedDesc, prometheus.GaugeValue, float64(r.UpdatedAt.UnixNano())/1e9, n)
		}
	}
}
