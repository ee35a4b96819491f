package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paywatch/paywatch"
)

const devnetUsage = `Usage: paywatch devnet <command> [flags]

Devnet commands over the devnet endpoints of a running "paywatch dev"
(operations.md §4), at PAYWATCH_BASE_URL (default http://127.0.0.1:8080),
or of "paywatch devnet serve". Results are printed as JSON.

Commands:
  serve [--addr 127.0.0.1:8090] [--block-interval 1s]
      run the devnet chains as their own process, for paywatch serve, api and
      worker replicas; prints their PAYWATCH_<NETWORK>_RPC_URL and token contracts
  send --network N [--token T] --to ADDRESS --amount 10.5 [--from ADDRESS]
      send a test token transfer; it is mined at once in a block of its own.
      --token defaults to the network's first token (USDT; USDC on BASE);
      --from must be a devnet account (default: the faucet)
  blocks --network N [--count K]
      mine K blocks at once (default 1)
  reorg --network N --depth D [--reinclude]
      replace the newest D blocks with a longer branch without their transfers;
      --reinclude mines those transfers again, with the same hashes, in the
      block after the new branch's tip (as when they are still in the mempool)
  status
      the devnet chains: network, chain id, head, RPC URL, token contracts
`

// devnetTimeout bounds one devnet call (mining 10,000 blocks takes a while).
const devnetTimeout = 2 * time.Minute

// runDevnet runs `paywatch devnet ...` and returns the exit code: 0 on
// success, 1 when the call fails or the devnet refuses it, 2 on a usage
// error.
func runDevnet(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "serve" {
		return runDevnetServe(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) == 0 || args[0] == "help" || wantsHelp(args) {
		// "paywatch devnet send --help" too.
		fmt.Fprint(stdout, devnetUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	base := serviceBaseURL(getenv)
	method, path, body, err := devnetRequest(args)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch devnet: %v\n\n%s", err, devnetUsage)
		return 2
	}
	hc := &http.Client{Timeout: devnetTimeout}
	if err := devnetCall(ctx, hc, base, method, path, body, stdout); err != nil {
		fmt.Fprintf(stderr, "paywatch devnet: %v\n", err)
		return 1
	}
	return 0
}

// devnetRequest turns a command line into a devnet call.
func devnetRequest(args []string) (method, path string, body map[string]any, err error) {
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet("devnet "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	network := fs.String("network", "", "network: "+paywatch.NetworkList("or"))
	parse := func(required ...string) error {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		for _, name := range required {
			if f := fs.Lookup(name); f == nil || strings.TrimSpace(f.Value.String()) == "" {
				return fmt.Errorf("--%s is required", name)
			}
		}
		return nil
	}
	upper := func(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }
	switch cmd {
	case "send":
		token := fs.String("token", "", "token: "+paywatch.TokenList("or")+" (default: the network's first, USDT wherever it is served)")
		to := fs.String("to", "", "recipient address")
		amount := fs.String("amount", "", "amount in whole tokens, e.g. 10.5")
		from := fs.String("from", "", "sender: a devnet account (default: the faucet)")
		memo := fs.String("memo", "", "a memo payment's memo, added to the transfer: on SOLANA the Solana Pay reference, on TON the comment")
		if err := parse("network", "to", "amount"); err != nil {
			return "", "", nil, err
		}
		if upper(*token) == "" {
			*token = string(paywatch.LinkToken(paywatch.Network(upper(*network))))
		}
		body = map[string]any{"network": upper(*network), "token": upper(*token), "to": strings.TrimSpace(*to), "amount": strings.TrimSpace(*amount)}
		if *from != "" {
			body["from"] = strings.TrimSpace(*from)
		}
		if m := strings.TrimSpace(*memo); m != "" {
			body["memo"] = m
		}
		return http.MethodPost, "/devnet/transfers", body, nil
	case "blocks":
		count := fs.String("count", "1", "number of blocks")
		if err := parse("network"); err != nil {
			return "", "", nil, err
		}
		k, err := strconv.Atoi(strings.TrimSpace(*count))
		if err != nil {
			return "", "", nil, fmt.Errorf("--count %q is not a number", *count)
		}
		return http.MethodPost, "/devnet/blocks", map[string]any{"network": upper(*network), "count": k}, nil
	case "reorg":
		depth := fs.String("depth", "", "number of blocks to replace")
		reinclude := fs.Bool("reinclude", false, "mine the dropped transfers again after the new branch")
		if err := parse("network", "depth"); err != nil {
			return "", "", nil, err
		}
		d, err := strconv.Atoi(strings.TrimSpace(*depth))
		if err != nil {
			return "", "", nil, fmt.Errorf("--depth %q is not a number", *depth)
		}
		body = map[string]any{"network": upper(*network), "depth": d}
		if *reinclude {
			body["reinclude"] = true
		}
		return http.MethodPost, "/devnet/reorg", body, nil
	case "status":
		if err := parse(); err != nil {
			return "", "", nil, err
		}
		return http.MethodGet, "/devnet", nil, nil
	default:
		return "", "", nil, fmt.Errorf("unknown command %q", cmd)
	}
}

// devnetCall makes one devnet call and prints its JSON answer, indented,
// explaining the two failures a newcomer meets: no service, or a service
// without devnet chains.
func devnetCall(ctx context.Context, hc *http.Client, base, method, path string, body map[string]any, stdout io.Writer) error {
	var payload any
	if body != nil {
		payload = body
	}
	err := callJSON(ctx, hc, base, method, path, nil, payload, stdout)
	var se *statusError
	var te interface{ Timeout() bool }
	switch {
	case err == nil, errors.As(err, &se) && !isStatus(err, http.StatusNotFound):
		return err
	case isStatus(err, http.StatusNotFound):
		return fmt.Errorf("%s %s: HTTP 404: no devnet chains run at %s", method, path, base)
	case errors.As(err, &te) && te.Timeout():
		return fmt.Errorf("%s %s: %w", method, base+path, err)
	default:
		return fmt.Errorf("cannot reach %s (is \"paywatch dev\" running with devnet chains?): %w", base, err)
	}
}
