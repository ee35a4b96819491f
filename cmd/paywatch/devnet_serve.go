package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/devnet"
)

const devnetServeUsage = `Usage: paywatch devnet serve [--addr 127.0.0.1:8090] [--block-interval 1s]

Runs the devnet chains of all five networks as their own process, so that
paywatch serve, api and worker replicas read them as real networks (and
outlive them): the EVM chains serve JSON-RPC and TRC20 serves gRPC on
loopback ports, and the devnet endpoints (GET /devnet, POST
/devnet/transfers, /devnet/blocks, /devnet/reorg) are served at --addr, for
"paywatch devnet send" with PAYWATCH_BASE_URL=http://<addr>.

It prints the environment that points paywatch at the chains, one
VARIABLE=value a line (PAYWATCH_<NETWORK>_RPC_URL and
PAYWATCH_<NETWORK>_<TOKEN>_CONTRACT), usable as an env file. The chains
live in memory: a restart starts them again from genesis.

  --addr             listener of the devnet endpoints (default 127.0.0.1:8090)
  --block-interval   block time of every chain (default PAYWATCH_DEVNET_BLOCK_INTERVAL, or 1s)
`

// runDevnetServe runs `paywatch devnet serve` until ctx ends.
func runDevnetServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devnet serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8090", "")
	def := devnet.DefaultBlockInterval
	if v := strings.TrimSpace(getenv("PAYWATCH_DEVNET_BLOCK_INTERVAL")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			fmt.Fprintf(stderr, "paywatch devnet serve: PAYWATCH_DEVNET_BLOCK_INTERVAL: %q is not a duration such as 1s or 500ms\n", v)
			return 2
		}
		def = d
	}
	interval := fs.Duration("block-interval", def, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, devnetServeUsage)
			return 0
		}
		fmt.Fprintf(stderr, "paywatch devnet serve: bad arguments %q\n\n%s", args, devnetServeUsage)
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch devnet serve: %v\n", err)
		return 1
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	d, err := devnet.Start(startCtx, devnet.Config{BlockInterval: *interval, Logger: logger})
	cancel()
	if err != nil {
		_ = ln.Close()
		fmt.Fprintf(stderr, "paywatch devnet serve: %v\n", err)
		return 1
	}
	defer d.Close()
	srv := &http.Server{Handler: loopbackOnly(d.Handler()), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	every := "a block per transfer"
	if *interval > 0 {
		every = "a block every " + interval.String()
	}
	_, _ = io.WriteString(stdout, devnetEnv(d.Networks(), every, ln.Addr().String()))
	<-ctx.Done()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	return 0
}

// devnetEnv is what `paywatch devnet serve` prints: comments, then the
// environment of paywatch processes that read the chains.
func devnetEnv(nets []devnet.NetworkStatus, every, addr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# paywatch devnet serve: devnet chains (%s); devnet endpoints at http://%s/devnet\n", every, addr)
	fmt.Fprintf(&b, "# (PAYWATCH_BASE_URL=http://%s paywatch devnet send ...). The environment of paywatch serve, api and worker:\n", addr)
	for _, st := range nets {
		fmt.Fprintf(&b, "PAYWATCH_%s_RPC_URL=%s\n", st.Network, st.RPCURL)
		info, _ := paywatch.LookupNetwork(st.Network)
		for _, t := range info.Tokens {
			if c, ok := st.Tokens[t]; ok {
				fmt.Fprintf(&b, "PAYWATCH_%s_%s_CONTRACT=%s\n", st.Network, t, c)
			}
		}
	}
	return b.String()
}

// loopbackOnly serves only requests addressed to a loopback host, so a web
// page cannot reach the devnet endpoints through a DNS name rebound to
// 127.0.0.1 (the API listener's Host rule does this for `paywatch dev`).
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		if ip := net.ParseIP(strings.Trim(host, "[]")); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": paywatch.MsgNotFound})
			return
		}
		h.ServeHTTP(w, r)
	})
}
