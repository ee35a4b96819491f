// Command paywatch is the paywatch service: REST API, hosted pages, Temporal
// worker and chain scanners in one binary. See `paywatch help`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `paywatch: a self-hostable stablecoin payment monitor

Usage: paywatch <command>

Commands:
  dev       everything in one process on embedded defaults (Temporal, devnet chains, local PostgreSQL)
  serve     API, hosted pages, worker and scanners against a configured Temporal cluster and RPC endpoints
  api       the API and hosted pages only
  worker    the Temporal worker and chain scanners only
  migrate   apply database migrations and exit
  check     check every configured RPC endpoint: reachable, the right chain, synced, tokens, features
  temporal  "temporal serve": a standalone Temporal server on PostgreSQL, for api and worker replicas
  admin     operator commands over the operator endpoints
  devnet    devnet commands, e.g. "devnet send", or "devnet serve": devnet chains as their own process
  version   print the version

Configuration is read from environment variables; see docs/operating.md (Configuration).
"paywatch <command> --help" (or "paywatch help <command>") prints a command's usage.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the process exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch cmd := args[0]; cmd {
	case "dev", "serve", "api", "worker":
		if code, ok := noArguments(cmd, args[1:], stdout, stderr); !ok {
			return code
		}
		return runService(ctx, Mode(cmd), getenv, stdout, stderr)
	case "migrate":
		if code, ok := noArguments(cmd, args[1:], stdout, stderr); !ok {
			return code
		}
		return runMigrate(ctx, getenv, stdout, stderr)
	case "check":
		if code, ok := noArguments(cmd, args[1:], stdout, stderr); !ok {
			return code
		}
		return runCheck(ctx, getenv, stdout, stderr)
	case "admin":
		return runAdmin(ctx, args[1:], getenv, stdout, stderr)
	case "devnet":
		return runDevnet(ctx, args[1:], getenv, stdout, stderr)
	case "temporal":
		return runTemporal(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version":
		if code, ok := noArguments("version", args[1:], stdout, stderr); !ok {
			return code
		}
		fmt.Fprintln(stdout, version)
		return 0
	case "help", "-h", "--help":
		if len(args) > 1 {
			// "paywatch help check" is "paywatch check --help".
			u, ok := commandUsage(args[1])
			if !ok {
				fmt.Fprintf(stderr, "paywatch: unknown command %q\n\n%s", args[1], usage)
				return 2
			}
			fmt.Fprint(stdout, u)
			return 0
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "paywatch: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// runService runs a long-lived mode until ctx is cancelled (SIGINT or SIGTERM).
func runService(ctx context.Context, mode Mode, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := LoadConfig(mode, getenv)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "paywatch %s: invalid configuration:\n%v\n", mode, err)
		return 2
	}
	m := NewMain(cfg, stdout, stderr)
	if err := m.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "paywatch %s: %v\n", mode, err)
		_ = m.Close()
		return 1
	}
	<-ctx.Done()
	if err := m.Close(); err != nil {
		fmt.Fprintf(stderr, "paywatch %s: shutdown: %v\n", mode, err)
		return 1
	}
	return 0
}

// runMigrate applies migrations with the same DATABASE_URL rules as dev (when
// unset, the local database, created if missing) and exits.
func runMigrate(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) int {
	mode := ModeServe
	if getenv("DATABASE_URL") == "" {
		mode = ModeDev
	}
	cfg, err := LoadConfig(mode, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch migrate: %v\n", err)
		return 2
	}
	version, err := migrate(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch migrate: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "database is at migration version %d\n", version)
	return 0
}
