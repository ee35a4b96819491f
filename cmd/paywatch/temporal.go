package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch/store"
)

const temporalUsage = `Usage: paywatch temporal serve

Runs a standalone Temporal server, the one this binary links (the version
"paywatch version" builds with, go.temporal.io/server in go.mod), as its own
process: frontend, history, matching and worker services on one node,
persisting to PostgreSQL. paywatch api and worker replicas reach it at
TEMPORAL_ADDRESS. On start it creates its two databases if missing, sets
their schemas up (first start) or updates them to this version, and creates
the namespace with paywatch's search attributes. One server per database:
it holds a PostgreSQL advisory lock on it, and a second one waits 30 s for
the lock, then exits. Binaries built with -tags noembed leave it out.

Environment:
  PAYWATCH_TEMPORAL_DATABASE_URL   postgres:// URL of Temporal's database (required);
                                   its visibility goes to the database of the same name
                                   with "_visibility" appended
  PAYWATCH_TEMPORAL_LISTEN_ADDR    frontend gRPC listener (default 127.0.0.1:7233)
  PAYWATCH_TEMPORAL_UI_ADDR        Web UI listener (default 127.0.0.1:8233; "off" disables it)
  TEMPORAL_NAMESPACE               namespace to create (default "default")
  PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE  workflows whose state the server keeps in memory (default 1000)
  PAYWATCH_METRICS_ADDR            the server's own metrics at /metrics (default off)
  PAYWATCH_LOG_LEVEL               debug, info, warn or error (default info)
  PAYWATCH_TEMPORAL_TLS_CERT_PATH  PEM server certificate (intermediates after it): the
                                   frontend and the Web UI serve TLS (default off)
  PAYWATCH_TEMPORAL_TLS_KEY_PATH   its PEM private key (set both or neither)
  PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH  PEM bundle of client CAs: mutual TLS, where the
                                   frontend and the Web UI refuse a client without a
                                   certificate from one of them (needs the two above)
  PAYWATCH_TEMPORAL_API_KEY        a key every frontend call must carry as
                                   "authorization: Bearer <key>" (TEMPORAL_API_KEY of
                                   paywatch api and worker; 16+ characters; default off)
`

// temporalServeConfig is the configuration of `paywatch temporal serve`.
type temporalServeConfig struct {
	// DatabaseURL is PAYWATCH_TEMPORAL_DATABASE_URL, Temporal's database.
	DatabaseURL string
	// VisibilityURL is DatabaseURL's database with "_visibility" appended.
	VisibilityURL string
	// ListenAddr is PAYWATCH_TEMPORAL_LISTEN_ADDR, the frontend listener.
	ListenAddr string
	// The variables shared with the other commands: TEMPORAL_NAMESPACE,
	// PAYWATCH_TEMPORAL_UI_ADDR, PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE,
	// PAYWATCH_METRICS_ADDR and PAYWATCH_LOG_LEVEL, read as they read them.
	Namespace        string
	UIAddr           string
	HistoryCacheSize int
	MetricsAddr      string
	LogLevel         string
	// TLSCertPath and TLSKeyPath are PAYWATCH_TEMPORAL_TLS_CERT_PATH and
	// PAYWATCH_TEMPORAL_TLS_KEY_PATH: TLS for the frontend and the Web UI.
	TLSCertPath string
	TLSKeyPath  string
	// TLSClientCAPath is PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH: mutual TLS.
	TLSClientCAPath string
	// APIKey is PAYWATCH_TEMPORAL_API_KEY, required of every frontend call.
	APIKey string
}

// minAPIKeyLength is the shortest PAYWATCH_TEMPORAL_API_KEY accepted.
const minAPIKeyLength = 16

// loadTemporalServeConfig reads and checks the configuration, naming every
// missing or malformed variable at once.
func loadTemporalServeConfig(getenv func(string) string) (temporalServeConfig, error) {
	// The shared variables are parsed exactly as serve parses them.
	shared, err := LoadConfig(ModeServe, getenv)
	errs := []error{err}
	c := temporalServeConfig{
		DatabaseURL:      strings.TrimSpace(getenv("PAYWATCH_TEMPORAL_DATABASE_URL")),
		ListenAddr:       strings.TrimSpace(getenv("PAYWATCH_TEMPORAL_LISTEN_ADDR")),
		Namespace:        shared.TemporalNamespace,
		UIAddr:           shared.TemporalUIAddr,
		HistoryCacheSize: shared.TemporalHistoryCacheSize,
		MetricsAddr:      shared.MetricsAddr,
		LogLevel:         shared.LogLevel,
		TLSCertPath:      strings.TrimSpace(getenv("PAYWATCH_TEMPORAL_TLS_CERT_PATH")),
		TLSKeyPath:       strings.TrimSpace(getenv("PAYWATCH_TEMPORAL_TLS_KEY_PATH")),
		TLSClientCAPath:  strings.TrimSpace(getenv("PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH")),
		APIKey:           strings.TrimSpace(getenv("PAYWATCH_TEMPORAL_API_KEY")),
	}
	if c.ListenAddr == "" {
		c.ListenAddr = "127.0.0.1:7233"
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("PAYWATCH_TEMPORAL_DATABASE_URL is required for paywatch temporal serve"))
	} else if c.VisibilityURL, err = visibilityURL(c.DatabaseURL); err != nil {
		errs = append(errs, fmt.Errorf("PAYWATCH_TEMPORAL_DATABASE_URL: %w", err))
	}
	for _, kv := range [][2]string{{"PAYWATCH_TEMPORAL_LISTEN_ADDR", c.ListenAddr}, {"PAYWATCH_TEMPORAL_UI_ADDR", c.UIAddr}, {"PAYWATCH_METRICS_ADDR", c.MetricsAddr}} {
		if _, _, err := net.SplitHostPort(kv[1]); kv[1] != "" && err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port", kv[0], kv[1]))
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("PAYWATCH_LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel))
	}
	errs = append(errs, c.checkTLS()...)
	if c.APIKey != "" && !validAPIKey(c.APIKey) {
		errs = append(errs, fmt.Errorf("PAYWATCH_TEMPORAL_API_KEY must be %d or more printable ASCII characters without spaces", minAPIKeyLength))
	}
	return c, errors.Join(errs...)
}

// checkTLS names every problem of the TLS variables: a certificate
// without its key or the other way round, a client CA without them, and
// files that cannot be read or hold no PEM certificate.
func (c temporalServeConfig) checkTLS() []error {
	var errs []error
	if (c.TLSCertPath == "") != (c.TLSKeyPath == "") {
		errs = append(errs, errors.New("PAYWATCH_TEMPORAL_TLS_CERT_PATH and PAYWATCH_TEMPORAL_TLS_KEY_PATH go together: set both or neither"))
	}
	if c.TLSClientCAPath != "" && (c.TLSCertPath == "" || c.TLSKeyPath == "") {
		errs = append(errs, errors.New("PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH needs PAYWATCH_TEMPORAL_TLS_CERT_PATH and PAYWATCH_TEMPORAL_TLS_KEY_PATH: mutual TLS is TLS first"))
	}
	readable := true
	for _, kv := range [][2]string{{"PAYWATCH_TEMPORAL_TLS_CERT_PATH", c.TLSCertPath}, {"PAYWATCH_TEMPORAL_TLS_KEY_PATH", c.TLSKeyPath}, {"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH", c.TLSClientCAPath}} {
		if kv[1] == "" {
			continue
		}
		b, err := os.ReadFile(kv[1])
		switch {
		case err != nil:
			readable = false
			errs = append(errs, fmt.Errorf("%s: %w", kv[0], err))
		case kv[0] == "PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH" && !x509.NewCertPool().AppendCertsFromPEM(b):
			errs = append(errs, fmt.Errorf("%s: %s holds no PEM certificate", kv[0], kv[1]))
		}
	}
	if readable && c.TLSCertPath != "" && c.TLSKeyPath != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCertPath, c.TLSKeyPath); err != nil {
			errs = append(errs, fmt.Errorf("PAYWATCH_TEMPORAL_TLS_CERT_PATH and PAYWATCH_TEMPORAL_TLS_KEY_PATH are not a PEM certificate and its key: %w", err))
		}
	}
	return errs
}

// validAPIKey reports whether key can travel in a gRPC header as one
// bearer token and is long enough not to be guessed.
func validAPIKey(key string) bool {
	if len(key) < minAPIKeyLength {
		return false
	}
	for _, r := range key {
		if r <= ' ' || r > '~' {
			return false
		}
	}
	return true
}

// security describes what the frontend asks of its clients, for the
// start banner; never the key itself.
func (c temporalServeConfig) security() string {
	var parts []string
	switch {
	case c.TLSClientCAPath != "":
		parts = append(parts, "mutual TLS (client certificates from "+c.TLSClientCAPath+")")
	case c.TLSCertPath != "":
		parts = append(parts, "TLS")
	default:
		parts = append(parts, "no TLS")
	}
	if c.APIKey != "" {
		parts = append(parts, "API key required")
		if c.TLSCertPath == "" {
			parts = append(parts, "sent in clear text without TLS")
		}
	} else {
		parts = append(parts, "no API key")
	}
	return strings.Join(parts, ", ")
}

// visibilityURL returns the URL of the visibility database that goes with
// Temporal's database at raw: the same server, name + "_visibility".
func visibilityURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", errors.New("not a postgres:// URL")
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.Contains(name, "/") {
		return "", errors.New("the URL names no database")
	}
	u.Path = "/" + name + "_visibility"
	u.RawPath = ""
	return u.String(), nil
}

// temporalLockKey is the PostgreSQL advisory lock `paywatch temporal
// serve` holds on Temporal's database for as long as it runs ("paywatch").
const temporalLockKey = 0x7061797761746368

// temporalLockWait is how long a starting server waits for the lock: a
// server killed just before held it until PostgreSQL noticed its
// connection was gone, which takes moments. A variable for tests.
var temporalLockWait = 30 * time.Second

// lockTemporalDatabase takes the advisory lock that makes one `paywatch
// temporal serve` the only server of its database: each is a whole
// single-node cluster that owns every history shard, and two on one
// database take the shards from each other until workflow histories no
// longer match their state. The lock lasts as long as the returned
// connection.
func lockTemporalDatabase(ctx context.Context, databaseURL string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", store.Redact(databaseURL), err)
	}
	deadline := time.Now().Add(temporalLockWait)
	for {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(temporalLockKey)).Scan(&ok); err != nil {
			_ = conn.Close(ctx)
			return nil, fmt.Errorf("lock %s: %w", store.Redact(databaseURL), err)
		}
		if ok {
			return conn, nil
		}
		if time.Now().After(deadline) {
			_ = conn.Close(ctx)
			return nil, fmt.Errorf("another paywatch temporal serve is running on %s: run one server per database", store.Redact(databaseURL))
		}
		select {
		case <-ctx.Done():
			_ = conn.Close(context.Background())
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// runTemporal runs `paywatch temporal ...` and returns the exit code.
func runTemporal(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 1 && args[0] == "serve":
	case len(args) == 1 && args[0] == "help", wantsHelp(args):
		fmt.Fprint(stdout, temporalUsage)
		return 0
	default:
		fmt.Fprint(stderr, temporalUsage)
		return 2
	}
	cfg, err := loadTemporalServeConfig(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch temporal serve: invalid configuration:\n%v\n", err)
		return 2
	}
	for _, u := range []string{cfg.DatabaseURL, cfg.VisibilityURL} {
		if err := store.EnsureDatabase(ctx, u); err != nil {
			fmt.Fprintf(stderr, "paywatch temporal serve: %v\n", err)
			return 1
		}
	}
	lock, err := lockTemporalDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch temporal serve: %v\n", err)
		return 1
	}
	defer lock.Close(context.Background())
	srv, err := startStandaloneTemporal(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch temporal serve: %v\n", err)
		return 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\npaywatch temporal serve is running (Temporal server %s on PostgreSQL)\n", temporalServerVersion)
	fmt.Fprintf(&b, "  Frontend     %s  (TEMPORAL_ADDRESS of paywatch api and worker)\n", cfg.ListenAddr)
	fmt.Fprintf(&b, "  Security     %s\n", cfg.security())
	fmt.Fprintf(&b, "  Namespace    %s\n", cfg.Namespace)
	if cfg.UIAddr != "" {
		scheme := "http"
		if cfg.TLSCertPath != "" {
			scheme = "https"
		}
		fmt.Fprintf(&b, "  Temporal UI  %s://%s  (no login of its own: it acts as the server)\n", scheme, cfg.UIAddr)
	}
	if cfg.MetricsAddr != "" {
		fmt.Fprintf(&b, "  Metrics      http://%s/metrics\n", cfg.MetricsAddr)
	}
	fmt.Fprintf(&b, "  Database     %s (visibility: %s)\n\n", store.Redact(cfg.DatabaseURL), store.Redact(cfg.VisibilityURL))
	_, _ = io.WriteString(stdout, b.String())
	code := 0
	if err := holdLock(ctx, lock); err != nil {
		fmt.Fprintf(stderr, "paywatch temporal serve: lost the lock on %s, stopping so that no other server shares the database: %v\n", store.Redact(cfg.DatabaseURL), err)
		code = 1
	}
	if err := srv.Stop(); err != nil {
		fmt.Fprintf(stderr, "paywatch temporal serve: shutdown: %v\n", err)
		return 1
	}
	return code
}

// temporalLockCheck is how often a running server checks that it still
// holds its lock. A variable for tests.
var temporalLockCheck = 5 * time.Second

// holdLock returns nil when ctx ends, or an error as soon as the lock's
// connection is gone (the database dropped, PostgreSQL restarted, an
// operator's pg_terminate_backend): then another server may already have
// taken the lock, and this one must stop. A restart policy brings it back,
// and it waits for the lock again.
func holdLock(ctx context.Context, lock *pgx.Conn) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(temporalLockCheck):
		}
		pctx, cancel := context.WithTimeout(ctx, temporalLockCheck)
		err := lock.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
}
