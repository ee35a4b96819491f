// Package metrics is paywatch's Prometheus instrumentation: one registry
// per process holding the paywatch_* families, the Temporal SDK's own
// metrics (the client's and the worker's, through the SDK's tally contrib)
// and the Go runtime's, served as GET /metrics in the Prometheus text
// format on a listener of its own (PAYWATCH_METRICS_ADDR).
//
// It is a package of its own, rather than a part of api or cmd/paywatch,
// because three layers feed it (the chain clients, the activities and the
// HTTP listeners), worker-only processes serve it without any API, and its
// collectors are tested without the binary. The layers it observes do not
// import it: each offers a plain hook (chains.Config.Observe,
// activities.Deps.Metrics, api.Deps.ObserveRequest) that cmd/paywatch
// connects to a *Metrics, so they stay free of Prometheus. Nothing but
// cmd/paywatch imports this package.
//
// Each process has its own registry, never Prometheus' global one, so that
// several processes in one test binary (and the embedded Temporal server)
// keep their metrics apart.
package metrics

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/webhooks"
)

// Path is where the metrics listener serves the metrics.
const Path = "/metrics"

// unmatchedRoute is the route label of requests no route matched (unknown
// paths, other hosts), so that raw paths never become label values.
const unmatchedRoute = "unmatched"

// sdkReportInterval is how often the Temporal SDK's buffered metrics reach
// the registry.
const sdkReportInterval = time.Second

// Metrics is one process's registry and the paywatch_* families in it.
// Its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	log *slog.Logger

	rpc      *prometheus.CounterVec
	webhooks *prometheus.CounterVec
	payments *prometheus.CounterVec
	requests *prometheus.HistogramVec

	mu      sync.Mutex
	closers []io.Closer
	// unregistered holds the SDK metric names already warned about
	// (sdkRegisterError).
	unregistered map[string]bool
}

// New returns a registry with the paywatch_* families (those with a known,
// small set of label values already at 0), the Go runtime's and the
// process's. logger receives scrape and registration errors; nil means
// slog.Default().
func New(logger *slog.Logger) *Metrics {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		log: logger,
		rpc: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paywatch_rpc_requests_total",
			Help: "Requests to the networks' RPC endpoints, each endpoint a failover tried counting once, by outcome: ok (the endpoint answered, \"not found\" and refused block ranges included), error (unreachable, timed out, a server error) or rate_limited.",
		}, []string{"network", "outcome"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paywatch_webhook_deliveries_total",
			Help: "Webhook delivery attempts made, by outcome: delivered (a 2xx answer), retry (a 5xx answer, a timeout or a network error; tried again on the schedule) or failed (refused for good: any other answer). Attempts refused before any request (no webhook secret, a scheme or address not allowed) are not counted.",
		}, []string{"outcome"}),
		payments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paywatch_payments_total",
			Help: "Payments that moved into each status, each move counted once (a payment's creation as pending is not a move).",
		}, []string{"status"}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "paywatch_http_request_duration_seconds",
			Help:    "Time to answer requests on the API and pay listeners, by Echo route pattern (\"unmatched\" when no route matched) and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "code"}),
	}
	m.reg.MustRegister(m.rpc, m.webhooks, m.payments, m.requests,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, o := range []webhooks.Outcome{webhooks.Delivered, webhooks.Retry, webhooks.Failed} {
		m.webhooks.WithLabelValues(string(o))
	}
	for _, s := range paywatch.Statuses() {
		m.payments.WithLabelValues(string(s))
	}
	return m
}

// Registry is the process's registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves GET /metrics in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it); every other path is 404. A
// collector that fails (the database, for the scanner gauges) is logged
// and left out, and the rest is still served.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          m.reg,
		EnableOpenMetrics: true,
	}))
	return mux
}

// RPCObserver returns the chains.Config.Observe of network n, with n's
// outcomes already at 0.
func (m *Metrics) RPCObserver(n paywatch.Network) func(chains.RPCOutcome) {
	counters := map[chains.RPCOutcome]prometheus.Counter{}
	for _, o := range chains.RPCOutcomes() {
		counters[o] = m.rpc.WithLabelValues(string(n), string(o))
	}
	return func(o chains.RPCOutcome) {
		c, ok := counters[o]
		if !ok {
			c = m.rpc.WithLabelValues(string(n), string(o))
		}
		c.Inc()
	}
}

// WebhookAttempt counts one webhook delivery attempt by its outcome.
func (m *Metrics) WebhookAttempt(o webhooks.Outcome) {
	m.webhooks.WithLabelValues(string(o)).Inc()
}

// PaymentEntered counts a payment moving into status s.
func (m *Metrics) PaymentEntered(s paywatch.Status) {
	m.payments.WithLabelValues(string(s)).Inc()
}

// ObserveRequest records one answered HTTP request (api.Deps.ObserveRequest).
func (m *Metrics) ObserveRequest(route string, code int, took time.Duration) {
	if route == "" {
		route = unmatchedRoute
	}
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Observe(took.Seconds())
}

// TemporalHandler returns a metrics handler for the Temporal client
// (client.Options.MetricsHandler) that reports into this registry with
// the SDK's Prometheus names (temporal_request_total,
// temporal_workflow_task_execution_latency_seconds, ...). Workers built on
// that client report through it too. Close stops its reporting.
func (m *Metrics) TemporalHandler() client.MetricsHandler {
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       m.reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		// A name the SDK reports with two sets of tags cannot be one
		// Prometheus family; the second set is dropped, never the process.
		OnRegisterError: m.sdkRegisterError,
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:         reporter,
		Separator:              tallyprom.DefaultSeparator,
		SanitizeOptions:        &sdktally.PrometheusSanitizeOptions,
		OmitCardinalityMetrics: true,
	}, sdkReportInterval)
	m.mu.Lock()
	m.closers = append(m.closers, closer)
	m.mu.Unlock()
	return sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope))
}

// fqName finds the metric name in a Prometheus registration error.
var fqName = regexp.MustCompile(`fqName: "([^"]*)"`)

// sdkRegisterError logs, at WARN and once per metric name, that a Temporal
// SDK metric could not be registered (the SDK retries it with every new
// set of tags, so the same error comes again and again).
func (m *Metrics) sdkRegisterError(err error) {
	name := err.Error()
	if match := fqName.FindStringSubmatch(name); match != nil {
		name = match[1]
	}
	m.mu.Lock()
	seen := m.unregistered[name]
	if !seen {
		if m.unregistered == nil {
			m.unregistered = map[string]bool{}
		}
		m.unregistered[name] = true
	}
	m.mu.Unlock()
	if !seen {
		m.log.Warn("temporal SDK metric not registered; its samples are dropped", "metric", name, "error", err)
	}
}

// Close stops reporting the Temporal SDK's metrics, flushing what is
// buffered. Call it after the Temporal client is closed.
func (m *Metrics) Close() error {
	m.mu.Lock()
	closers := m.closers
	m.closers = nil
	m.mu.Unlock()
	var errs []error
	for _, c := range closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
