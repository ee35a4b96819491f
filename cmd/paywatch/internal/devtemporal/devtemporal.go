// Package devtemporal runs a Temporal server and its Web UI inside the
// paywatch process: on SQLite for `paywatch dev` and tests, on PostgreSQL
// for `paywatch temporal serve`, the standalone single-node server a
// self-hoster runs (postgres.go).
//
// It is kept in its own package so that binaries built with the `noembed`
// tag (see cmd/paywatch) do not link the server, which multiplies the binary
// size by about seven.
package devtemporal

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ServerVersion is the version of the Temporal server this package runs,
// such as "1.32.1": go.temporal.io/server's version in go.mod.
const ServerVersion = headers.ServerVersion

// Options configures an embedded server.
type Options struct {
	// DataDir holds the SQLite database file (temporal.db); it is created if missing.
	DataDir string
	// FrontendAddr is the host:port of the frontend gRPC service, e.g. 127.0.0.1:7233.
	FrontendAddr string
	// UIAddr is the host:port of the Web UI; empty disables the UI.
	UIAddr string
	// Namespace is created on start if missing.
	Namespace string
	// SearchAttributes are registered on the namespace when it is first
	// created, before the server starts, so a fresh data dir has them from
	// the first request on.
	SearchAttributes map[string]enumspb.IndexedValueType
	// HistoryCacheSize bounds the history service's cache of workflow
	// mutable state (dynamic config history.hostLevelCacheMaxSize); 0
	// keeps the server's default of 128,000, which holds every workflow
	// touched within the cache's 1-hour TTL.
	HistoryCacheSize int
	// LogLevel is the server's zap level; the default "error" keeps `make run` quiet (at warn it logs every poll failure during shutdown).
	LogLevel string
	// Postgres, when set, persists to PostgreSQL instead of SQLite in
	// DataDir (which is then unused); see PostgresOptions.
	Postgres *PostgresOptions
	// MetricsAddr, when set, serves the server's own metrics in the
	// Prometheus text format at http://MetricsAddr/metrics.
	MetricsAddr string
	// TLS, when set, serves the frontend and the Web UI over TLS, with
	// mutual TLS when it names a client CA (tls.go).
	TLS *TLSOptions
	// APIKey, when set, is required of every call to the frontend, as
	// "authorization: Bearer <key>" (client.NewAPIKeyStaticCredentials in
	// the Go SDK); a call without it gets PermissionDenied (auth.go).
	APIKey string
	// RefuseSearchAttributeChanges makes the frontend refuse
	// AddSearchAttributes and RemoveSearchAttributes with PermissionDenied,
	// as Temporal Cloud's does, and leaves SearchAttributes off the
	// namespace it creates: a namespace whose attributes only its operator
	// adds.
	RefuseSearchAttributeChanges bool
	// UICodecEndpoint is the Web UI's remote payload codec endpoint (its
	// codec.endpoint setting); UICodecIncludeCredentials makes the browser
	// send its cookies to it (codec.includeCredentials).
	UICodecEndpoint           string
	UICodecIncludeCredentials bool
}

// Server is a running embedded Temporal server.
type Server struct {
	opts   Options
	server temporal.Server
	// frontend is the address clients dial: FrontendAddr, with loopback
	// for an unspecified host.
	frontend string
	// internalFrontend is the address of the internal frontend, or "".
	internalFrontend string
	tls              *serverTLS
	logger           log.Logger
	ui               *uiserver.Server
	// uiFront serves the UI over TLS in front of ui, or is nil.
	uiFront *http.Server
	uiDone  chan struct{}
}

// ErrPortTaken reports a listener address that another process already uses.
// The Temporal server exits the whole process on a taken port, so Start
// probes every port first and returns this error instead.
var ErrPortTaken = errors.New("address already in use")

// Start creates the schema on first use, creates the namespace, and starts
// the server and its UI. It returns once the frontend accepts connections.
func Start(opts Options) (*Server, error) {
	if opts.LogLevel == "" {
		opts.LogLevel = "error"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	for _, addr := range []string{opts.FrontendAddr, opts.UIAddr, opts.MetricsAddr} {
		if addr == "" {
			continue
		}
		if err := probe(addr); err != nil {
			return nil, err
		}
	}
	bindHost, frontendPort, err := splitHostPort(opts.FrontendAddr)
	if err != nil {
		return nil, err
	}
	var srvTLS *serverTLS
	if opts.TLS != nil {
		if srvTLS, err = opts.TLS.load(); err != nil {
			return nil, err
		}
	}
	// The frontend may listen on every interface (0.0.0.0 in a container);
	// the other services, which check no credentials, stay on loopback.
	frontendHost := bindHost
	if ip := net.ParseIP(bindHost); ip != nil && ip.IsUnspecified() {
		frontendHost = "127.0.0.1"
	}
	host := frontendHost
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		host = "127.0.0.1"
	}
	frontend := net.JoinHostPort(frontendHost, strconv.Itoa(frontendPort))

	// With TLS or an API key on the frontend, the server's own clients
	// (the worker service's system workers, the history service, the Web
	// UI) call an internal frontend on loopback instead: same handlers,
	// no TLS, and the server's internal claim mapper, which makes them
	// system admins. That is what Temporal's own configuration with
	// authorization does (config/development-jwt.yaml in its source).
	internal := opts.TLS != nil || opts.APIKey != ""
	// Membership of the frontend; gRPC and membership of history (1, 2),
	// matching (3, 4), worker (5, 6) and the internal frontend (7, 8); the
	// UI server behind the TLS front (9).
	ports, err := freePorts(host, 10)
	if err != nil {
		return nil, err
	}
	persistence, err := opts.persistence()
	if err != nil {
		return nil, err
	}

	addr := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	service := func(grpc, membership int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnIP: host}}
	}
	frontendService := service(frontendPort, ports[0])
	frontendService.RPC.BindOnIP = bindHost
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host},
			PProf:      config.PProf{Port: 0},
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			FailoverVersionIncrement: 10,
			MasterClusterName:        "active",
			CurrentClusterName:       "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": frontendService,
			"history":  service(ports[1], ports[2]),
			"matching": service(ports[3], ports[4]),
			"worker":   service(ports[5], ports[6]),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: frontend},
	}
	services := temporal.DefaultServices
	hosts := map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: static.SingleLocalHost(frontend),
		primitives.HistoryService:  static.SingleLocalHost(addr(ports[1])),
		primitives.MatchingService: static.SingleLocalHost(addr(ports[3])),
		primitives.WorkerService:   static.SingleLocalHost(addr(ports[5])),
	}
	internalFrontend := ""
	if internal {
		internalFrontend = addr(ports[7])
		services = append(slices.Clone(services), string(primitives.InternalFrontendService))
		cfg.Services[string(primitives.InternalFrontendService)] = service(ports[7], ports[8])
		hosts[primitives.InternalFrontendService] = static.SingleLocalHost(internalFrontend)
		// The server's clients find it by membership (the server
		// refuses a publicClient address along with an internal frontend).
		cfg.PublicClient = config.PublicClient{}
	}
	if srvTLS != nil {
		cfg.Global.TLS = srvTLS.rootTLS()
	}
	if opts.MetricsAddr != "" {
		cfg.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
			Framework:     metrics.FrameworkTally,
			ListenAddress: opts.MetricsAddr, HandlerPath: "/metrics",
		}}
	}
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: opts.LogLevel, Format: "console"}))
	dyn := dynamicConfig(opts)
	serverOpts := []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(services),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dyn),
	}
	if claimMapper, authorizer := authOptions(opts, logger); authorizer != nil {
		serverOpts = append(serverOpts, temporal.WithClaimMapper(claimMapper), temporal.WithAuthorizer(authorizer))
	}
	srv, err := temporal.NewServer(serverOpts...)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	// The key stays with the claim mapper, as its hash only.
	opts.APIKey = ""
	s := &Server{opts: opts, server: srv, frontend: frontend, internalFrontend: internalFrontend, tls: srvTLS, logger: logger}
	if err := waitDial(frontend, 30*time.Second); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	if opts.UIAddr != "" {
		if err := s.startUI(addr(ports[9])); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// persistence creates the schema on first use and the namespace, and
// returns the server's persistence: PostgreSQL when opts.Postgres is set,
// otherwise SQLite in opts.DataDir.
func (opts Options) persistence() (config.Persistence, error) {
	if opts.Postgres != nil {
		return opts.postgresPersistence()
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return config.Persistence{}, fmt.Errorf("create data dir: %w", err)
	}
	dbPath := filepath.Join(opts.DataDir, "temporal.db")
	sqlCfg := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbPath,
		// One connection: SQLite serialises writers anyway, and a second
		// connection only produces "database is locked" errors.
		MaxConns:     1,
		MaxIdleConns: 1,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
		},
	}
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			return config.Persistence{}, fmt.Errorf("set up temporal schema: %w", err)
		}
	}
	if err := opts.createNamespace(sqlCfg, 0); err != nil {
		return config.Persistence{}, err
	}
	return config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
	}, nil
}

// createNamespace creates opts.Namespace in the store cfg names, with
// opts.SearchAttributes (none with RefuseSearchAttributeChanges), unless
// it exists. The namespace rows are the same in every SQL store, so
// Temporal's helper for SQLite serves PostgreSQL too. retention, when set,
// replaces its retention of closed workflows (24 h).
func (opts Options) createNamespace(cfg *config.SQL, retention time.Duration) error {
	attrs := opts.SearchAttributes
	if opts.RefuseSearchAttributeChanges {
		attrs = nil
	}
	ns, err := sqlite.NewNamespaceConfig("active", opts.Namespace, false, attrs)
	if err != nil {
		return fmt.Errorf("namespace config: %w", err)
	}
	if retention > 0 {
		ns.Detail.Config.Retention = durationpb.New(retention)
	}
	if err := sqlite.CreateNamespaces(cfg, ns); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	return nil
}

// dynamicConfig is the server's dynamic configuration for opts.
func dynamicConfig(opts Options) dynamicconfig.StaticClient {
	dyn := dynamicconfig.StaticClient{
		// One partition per task queue: with a single matching host more
		// partitions only add polling overhead (measured: about 2x fewer
		// workflow tasks per second with the default of 4).
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// Search attributes are read from the services' caches, unlike
		// Temporal's own dev server, which reads them from the database on
		// every use (system.forceSearchAttributesCacheRefreshOnRead). Here
		// they are on the namespace before the server starts (Options.
		// SearchAttributes), so a cold cache already loads them, and an
		// attribute a later version adds to an existing data dir is waited
		// for by workflows.EnsureSearchAttributes, one cache refresh, before
		// the worker starts. Reading through cost two SQLite reads per
		// payment on the server's one connection (issue 15: about 0.5 ms of
		// every payment's 4.6 ms there).
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): false,
		// Persistence rate limits as in Temporal's dev server.
		dynamicconfig.FrontendPersistenceMaxQPS.Key(): 10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():  45000,
	}
	if opts.HistoryCacheSize > 0 {
		dyn[dynamicconfig.HistoryCacheHostLevelMaxSize.Key()] = opts.HistoryCacheSize
	}
	return dyn
}

// startUI starts the Web UI at Options.UIAddr; with TLS, ui-server listens
// on backend (a free loopback address) behind the TLS front (tls.go).
func (s *Server) startUI(backend string) error {
	listen := s.opts.UIAddr
	if s.tls != nil {
		listen = backend
	}
	host, port, err := splitHostPort(listen)
	if err != nil {
		return err
	}
	// The UI calls the internal frontend when there is one: the public
	// one would want TLS, a client certificate and the API key, and the
	// UI has no login that could stand for them.
	upstream := s.frontend
	if s.internalFrontend != "" {
		upstream = s.internalFrontend
	}
	s.ui = uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: upstream,
		EnableUI:            true,
		HideLogs:            true,
		DisableNewsFetch:    true,
		DefaultNamespace:    s.opts.Namespace,
		// Over HTTPS the CSRF cookie is a Secure one.
		CORS:  uiconfig.CORS{CookieInsecure: s.tls == nil},
		Codec: uiconfig.Codec{Endpoint: s.opts.UICodecEndpoint, IncludeCredentials: s.opts.UICodecIncludeCredentials},
	}))
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		_ = s.ui.Start() // blocks until Stop
	}()
	if err := waitDial(listen, 10*time.Second); err != nil || s.tls == nil {
		return err
	}
	s.uiFront, err = s.tls.uiFront(s.opts.UIAddr, backend, s.logger)
	return err
}

// FrontendAddr is the host:port clients dial: Options.FrontendAddr, with
// 127.0.0.1 for an unspecified host such as 0.0.0.0.
func (s *Server) FrontendAddr() string { return s.frontend }

// UIAddr is the host:port of the Web UI, or "" when it is disabled.
func (s *Server) UIAddr() string { return s.opts.UIAddr }

// Stop stops the UI and the server. Stop workers and close clients first:
// that order keeps the shutdown free of error logs.
func (s *Server) Stop() error {
	if s.uiFront != nil {
		_ = s.uiFront.Close()
	}
	if s.ui != nil {
		s.ui.Stop()
		<-s.uiDone
	}
	return s.server.Stop()
}

// probe fails with ErrPortTaken when addr cannot be bound.
func probe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w (is another paywatch dev or Temporal server running?)", addr, ErrPortTaken)
	}
	return l.Close()
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("bad address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, port, nil
}

// freePorts asks the kernel for n distinct free ports on host.
func freePorts(host string, n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("find free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func waitDial(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not come up within %s: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
