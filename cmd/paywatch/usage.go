package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/paywatch/paywatch"
)

// serviceEnvironment is what `paywatch dev --help` (and serve, api,
// worker) lists: the variables of Config's doc comment, line for line
// (TestServiceUsageListsEveryVariable keeps them the same).
var serviceEnvironment = `Environment (the defaults are dev's; docs/operating.md, Configuration, says more):
  DATABASE_URL                      pgx connection string (dev: local PostgreSQL, database paywatch, created if missing)
  TEMPORAL_ADDRESS                  host:port of a Temporal frontend, here or in the profile (dev: empty, an embedded server starts; otherwise required)
  TEMPORAL_NAMESPACE                Temporal namespace (default: the profile's, else "default")
  TEMPORAL_API_KEY                  API key sent to Temporal, e.g. Temporal Cloud's; turns TLS on unless TEMPORAL_TLS=false; never logged
  TEMPORAL_TLS                      true or false: TLS to the Temporal frontend (default false; true with an API key or any TLS setting)
  TEMPORAL_TLS_CLIENT_CERT_PATH     mTLS client certificate (PEM), with TEMPORAL_TLS_CLIENT_KEY_PATH
  TEMPORAL_TLS_CLIENT_KEY_PATH      mTLS client private key (PEM); never logged
  TEMPORAL_TLS_SERVER_CA_CERT_PATH  CA certificate (PEM) the frontend's certificate is checked against (default: the system's roots)
  TEMPORAL_TLS_SERVER_NAME          name the frontend's certificate is checked for (default: TEMPORAL_ADDRESS's host)
  TEMPORAL_PROFILE                  profile of the Temporal CLI's config file to read (default "default"); the variables above override its values
  TEMPORAL_CONFIG_FILE              the Temporal CLI's config file (default <user config dir>/temporalio/temporal.toml; dev reads one only when this or TEMPORAL_PROFILE is set)
  TEMPORAL_TLS_*_DATA, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION, TEMPORAL_CLIENT_AUTHORITY, TEMPORAL_GRPC_META_<HEADER>  as the Temporal CLI reads them
  PAYWATCH_DATA_DIR                 embedded Temporal's SQLite file, the dev master key (default ".data")
  PAYWATCH_API_ADDR                 listener for {base_url} (default 127.0.0.1:8080)
  PAYWATCH_PAY_ADDR                 listener for {pay_url} (default 127.0.0.1:8081)
  PAYWATCH_BASE_URL                 public address of the API (default http://<API_ADDR>)
  PAYWATCH_PAY_URL                  public address of the hosted pages (default http://<PAY_ADDR>)
  PAYWATCH_MASTER_KEY               operator key mk_... (dev: generated once into the data dir)
  PAYWATCH_PAYLOAD_KEY              AES-256 key (base64 or hex) payloads are sealed with before they reach Temporal (default: derived from the master key)
  PAYWATCH_PAYLOAD_OLD_KEYS         earlier payload keys, comma-separated, still read (key rotation)
  PAYWATCH_TEMPORAL_CLEAR_REFS      true: the ExternalRef and ExternalOrderId search attributes show the references in clear (default false: keyed hashes)
  PAYWATCH_TEMPORAL_UI_ORIGINS      browser origins of Temporal Web UIs allowed to call the codec endpoint, e.g. https://cloud.temporal.io
  PAYWATCH_WEBHOOK_ALLOW_PRIVATE    allow webhook URLs on private/loopback addresses (dev: true, otherwise false)
  PAYWATCH_WEBHOOK_ALLOW_HTTP       allow plain http:// webhook URLs (dev: true, otherwise false: HTTPS in production)
  PAYWATCH_SMTP_URL                 smtp://user:pass@host:port or smtps://...; outgoing e-mail (dev without it: the /dev/mail outbox)
  PAYWATCH_MAIL_FROM                sender of every e-mail (default paywatch <noreply@localhost>)
  PAYWATCH_TELEGRAM_BOT_TOKEN       the deployment's Telegram bot (empty: chat notifications off)
  PAYWATCH_TELEGRAM_API_URL         Bot API base URL (default https://api.telegram.org)
  PAYWATCH_REQUIRE_2FA              owners must turn on two-factor sign-in before using the dashboard's owner pages (default false)
  PAYWATCH_TRUSTED_PROXIES          comma-separated CIDRs (or addresses) of reverse proxies whose X-Forwarded-For is honoured
  PAYWATCH_MAX_LAG_BLOCKS           a scanner more blocks than this behind its head makes /health degraded (default 100)
  PAYWATCH_METRICS_ADDR             listener for GET /metrics in the Prometheus text format (dev: 127.0.0.1:9090, skipped with a warning if taken; otherwise empty: off; "off" disables it)
  PAYWATCH_<NETWORK>_RPC_URL        comma-separated RPC endpoints of a network, in failover order (JSON-RPC URLs; TRC20: host:port or grpc://, grpcs://, http(s):// FullNode HTTP API)
  PAYWATCH_<NETWORK>_RPC_HEADERS    headers sent to every endpoint of the network, as Name=value pairs separated by commas (values percent-encoded where needed), e.g. TRON-PRO-API-KEY=...
  PAYWATCH_<NETWORK>_RPC_HEADERS_<N>  headers for the N-th endpoint only (1-based), on top of the network's
  PAYWATCH_<NETWORK>_QUORUM         how many of the network's endpoints must agree on every answer (default 1: one endpoint at a time, with failover; at most the number of RPC URLs)
  PAYWATCH_<NETWORK>_<TOKEN>_CONTRACT  token contract override
  PAYWATCH_<NETWORK>_POLL_INTERVAL  how often the network's scanner polls while payments wait on it (default: the network's block time)
  PAYWATCH_<NETWORK>_IDLE_POLL_INTERVAL  how often it polls while nothing waits (default 60s on EVM networks, 100 blocks' time on TRC20)
  PAYWATCH_<NETWORK>_DAILY_BUDGET   RPC requests the network may use per UTC day, spread evenly over it (default: no limit)
  PAYWATCH_ALLOW_OTHER_CHAINS       start even when an endpoint serves another chain than its network's mainnet (a testnet staging setup; default false)
  PAYWATCH_DEVNET                   run devnet chains for networks without an RPC URL (dev: true; never in serve)
  PAYWATCH_DEVNET_BLOCK_INTERVAL    devnet block time (default 1s)
  PAYWATCH_TEMPORAL_DEV_ADDR        embedded Temporal frontend (default 127.0.0.1:7233)
  PAYWATCH_TEMPORAL_UI_ADDR         embedded Temporal Web UI (default 127.0.0.1:8233; "off" disables it)
  PAYWATCH_TASK_QUEUE               Temporal task queue (default "paywatch")
  PAYWATCH_WORKFLOW_CACHE_SIZE      workflows the worker keeps in memory between their tasks (default 1000; 0 turns the cache off)
  PAYWATCH_TEMPORAL_HISTORY_CACHE_SIZE  workflows the embedded Temporal server keeps in memory (default 1000, at least 100)
  PAYWATCH_LEAN_PAYMENTS            new payments' workflows take the lean history (default true; false while workers of the release before still run)
  PAYWATCH_DRAIN_DELAY              how long /health answers 503 before listeners close (dev 0s, otherwise 5s)
  PAYWATCH_SHUTDOWN_TIMEOUT         upper bound for draining in-flight requests (default 15s)
  PAYWATCH_LOG_LEVEL                debug, info, warn or error (default info)
` + namesLine

// serviceUsage is the usage of a long-lived mode.
func serviceUsage(mode Mode) string {
	what := map[Mode]string{
		ModeDev: `Runs everything in one process on embedded defaults: the API and hosted
pages, the Temporal worker and chain scanners, an embedded Temporal server,
devnet chains for the networks without an RPC URL, and the local PostgreSQL.
It needs no variable at all.`,
		ModeServe: `Runs the API, hosted pages, worker and scanners against a configured
Temporal cluster and RPC endpoints. It needs DATABASE_URL, TEMPORAL_ADDRESS
(or a Temporal CLI profile with an address) and PAYWATCH_MASTER_KEY.`,
		ModeAPI: `Runs the API and hosted pages only, to scale out behind a Temporal cluster.
It needs DATABASE_URL, TEMPORAL_ADDRESS (or a Temporal CLI profile with an
address) and PAYWATCH_MASTER_KEY.`,
		ModeWorker: `Runs the Temporal worker and chain scanners only, to scale out behind a
Temporal cluster. It needs DATABASE_URL and TEMPORAL_ADDRESS (or a
Temporal CLI profile with an address).`,
	}[mode]
	return fmt.Sprintf(`Usage: paywatch %s

%s

It applies the database migrations first, and runs until SIGINT or
SIGTERM. It takes no arguments: it reads its configuration from the
environment, and refuses to start without what it needs, naming every
missing variable.

%s
%s`, mode, what, temporalConnectionUsage, serviceEnvironment)
}

// temporalConnectionUsage says how a service connects to Temporal.
const temporalConnectionUsage = `It connects to Temporal as the Temporal CLI does: the TEMPORAL_* variables
below, over a profile of the CLI's temporal.toml, so a "temporal" setup
works unchanged. For Temporal Cloud, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and
TEMPORAL_API_KEY (or the TEMPORAL_TLS_CLIENT_* certificate and key) are
enough. It logs the address, namespace, TLS and whether an API key is
sent, never the key. On a namespace where it may not add its search
attributes (Temporal Cloud), it stops and prints the tcld command that
adds them.
`

const migrateUsage = `Usage: paywatch migrate

Applies the database migrations and exits, printing the version the
database is at (every other command applies them on start too). It takes
no arguments.

Environment:
  DATABASE_URL   pgx connection string (unset: local PostgreSQL, database paywatch, created if missing)
`

var checkUsage = `Usage: paywatch check

Checks every configured RPC endpoint of every network on its own, before you
go live and whenever a network looks wrong: reachable, the right chain,
synced, token contracts and decimals, batches, log ranges, logs by hash,
rate limits. It prints a table and each problem, and exits 1 when there is
a problem, 2 when the configuration cannot be read or names no endpoint.
It takes no arguments and touches neither the database nor Temporal.

Environment (the variables serve reads for its endpoints):
  PAYWATCH_<NETWORK>_RPC_URL        comma-separated RPC endpoints of a network, in failover order (JSON-RPC URLs; TRC20: host:port or grpc://, grpcs://, http(s):// FullNode HTTP API)
  PAYWATCH_<NETWORK>_RPC_HEADERS    headers sent to every endpoint of the network, as Name=value pairs separated by commas (values percent-encoded where needed), e.g. TRON-PRO-API-KEY=...
  PAYWATCH_<NETWORK>_RPC_HEADERS_<N>  headers for the N-th endpoint only (1-based), on top of the network's
  PAYWATCH_<NETWORK>_QUORUM         how many of the network's endpoints must agree on every answer (default 1)
  PAYWATCH_<NETWORK>_<TOKEN>_CONTRACT  token contract override
` + namesLine

const versionUsage = `Usage: paywatch version

Prints the version of this binary.
`

// commandUsage returns the usage of a command that has one.
func commandUsage(cmd string) (string, bool) {
	switch cmd {
	case "dev", "serve", "api", "worker":
		return serviceUsage(Mode(cmd)), true
	case "migrate":
		return migrateUsage, true
	case "check":
		return checkUsage, true
	case "admin":
		return adminUsage, true
	case "devnet":
		return devnetUsage, true
	case "temporal":
		return temporalUsage, true
	case "version":
		return versionUsage, true
	}
	return "", false
}

// isHelp reports whether a command-line argument asks for usage.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// wantsHelp reports whether any argument asks for usage.
func wantsHelp(args []string) bool {
	return slices.ContainsFunc(args, isHelp)
}

// noArguments handles the arguments of a command that takes none: -h or
// --help prints its usage on stdout (exit 0), and any other argument is a
// usage error (exit 2). ok is true when there are no arguments and the
// command is to run.
func noArguments(cmd string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, true
	}
	usage, _ := commandUsage(cmd)
	if wantsHelp(args) {
		fmt.Fprint(stdout, usage)
		return 0, false
	}
	fmt.Fprintf(stderr, "paywatch %s: unexpected argument %q: it takes no arguments; it reads the environment\n\n%s", cmd, args[0], usage)
	return 2, false
}

// namesLine names the networks and tokens, from the registry, for the
// usages that take PAYWATCH_<NETWORK>_* variables.
var namesLine = "  <NETWORK> is " + paywatch.NetworkList("or") + "; <TOKEN> is " + paywatch.TokenList("or") + ".\n"
