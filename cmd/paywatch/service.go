package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/metrics"
	"github.com/paywatch/paywatch/payments"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// Main is one paywatch process. main() and the end-to-end tests start the
// same thing: NewMain, Run, and Close.
type Main struct {
	// Config is the validated configuration.
	Config Config
	// Register adds workflows and activities to the worker; nil registers
	// paywatch's own. Tests use it to add their own workflows.
	Register func(r worker.Registry)

	stdout io.Writer
	logger *slog.Logger

	embedded embeddedTemporal
	pool     *pgxpool.Pool
	temporal client.Client
	// payload seals what this process hands Temporal; temporalOptsDC is
	// the client's data converter built on it, which the worker's payment
	// runs read their memo with.
	payload        payloadConfig
	temporalOptsDC converter.DataConverter
	worker         worker.Worker
	http           *api.Server
	servers        []*http.Server
	apiAddr        string
	payAddr        string
	errc           chan error

	// metrics is the process's Prometheus registry, nil when
	// PAYWATCH_METRICS_ADDR is off (metrics.go).
	metrics     *metrics.Metrics
	metricsAddr string

	store    *store.Store
	chains   *chainRuntime
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	// extraCheck, when set by a test, joins the /health checks as "test".
	extraCheck api.Check
}

// embeddedTemporal is the in-process Temporal server of `paywatch dev`,
// provided by embedded.go unless the binary is built with -tags noembed.
type embeddedTemporal interface {
	FrontendAddr() string
	UIAddr() string
	Stop() error
}

// NewMain returns an unstarted process for cfg; logs go to stderr.
func NewMain(cfg Config, stdout, stderr io.Writer) *Main {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return &Main{
		Config: cfg,
		stdout: stdout,
		logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
		errc:   make(chan error, 4),
	}
}

// Run starts every part this mode runs and returns once they are ready. It
// does not block: wait on the context, or on Err, then call Close.
func (m *Main) Run(ctx context.Context) error {
	cfg := &m.Config
	if cfg.Mode != ModeDev && cfg.WebhookAllowPrivate {
		m.logger.Warn("PAYWATCH_WEBHOOK_ALLOW_PRIVATE is set: webhooks may reach private and loopback addresses")
	}
	if cfg.Mode != ModeDev && cfg.WebhookAllowHTTP {
		m.logger.Warn("PAYWATCH_WEBHOOK_ALLOW_HTTP is set: webhooks may go out unencrypted over http://")
	}
	if cfg.Mode == ModeDev && cfg.MasterKey == "" {
		key, err := devMasterKey(cfg.DataDir)
		if err != nil {
			return err
		}
		cfg.MasterKey = key
	}
	payload, err := cfg.Payload.load(cfg.MasterKey)
	if err != nil {
		return err
	}
	m.payload = payload
	// Which key seals, never the key: processes that disagree show it here.
	m.logger.Info("payloads sealed for Temporal", "keyId", payload.Codec.KeyID(), "key", payload.KeySource)

	// The SDK's sticky workflow cache belongs to the process and is shared
	// by every worker in it, the embedded server's system workers included;
	// its size is fixed when the first of them starts, so set it before the
	// server starts.
	worker.SetStickyWorkflowCacheSize(cfg.WorkflowCacheSize)

	temporalAddr := cfg.TemporalAddress
	if cfg.EmbeddedTemporal() {
		srv, err := startEmbeddedTemporal(*cfg)
		if err != nil {
			return fmt.Errorf("embedded Temporal server: %w", err)
		}
		m.embedded = srv
		temporalAddr = srv.FrontendAddr()
	}

	if cfg.Mode == ModeDev {
		if err := store.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
			return err
		}
	}
	pool, err := store.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	m.pool = pool
	if _, err := store.Migrate(ctx, pool); err != nil {
		return err
	}

	m.startMetrics()
	rt, err := startChains(ctx, *cfg, m.logger, m.rpcObserver())
	if err != nil {
		return fmt.Errorf("chains: %w", err)
	}
	m.chains = rt
	heads := chains.NewHeads(rt.Set, func(n paywatch.Network) time.Duration {
		if d, ok := rt.PollIntervals[n]; ok && d > 0 {
			return d
		}
		info, _ := paywatch.LookupNetwork(n)
		return info.BlockTime
	})
	m.store = store.New(pool, store.WithNetworks(rt.Networks), store.WithChainHeads(heads))

	opts, err := m.temporalOptions(temporalAddr)
	if err != nil {
		return err
	}
	// Every payload sealed before it reaches Temporal (issue 42).
	opts.DataConverter = workflows.NewDataConverter(payload.Codec)
	opts.FailureConverter = workflows.NewFailureConverter(opts.DataConverter)
	m.temporalOptsDC = opts.DataConverter
	tc, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", temporalWhere(*cfg, temporalAddr), err)
	}
	m.temporal = tc
	if err := workflows.EnsureSearchAttributes(ctx, tc, cfg.TemporalNamespace); err != nil {
		return fmt.Errorf("register search attributes: %w", err)
	}

	if cfg.RunsWorker() {
		if err := m.startWorker(ctx); err != nil {
			return err
		}
	}

	if cfg.RunsAPI() {
		checks := map[string]api.Check{
			"database": func(ctx context.Context) error { return m.pool.Ping(ctx) },
			"temporal": func(ctx context.Context) error {
				_, err := m.temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
				return err
			},
		}
		if m.extraCheck != nil {
			checks["test"] = m.extraCheck
		}
		m.http = api.New(api.Deps{
			Version:   version,
			Logger:    m.logger,
			Checks:    checks,
			Store:     m.store,
			Workflows: payments.NewTemporalWorkflows(tc, cfg.TaskQueue, payload.SearchRefKey).StartLean(cfg.LeanPayments),
			MasterKey: cfg.MasterKey,
			// The codec the Temporal Web UI decodes histories with.
			PayloadCodec:        converter.NewPayloadCodecHTTPHandler(payload.Codec),
			CodecOrigins:        m.codecOrigins(),
			BaseURL:             cfg.BaseURL,
			PayURL:              cfg.PayURL,
			WebhookAllowPrivate: cfg.WebhookAllowPrivate,
			WebhookRequireHTTPS: !cfg.WebhookAllowHTTP,
			TrustedProxies:      cfg.TrustedProxies,
			Chains:              m.chainStatus,
			MaxLagBlocks:        cfg.MaxLagBlocks,
			// The devnet endpoints of operations.md §4 live on the API
			// listener, behind its Host rule, only while devnet chains run.
			Devnet: rt.DevnetHandler, DevnetNetworks: rt.DevnetNetworks,
			DevMail: cfg.Mode == ModeDev && cfg.SMTPURL == "",
			// The merchant dashboard (operations.md §6); its cookies are
			// Secure outside dev, which serves plain http://127.0.0.1.
			Telegram:         m.telegramClient(),
			Dashboard:        true,
			InsecureCookies:  cfg.Mode == ModeDev,
			RequireTwoFactor: cfg.RequireTwoFactor,
			ObserveRequest:   m.requestObserver(),
			// The hosted page's wallet links name the contracts the
			// scanners watch.
			WalletTokens: rt.WalletTokens,
			Mints:        rt.Mints,
		})
		// A payment row whose workflow start was lost (a crash between the
		// insert and the start) gets its workflow from the reconciler.
		m.goBackground(func(ctx context.Context) { _ = m.http.Reconciler().Run(ctx) })
		apiHandler := m.http.API()
		if m.apiAddr, err = m.listen(cfg.APIAddr, apiHandler); err != nil {
			return err
		}
		if m.payAddr, err = m.listen(cfg.PayAddr, m.http.Pay()); err != nil {
			return err
		}
	}
	if err := m.serveMetrics(); err != nil {
		return err
	}
	if cfg.Mode == ModeDev {
		m.printStartup()
	}
	m.logger.Info("paywatch started", "mode", cfg.Mode, "version", version)
	return nil
}

// goBackground runs f until Close, which cancels its context and waits for it.
func (m *Main) goBackground(f func(ctx context.Context)) {
	if m.bgCancel == nil {
		var ctx context.Context
		ctx, m.bgCancel = context.WithCancel(context.Background())
		m.bgCtx = ctx
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		f(m.bgCtx)
	}()
}

// startWorker registers the payment and scanner workflows with their
// activities, starts the worker and makes sure every offered network has
// its scanner workflow (one per network in the whole cluster).
func (m *Main) startWorker(ctx context.Context) error {
	cfg := &m.Config
	if cfg.Mode == ModeDev {
		// Devnet chains start from genesis on every run; the chain state
		// of an earlier run (cursor, records, claims) would point past
		// their head and take transfers whose hashes repeat old ones.
		if err := m.chains.StartDevnetRuns(ctx, m.store, m.logger); err != nil {
			return fmt.Errorf("start devnet runs: %w", err)
		}
	}
	// The default of 1,000 concurrent activities leaves room for the five
	// long-running scan activities next to the payments' short ones.
	w := worker.New(m.temporal, cfg.TaskQueue, worker.Options{WorkerStopTimeout: activities.WorkerStopTimeout})
	mailer, err := m.mailer()
	if err != nil {
		return err
	}
	workflows.Register(w, activities.New(activities.Deps{
		Telegram:     m.telegramClient(),
		Mailer:       mailer,
		Store:        m.store,
		Chains:       m.chains.Set,
		AllowPrivate: cfg.WebhookAllowPrivate,
		RequireHTTPS: !cfg.WebhookAllowHTTP,
		Logger:       m.logger,
		BlockTimes:   m.chains.PollIntervals,
		Metrics:      m.activityMetrics(),
	}), workflows.WithDataConverter(m.temporalOptsDC))
	workflows.RegisterScanner(w, activities.NewScanner(m.scannerDeps()))
	if m.Register != nil {
		m.Register(w)
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	m.worker = w
	if err := workflows.EnsureScanners(ctx, m.temporal, cfg.TaskQueue, m.chains.Networks); err != nil {
		return fmt.Errorf("start scanners: %w", err)
	}
	if cfg.TelegramBotToken != "" {
		// The bot's one getUpdates reader, for linking chats.
		if err := workflows.EnsureTelegramPoller(ctx, m.temporal, cfg.TaskQueue); err != nil {
			return fmt.Errorf("start telegram poller: %w", err)
		}
	}
	return nil
}

// scannerDeps are the dependencies of the worker's chain scanners; the
// scale benchmark builds an instrumented scanner from the same ones.
func (m *Main) scannerDeps() activities.ScannerDeps {
	poll := maps.Clone(m.chains.PollIntervals) // a devnet chain's block interval
	if poll == nil {
		poll = map[paywatch.Network]time.Duration{}
	}
	maps.Copy(poll, m.Config.PollIntervals) // PAYWATCH_<NETWORK>_POLL_INTERVAL wins
	return activities.ScannerDeps{
		Store:            m.store,
		Chains:           m.chains.Set,
		Signaler:         m.temporal,
		Logger:           m.logger,
		PollInterval:     poll,
		IdlePollInterval: m.Config.IdlePollIntervals,
		DailyBudget:      m.Config.DailyBudgets,
	}
}

// chainStatus reports each network's scanner progress for /health.
func (m *Main) chainStatus(ctx context.Context) ([]api.ChainStatus, error) {
	rows, err := m.store.ChainStatus(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.ChainStatus, 0, len(rows))
	for _, r := range rows {
		ch := api.ChainStatus{Network: string(r.Network), Head: r.Head, Scanned: r.Scanned, LagBlocks: r.LagBlocks,
			LagAllowance: r.LagAllowance, FailedPolls: r.FailedPolls,
			RPCRequestsToday: r.RPCRequestsToday, RPCDailyBudget: r.RPCDailyBudget}
		if !r.FailingSince.IsZero() {
			ch.FailingSince = &r.FailingSince
		}
		ch.ShallowHistory = r.FailedPolls > 0 && strings.Contains(r.LastError, paywatch.MsgHistoryShallow)
		out = append(out, ch)
	}
	return out, nil
}

// listen binds addr first, so a taken port is reported here rather than
// from a goroutine, then serves h on it.
func (m *Main) listen(addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(m.logger.Handler(), slog.LevelWarn),
	}
	m.servers = append(m.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.errc <- fmt.Errorf("serve %s: %w", addr, err)
		}
	}()
	return ln.Addr().String(), nil
}

// Err delivers a fatal error of a running part, such as a listener failing.
func (m *Main) Err() <-chan error { return m.errc }

// APIAddr is the bound address of the API listener, after Run.
func (m *Main) APIAddr() string { return m.apiAddr }

// PayAddr is the bound address of the pay listener, after Run.
func (m *Main) PayAddr() string { return m.payAddr }

// Close shuts down gracefully: /health turns 503 "draining" at once, the
// listeners close after the drain delay and finish in-flight requests, then
// the worker, the Temporal client, the embedded server and the pool stop, in
// that order. It is safe to call more than once.
func (m *Main) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Main) close() error {
	var errs []error
	if m.http != nil {
		m.http.SetDraining()
		if d := m.Config.DrainDelay; d > 0 {
			time.Sleep(d)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, srv := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("drain HTTP: %w", err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if m.bgCancel != nil {
		m.bgCancel()
		m.bg.Wait()
	}
	if m.worker != nil {
		m.worker.Stop()
	}
	if err := m.chains.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close chains: %w", err))
	}
	if m.temporal != nil {
		m.temporal.Close()
	}
	if m.metrics != nil {
		if err := m.metrics.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close metrics: %w", err))
		}
	}
	if m.embedded != nil {
		if err := m.embedded.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop Temporal server: %w", err))
		}
	}
	if m.pool != nil {
		m.pool.Close()
	}
	return errors.Join(errs...)
}

// devMasterKey returns the dev master key kept in dataDir, generating it on
// first use so it stays the same across restarts.
func devMasterKey(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "master_key")
	if b, err := os.ReadFile(path); err == nil {
		if key := strings.TrimSpace(string(b)); strings.HasPrefix(key, "mk_") {
			return key, nil
		}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	key := "mk_" + rand.Text()
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("store dev master key: %w", err)
	}
	return key, nil
}

// migrate applies migrations for `paywatch migrate`.
func migrate(ctx context.Context, cfg Config) (int64, error) {
	if cfg.Mode == ModeDev {
		if err := store.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
			return 0, err
		}
	}
	pool, err := store.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	return store.Migrate(ctx, pool)
}
