package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

// runCheck is `paywatch check`: the doctor an operator runs before going
// live, and whenever a network looks wrong. It checks every configured
// endpoint of every network on its own (chains.Check), prints a table and
// each problem, and exits 1 when there is a problem, 2 when the
// configuration can't be read or names no endpoint. It reads the same
// variables as serve (PAYWATCH_<NETWORK>_RPC_URL, _RPC_HEADERS, token
// contract overrides) and nothing else: no database, no Temporal. It
// takes no arguments (run handles them: noArguments).
func runCheck(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := LoadConfig(ModeServe, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "paywatch check: invalid configuration:\n%v\n", err)
		return 2
	}
	var results []chains.EndpointCheck
	for _, info := range paywatch.Networks() {
		if len(cfg.RPCURLs[info.Network]) == 0 {
			continue
		}
		results = append(results, chains.Check(ctx, providerConfig(cfg, info.Network))...)
	}
	if len(results) == 0 {
		fmt.Fprintf(stderr, "paywatch check: no PAYWATCH_<NETWORK>_RPC_URL is set; nothing to check\n")
		return 2
	}
	problems := printChecks(stdout, results)
	if problems > 0 {
		fmt.Fprintf(stdout, "\n%d problem(s) found.\n", problems)
		return 1
	}
	fmt.Fprintf(stdout, "\nAll %d endpoint(s) are fit to watch.\n", len(results))
	return 0
}

// printChecks writes the table and the problems; it returns how many
// problems there are.
func printChecks(w io.Writer, results []chains.EndpointCheck) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NETWORK\tENDPOINT\tTRANSPORT\tLATENCY\tCHAIN\tHEAD\tHEAD AGE\tTOKENS\tFEATURES\tRATE LIMITS\tSTATUS")
	for _, r := range results {
		latency, chain, head, age := "-", "-", "-", "-"
		if r.Err == "" {
			latency = r.Latency.Round(time.Millisecond).String()
			chain = r.Identity.Name
			head = fmt.Sprint(r.Head)
			age = r.HeadAge.String()
		}
		var tokens []string
		for _, t := range r.Tokens {
			switch {
			case t.Err != "":
				tokens = append(tokens, fmt.Sprintf("%s missing", t.Token))
			case t.Decimals != t.Want:
				tokens = append(tokens, fmt.Sprintf("%s %d decimals (want %d)", t.Token, t.Decimals, t.Want))
			default:
				tokens = append(tokens, fmt.Sprintf("%s ok (%d)", t.Token, t.Decimals))
			}
		}
		var features []string
		for _, f := range r.Features {
			state := "ok"
			if !f.OK {
				state = "refused"
			}
			features = append(features, f.Name+": "+state)
		}
		status := "ok"
		if len(r.Problems) > 0 {
			status = "PROBLEM"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Network, r.Endpoint, orDash(r.Transport),
			latency, chain, head, age, orDash(strings.Join(tokens, ", ")), orDash(strings.Join(features, ", ")), r.RateLimited, status)
	}
	_ = tw.Flush()
	n := 0
	for _, r := range results {
		for _, f := range r.Features {
			if f.OK {
				if f.Tell {
					fmt.Fprintf(w, "note: %s %s: %s: %s\n", r.Network, r.Endpoint, f.Name, f.Detail)
				}
				continue
			}
			if !f.Required {
				fmt.Fprintf(w, "note: %s %s: %s: %s\n", r.Network, r.Endpoint, f.Name, f.Detail)
			}
		}
		for _, p := range r.Problems {
			n++
			fmt.Fprintf(w, "problem: %s %s: %s\n", r.Network, r.Endpoint, p)
		}
	}
	return n
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
