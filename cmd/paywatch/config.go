package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/telegram"
)

// Mode is the subcommand a process runs; it decides defaults and which parts start.
type Mode string

// The process modes of operations.md §1.
const (
	ModeDev    Mode = "dev"
	ModeServe  Mode = "serve"
	ModeAPI    Mode = "api"
	ModeWorker Mode = "worker"
)

// Config is every setting of a paywatch process, read from the environment.
//
//	DATABASE_URL                      pgx connection string (dev: local PostgreSQL, database paywatch, created if missing)
//	TEMPORAL_ADDRESS                  host:port of a Temporal frontend, here or in the profile (dev: empty, an embedded server starts; otherwise required)
//	TEMPORAL_NAMESPACE                Temporal namespace (default: the profile's, else "default")
//	TEMPORAL_API_KEY                  API key sent to Temporal, e.g. Temporal Cloud's; turns TLS on unless TEMPORAL_TLS=false; never logged
//	TEMPORAL_TLS                      true or false: TLS to the Temporal frontend (default false; true with an API key or any TLS setting)
//	TEMPORAL_TLS_CLIENT_CERT_PATH     mTLS client certificate (PEM), with TEMPORAL_TLS_CLIENT_KEY_PATH
//	TEMPORAL_TLS_CLIENT_KEY_PATH      mTLS client private key (PEM); never logged
//	TEMPORAL_TLS_SERVER_CA_CERT_PATH  CA certificate (PEM) the frontend's certificate is checked against (default: the system's roots)
//	TEMPORAL_TLS_SERVER_NAME          name the frontend's certificate is checked for (default: TEMPORAL_ADDRESS's host)
//	TEMPORAL_PROFILE                  profile of the Temporal CLI's config file to read (default "default"); the variables above override its values
//	TEMPORAL_CONFIG_FILE              the Temporal CLI's config file (default <user config dir>/temporalio/temporal.toml; dev reads one only when this or TEMPORAL_PROFILE is set)
//	TEMPORAL_TLS_*_DATA, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION, TEMPORAL_CLIENT_AUTHORITY, TEMPORAL_GRPC_META_<HEADER>  as the Temporal CLI reads them
//	PAYWATCH_DATA_DIR                 embedded Temporal's SQLite file, the dev master key (default ".data")
//	PAYWATCH_API_ADDR                 listener for {base_url} (default 127.0.0.1:8080)
//	PAYWATCH_PAY_ADDR                 listener for {pay_url} (default 127.0.0.1:8081)
//	PAYWATCH_BASE_URL                 public address of the API (default http://<API_ADDR>)
//	PAYWATCH_PAY_URL                  public address of the hosted pages (default http://<PAY_ADDR>)
//	PAYWATCH_MASTER_KEY               operator key mk_... (dev: generated once into the data dir)
//	PAYWATCH_PAYLOAD_KEY              AES-256 key (base64 or hex) payloads are sealed with before they reach Temporal (default: derived from the master key)
//	PAYWATCH_PAYLOAD_OLD_KEYS         earlier payload keys, comma-separated, still read (key rotation)
//	PAYWATCH_TEMPORAL_CLEAR_REFS      true: the ExternalRef and ExternalOrderId search attributes show the references in clear (default false: keyed hashes)
//	PAYWATCH_TEMPORAL_UI_ORIGINS      browser origins of Temporal Web UIs allowed to call the codec endpoint, e.g. https://cloud.temporal.io
//	PAYWATCH_WEBHOOK_ALLOW_PRIVATE    allow webhook URLs on private/loopback addresses (dev: true, otherwise false)
//	PAYWATCH_WEBHOOK_ALLOW_HTTP       allow plain http:// webhook URLs (dev: true, otherwise false: HTTPS in production)
//	PAYWATCH_SMTP_URL                 smtp://user:pass@host:port or smtps://...; outgoing e-mail (dev without it: the /dev/mail outbox)
//	PAYWATCH_MAIL_FROM                sender of every e-mail (default paywatch <noreply@localhost>)
//	PAYWATCH_TELEGRAM_BOT_TOKEN       the deployment's Telegram bot (empty: chat notifications off)
//	PAYWATCH_TELEGRAM_API_URL         Bot API base URL (default https://api.telegram.org)
//	PAYWATCH_REQUIRE_2FA              owners must turn on two-factor sign-in before using the dashboard's owner pages (default false)
//	PAYWATCH_TRUSTED_PROXIES          comma-separated CIDRs (or addresses) of reverse proxies whose X-Forwarded-For is honoured
//	PAYWATCH_MAX_LAG_BLOCKS           a scanner more blocks than this behind its head makes /health degraded (default 100)
//	PAYWATCH_METRICS_ADDR             listener for GET /metrics in the Prometheus text format (dev: 127.0.0.1:9090, skipped with a warning if taken; otherwise empty: off; "off" disables it)
//	PAYWATCH_<NETWORK>_RPC_URL        comma-separated RPC endpoints of a network, in failover order (JSON-RPC URLs; TRC20: host:port or grpc://, grpcs://, http(s):// FullNode HTTP API)
//	PAYWATCH_<NETWORK>_RPC_HEADERS    headers sent to every endpoint of the network, as Name=value pairs separated by commas (values percent-encoded where needed), e.g. TRON-PRO-API-KEY=...
//	PAYWATCH_<NETWORK>_RPC_HEADERS_<N>  headers for the N-th endpoint only (1-based), on top of the network's
//	PAYWATCH_<NETWORK>_QUORUM         how many of the network's endpoints must agree on every answer (default 1: one endpoint at a time, with failover; at most the number of RPC URLs)
//	PAYWATCH_<NETWORK>_<TOKEN>_CONTRACT  token contract override
//	PAYWATCH_<NETWORK>_POLL_INTERVAL  how often the network's scanner polls while payments wait on it (default: the network's block time)
//	PAYWATCH_<NETWORK>_IDLE_POLL_INTERVAL  how often it polls while nothing waits (default 60s on EVM networks, 100 blocks' time on TRC20)
//	PAYWATCH_<NETWORK>_DAILY_BUDGET   RPC requests the network may use per UTC day, spread evenly over it (default: no limit)
//	PAYWATCH_ALLOW_OTHER_CHAINS       start even when an endpoint serves another chain than its network's mainnet (a testnet staging setup; default false)
//	PAYWATCH_DEVNET                   run devnet chains for networks without an RPC URL (dev: true; never in serve)
//	PAYWATCH_DEVNET_BLOCK_INTERVAL    devnet block time (default 1s)
//	PAYWATCH_TEMPORAL_DEV_ADDR        embedded Temporal frontend (default 127.0.0.1:7233)
//	PAYWATCH_TEMPORAL_UI_ADDR         embedded Temporal Web UI (default 127.0.0.1:8233; "off" disables it)
//	PAYWATCH_TASK_QUEUE               Temporal task queue (default "paywatch")
//	PAYWATCH_WORKFLOW_CACHE_SIZE      workflows the worker keeps in memory between their tasks (default 1000; 0 turns the cache off)
//	PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE  workflows the embedded Temporal server keeps in memory (default 1000, at least 100)
//	PAYWATCH_LEAN_PAYMENTS            new payments' workflows take the lean history (default true; false while workers of the release before still run)
//	PAYWATCH_DRAIN_DELAY              how long /health answers 503 before listeners close (dev 0s, otherwise 5s)
//	PAYWATCH_SHUTDOWN_TIMEOUT         upper bound for draining in-flight requests (default 15s)
//	PAYWATCH_LOG_LEVEL                debug, info, warn or error (default info)
type Config struct {
	Mode Mode

	DatabaseURL string
	// TemporalAddress and TemporalNamespace are TEMPORAL_ADDRESS and
	// TEMPORAL_NAMESPACE, or the profile's (Temporal); the rest of the
	// connection is in Temporal.
	TemporalAddress   string
	TemporalNamespace string
	// Temporal is how the process reaches an external Temporal server: API
	// key, TLS, the Temporal CLI profile read. It prints without secrets.
	Temporal TemporalConnection
	// Payload is how payloads are sealed for Temporal (config_payload.go);
	// its keys derive from the master key unless set.
	Payload   payloadEnv
	TaskQueue string
	DataDir   string

	APIAddr string
	PayAddr string
	BaseURL string
	PayURL  string
	// MetricsAddr is PAYWATCH_METRICS_ADDR, the listener of GET /metrics
	// (package metrics), apart from the API's; empty turns it off.
	MetricsAddr string
	// MetricsAddrDefault says MetricsAddr is dev's default, not set: when
	// it cannot be bound (a local Prometheus on 9090), the process warns
	// and runs without the listener. A set address that cannot be bound
	// is fatal.
	MetricsAddrDefault bool

	MasterKey           string
	WebhookAllowPrivate bool
	WebhookAllowHTTP    bool
	// SMTPURL is PAYWATCH_SMTP_URL; empty keeps e-mail in the dev outbox
	// (dev) or retries it until one is set (elsewhere).
	SMTPURL string
	// MailFrom is PAYWATCH_MAIL_FROM, the sender of every e-mail.
	MailFrom string
	// TelegramBotToken is PAYWATCH_TELEGRAM_BOT_TOKEN; empty turns chat
	// notifications off. It is a secret: never logged.
	TelegramBotToken string
	// TelegramAPIURL is PAYWATCH_TELEGRAM_API_URL, the Bot API base URL.
	TelegramAPIURL string
	// RequireTwoFactor is PAYWATCH_REQUIRE_2FA: project owners must turn on
	// two-factor sign-in before the dashboard's owner pages open.
	RequireTwoFactor bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client; empty ignores the header.
	TrustedProxies []netip.Prefix
	// MaxLagBlocks is PAYWATCH_MAX_LAG_BLOCKS: /health answers degraded,
	// naming the network, while a scanner is more blocks than this behind
	// its head. At least 1.
	MaxLagBlocks uint64

	// RPCURLs maps a network to its RPC endpoints, in failover order.
	RPCURLs map[paywatch.Network][]string
	// RPCHeaders maps a network to one header set per RPC URL (nil for
	// none): PAYWATCH_<NETWORK>_RPC_HEADERS with _<N> on top.
	RPCHeaders map[paywatch.Network][]http.Header
	// Quorums is PAYWATCH_<NETWORK>_QUORUM per network where it is set
	// (chains.Config.Quorum): how many endpoints must agree on an answer.
	Quorums map[paywatch.Network]int
	// Contracts overrides token contracts per network and token.
	Contracts map[paywatch.Network]map[paywatch.Token]string
	// PollIntervals and IdlePollIntervals are PAYWATCH_<NETWORK>_POLL_INTERVAL
	// and _IDLE_POLL_INTERVAL: the scanners' poll intervals while payments
	// wait on a network and while nothing does (activities.ScannerDeps).
	PollIntervals, IdlePollIntervals map[paywatch.Network]time.Duration
	// DailyBudgets is PAYWATCH_<NETWORK>_DAILY_BUDGET: the RPC requests a
	// network may use per UTC day (activities.ScannerDeps.DailyBudget).
	DailyBudgets map[paywatch.Network]uint64
	// AllowOtherChains is PAYWATCH_ALLOW_OTHER_CHAINS: the start-up guard
	// warns instead of refusing an endpoint of another chain.
	AllowOtherChains bool

	Devnet              bool
	DevnetBlockInterval time.Duration
	// DevnetBlockIntervals overrides DevnetBlockInterval per network, and
	// DevnetBlockJitter varies each interval by up to that fraction
	// (devnet.Config); no environment variable sets them: the latency
	// benchmark runs each chain at its mainnet block time with them.
	DevnetBlockIntervals map[paywatch.Network]time.Duration
	DevnetBlockJitter    float64

	TemporalDevAddr string
	TemporalUIAddr  string

	// WorkflowCacheSize is PAYWATCH_WORKFLOW_CACHE_SIZE, the worker's
	// sticky workflow cache: how many workflows keep their state (and their
	// goroutines) in memory between workflow tasks, so a task needs no
	// replay of the history. Open payments beyond it cost no memory of the
	// worker; their next task replays their history. 0 turns it off.
	WorkflowCacheSize int
	// TemporalHistoryCacheSize is PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE, the
	// embedded Temporal server's history cache (its dynamic config
	// history.hostLevelCacheMaxSize): how many workflows' mutable state it
	// keeps in memory. Beyond it, a workflow's state is read from SQLite
	// when it next does something. Only the embedded server uses it.
	TemporalHistoryCacheSize int
	// LeanPayments is PAYWATCH_LEAN_PAYMENTS: new payments' workflows take
	// the lean history (workflows.LeanLifecycle: fewer Temporal Actions,
	// less history). false starts them in the shape of the release before,
	// whose workers can run them: while workers of both releases run.
	LeanPayments bool

	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	LogLevel        string
}

// Cache sizes. Every open payment is a running workflow, and both the
// worker and the Temporal server would otherwise keep every one touched in
// the last hour in memory (the SDK's default of 10,000 workflows and the
// server's of 128,000, at tens of KB each): the caches hold the payments
// that are busy, the others wait in the database.
const (
	// DefaultWorkflowCacheSize is PAYWATCH_WORKFLOW_CACHE_SIZE's default.
	DefaultWorkflowCacheSize = 1000
	// DefaultTemporalHistoryCacheSize is PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE's default.
	DefaultTemporalHistoryCacheSize = 1000
	// MinTemporalHistoryCacheSize is the smallest history cache: entries of
	// workflows being worked on cannot be evicted, and a cache full of them
	// fails requests.
	MinTemporalHistoryCacheSize = 100
)

// LoadConfig reads the configuration for mode from getenv, applying that
// mode's defaults. It reports unparseable values; Validate reports missing ones.
func LoadConfig(mode Mode, getenv func(string) string) (Config, error) {
	dev := mode == ModeDev
	var errs []error
	str := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	boolean := func(key string, def bool) bool {
		v := strings.TrimSpace(getenv(key))
		if v == "" {
			return def
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a boolean", key, v))
			return def
		}
		return b
	}
	count := func(key string, def, least int) int {
		v := strings.TrimSpace(getenv(key))
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
		if err != nil || n < least {
			errs = append(errs, fmt.Errorf("%s: %q is not a whole number of at least %d", key, v, least))
			return def
		}
		return n
	}
	duration := func(key string, def time.Duration) time.Duration {
		v := strings.TrimSpace(getenv(key))
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a duration such as 1s or 500ms", key, v))
			return def
		}
		return d
	}

	c := Config{Mode: mode}
	c.DatabaseURL = str("DATABASE_URL", "")
	if c.DatabaseURL == "" && dev {
		c.DatabaseURL = "postgres://postgres@127.0.0.1:5432/paywatch?sslmode=disable"
	}
	c.Temporal = loadTemporalConnection(mode, getenv)
	c.TemporalAddress = c.Temporal.profile.Address
	if c.TemporalNamespace = c.Temporal.profile.Namespace; c.TemporalNamespace == "" {
		c.TemporalNamespace = "default"
	}
	c.TaskQueue = str("PAYWATCH_TASK_QUEUE", "paywatch")
	c.DataDir = str("PAYWATCH_DATA_DIR", ".data")
	c.APIAddr = str("PAYWATCH_API_ADDR", "127.0.0.1:8080")
	c.PayAddr = str("PAYWATCH_PAY_ADDR", "127.0.0.1:8081")
	defMetrics := ""
	if dev {
		defMetrics = "127.0.0.1:9090"
	}
	if c.MetricsAddr = str("PAYWATCH_METRICS_ADDR", defMetrics); strings.EqualFold(c.MetricsAddr, "off") {
		c.MetricsAddr = ""
	}
	c.MetricsAddrDefault = dev && strings.TrimSpace(getenv("PAYWATCH_METRICS_ADDR")) == ""
	c.BaseURL = strings.TrimRight(str("PAYWATCH_BASE_URL", ""), "/")
	c.PayURL = strings.TrimRight(str("PAYWATCH_PAY_URL", ""), "/")
	c.MasterKey = str("PAYWATCH_MASTER_KEY", "")
	c.WebhookAllowPrivate = boolean("PAYWATCH_WEBHOOK_ALLOW_PRIVATE", dev)
	c.WebhookAllowHTTP = boolean("PAYWATCH_WEBHOOK_ALLOW_HTTP", dev)
	c.SMTPURL = str("PAYWATCH_SMTP_URL", "")
	c.MailFrom = str("PAYWATCH_MAIL_FROM", "paywatch <noreply@localhost>")
	c.RequireTwoFactor = boolean("PAYWATCH_REQUIRE_2FA", false)
	c.TelegramBotToken = str("PAYWATCH_TELEGRAM_BOT_TOKEN", "")
	c.TelegramAPIURL = strings.TrimRight(str("PAYWATCH_TELEGRAM_API_URL", telegram.DefaultAPIURL), "/")
	for _, v := range strings.Split(getenv("PAYWATCH_TRUSTED_PROXIES"), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		p, err := parsePrefix(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("PAYWATCH_TRUSTED_PROXIES: %q is not a CIDR such as 10.0.0.0/8 or an IP address", v))
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}
	c.MaxLagBlocks = uint64(count("PAYWATCH_MAX_LAG_BLOCKS", api.DefaultMaxLagBlocks, 1))
	c.Devnet = boolean("PAYWATCH_DEVNET", dev)
	c.AllowOtherChains = boolean("PAYWATCH_ALLOW_OTHER_CHAINS", false)
	c.DevnetBlockInterval = duration("PAYWATCH_DEVNET_BLOCK_INTERVAL", time.Second)
	c.Payload = readPayloadEnv(getenv)
	c.TemporalDevAddr = str("PAYWATCH_TEMPORAL_DEV_ADDR", "127.0.0.1:7233")
	c.TemporalUIAddr = str("PAYWATCH_TEMPORAL_UI_ADDR", "127.0.0.1:8233")
	if strings.EqualFold(c.TemporalUIAddr, "off") {
		c.TemporalUIAddr = ""
	}
	c.WorkflowCacheSize = count("PAYWATCH_WORKFLOW_CACHE_SIZE", DefaultWorkflowCacheSize, 0)
	c.TemporalHistoryCacheSize = count("PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE", DefaultTemporalHistoryCacheSize, MinTemporalHistoryCacheSize)
	c.LeanPayments = boolean("PAYWATCH_LEAN_PAYMENTS", true)
	defDrain := 5 * time.Second
	if dev {
		defDrain = 0
	}
	c.DrainDelay = duration("PAYWATCH_DRAIN_DELAY", defDrain)
	c.ShutdownTimeout = duration("PAYWATCH_SHUTDOWN_TIMEOUT", 15*time.Second)
	c.LogLevel = strings.ToLower(str("PAYWATCH_LOG_LEVEL", "info"))

	c.RPCURLs = map[paywatch.Network][]string{}
	c.RPCHeaders = map[paywatch.Network][]http.Header{}
	c.Quorums = map[paywatch.Network]int{}
	c.PollIntervals = map[paywatch.Network]time.Duration{}
	c.IdlePollIntervals = map[paywatch.Network]time.Duration{}
	c.DailyBudgets = map[paywatch.Network]uint64{}
	c.Contracts = map[paywatch.Network]map[paywatch.Token]string{}
	for _, n := range paywatch.Networks() {
		if v := getenv("PAYWATCH_" + string(n.Network) + "_RPC_URL"); strings.TrimSpace(v) != "" {
			for _, u := range strings.Split(v, ",") {
				if u = strings.TrimSpace(u); u != "" {
					c.RPCURLs[n.Network] = append(c.RPCURLs[n.Network], u)
				}
			}
		}
		if v := strings.TrimSpace(getenv("PAYWATCH_" + string(n.Network) + "_POLL_INTERVAL")); v != "" {
			c.PollIntervals[n.Network] = duration("PAYWATCH_"+string(n.Network)+"_POLL_INTERVAL", 0)
		}
		if v := strings.TrimSpace(getenv("PAYWATCH_" + string(n.Network) + "_IDLE_POLL_INTERVAL")); v != "" {
			c.IdlePollIntervals[n.Network] = duration("PAYWATCH_"+string(n.Network)+"_IDLE_POLL_INTERVAL", 0)
		}
		if b := count("PAYWATCH_"+string(n.Network)+"_DAILY_BUDGET", 0, 1); b > 0 {
			c.DailyBudgets[n.Network] = uint64(b)
		}
		headers, err := rpcHeaders(string(n.Network), len(c.RPCURLs[n.Network]), getenv)
		if err != nil {
			errs = append(errs, err)
		}
		c.RPCHeaders[n.Network] = headers
		if q, err := rpcQuorum(string(n.Network), c.RPCURLs[n.Network], getenv); err != nil {
			errs = append(errs, err)
		} else if q > 0 {
			c.Quorums[n.Network] = q
		}
		for _, t := range n.Tokens {
			if v := strings.TrimSpace(getenv("PAYWATCH_" + string(n.Network) + "_" + string(t) + "_CONTRACT")); v != "" {
				if c.Contracts[n.Network] == nil {
					c.Contracts[n.Network] = map[paywatch.Token]string{}
				}
				c.Contracts[n.Network][t] = v
			}
		}
	}
	if c.BaseURL == "" {
		c.BaseURL = "http://" + c.APIAddr
	}
	if c.PayURL == "" {
		c.PayURL = "http://" + c.PayAddr
	}
	return c, errors.Join(errs...)
}

// Validate reports every missing or malformed setting at once, naming the
// variables, so an operator fixes them in one go.
func (c Config) Validate() error {
	var errs []error
	missing := func(key string) { errs = append(errs, fmt.Errorf("%s is required for paywatch %s", key, c.Mode)) }
	switch c.Mode {
	case ModeDev:
	case ModeServe, ModeAPI, ModeWorker:
		if c.DatabaseURL == "" {
			missing("DATABASE_URL")
		}
		if c.TemporalAddress == "" && c.Temporal.err == nil {
			errs = append(errs, fmt.Errorf("TEMPORAL_ADDRESS is required for paywatch %s (or an address in a Temporal CLI profile: TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE; %s)", c.Mode, c.Temporal.profileRead()))
		}
		if c.MasterKey == "" && c.Mode != ModeWorker {
			missing("PAYWATCH_MASTER_KEY")
		}
		// A worker seals and opens payloads with the key the API uses:
		// PAYWATCH_PAYLOAD_KEY, or one derived from the master key.
		if c.MasterKey == "" && c.Mode == ModeWorker && strings.TrimSpace(c.Payload.key) == "" {
			errs = append(errs, errors.New("PAYWATCH_MASTER_KEY (or PAYWATCH_PAYLOAD_KEY) is required for paywatch worker: it reads the payloads the API seals"))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown mode %q", c.Mode))
	}
	if c.Temporal.err != nil {
		errs = append(errs, c.Temporal.err)
	} else if !c.EmbeddedTemporal() {
		if err := c.Temporal.checkTLS(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.MasterKey != "" && !strings.HasPrefix(c.MasterKey, "mk_") {
		errs = append(errs, errors.New("PAYWATCH_MASTER_KEY must start with mk_"))
	} else if c.MasterKey != "" && len(c.MasterKey) < 3+24 {
		errs = append(errs, errors.New("PAYWATCH_MASTER_KEY is too short: use at least 24 random characters after mk_"))
	}
	if c.SMTPURL != "" {
		if _, err := activities.NewSMTPMailer(c.SMTPURL, c.MailFrom); err != nil {
			errs = append(errs, err)
		}
	}
	if u, err := url.Parse(c.TelegramAPIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("PAYWATCH_TELEGRAM_API_URL: %q is not an http(s) URL", c.TelegramAPIURL))
	}
	if strings.ContainsAny(c.TelegramBotToken, " /?#") {
		errs = append(errs, errors.New("PAYWATCH_TELEGRAM_BOT_TOKEN is not a bot token (it looks like 123456:ABC-DEF...)"))
	}
	if c.Mode == ModeAPI || c.Mode == ModeServe || c.Mode == ModeDev {
		for _, kv := range [][2]string{{"PAYWATCH_API_ADDR", c.APIAddr}, {"PAYWATCH_PAY_ADDR", c.PayAddr}} {
			if _, _, err := net.SplitHostPort(kv[1]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not host:port", kv[0], kv[1]))
			}
		}
		for _, kv := range [][2]string{{"PAYWATCH_BASE_URL", c.BaseURL}, {"PAYWATCH_PAY_URL", c.PayURL}} {
			u, err := url.Parse(kv[1])
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s: %q is not an http(s) URL", kv[0], kv[1]))
			}
		}
	}
	if _, _, err := net.SplitHostPort(c.MetricsAddr); c.MetricsAddr != "" && err != nil {
		errs = append(errs, fmt.Errorf("PAYWATCH_METRICS_ADDR: %q is not host:port (or off)", c.MetricsAddr))
	}
	if c.Mode != ModeDev && c.Devnet {
		errs = append(errs, errors.New("PAYWATCH_DEVNET is only available in paywatch dev"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("PAYWATCH_LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel))
	}
	// The payload variables' form; the keys themselves need the master
	// key, which dev may generate later.
	if _, err := c.Payload.load("validate"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// parsePrefix reads a CIDR, or a single address as its one-address prefix.
func parsePrefix(v string) (netip.Prefix, error) {
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// EmbeddedTemporal reports whether this process starts its own Temporal server.
func (c Config) EmbeddedTemporal() bool {
	return c.Mode == ModeDev && c.TemporalAddress == ""
}

// RunsAPI reports whether this process serves the REST API and hosted pages.
func (c Config) RunsAPI() bool { return c.Mode != ModeWorker }

// RunsWorker reports whether this process runs the Temporal worker and scanners.
func (c Config) RunsWorker() bool { return c.Mode != ModeAPI }
