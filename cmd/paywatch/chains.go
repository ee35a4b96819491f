package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
)

// chainRuntime is the chain access of a process: a client per offered
// network (RPC endpoints or an in-process devnet chain) and the devnet
// chains themselves.
type chainRuntime struct {
	// Set holds a client per offered network; it implements
	// activities.Chains.
	Set *chains.Set
	// Networks are the offered networks, in API order: those with an RPC
	// URL or a devnet chain (operations.md §1). Pass them to
	// store.WithNetworks and workflows.EnsureScanners.
	Networks []paywatch.Network
	// DevnetNetworks are the networks served by devnet chains.
	DevnetNetworks []paywatch.Network
	// Devnet is the running devnet chains, nil when none runs.
	Devnet *devnet.Devnet
	// DevnetHandler serves the /devnet endpoints of operations.md §4; nil
	// when no devnet chain runs. Mount it on the API listener.
	DevnetHandler http.Handler
	// PollIntervals are the scanners' poll intervals of the devnet chains
	// (their block interval); pass them as activities.ScannerDeps.PollInterval.
	PollIntervals map[paywatch.Network]time.Duration
	// StartupLines describe the devnet chains for the start-up block: each
	// chain's network, RPC URL and token contracts.
	StartupLines []string
	// WalletTokens are the token contracts of the offered EVM networks
	// whose chain id is known (api.Deps.WalletTokens), the networks the
	// hosted page offers a wallet request for: those with RPC URLs every
	// one of which answered the start-up chain id check with the
	// network's, unless PAYWATCH_ALLOW_OTHER_CHAINS is set. Never a devnet
	// chain's: it has its network's mainnet chain id but its own
	// contracts, and a real wallet would call transfer on the mainnet one.
	WalletTokens map[paywatch.Network]map[paywatch.Token]string
	// Mints are the token contracts of the networks whose families take
	// memo payments (api.Deps.Mints), a devnet's included.
	Mints map[paywatch.Network]map[paywatch.Token]string
}

// devnetIdlePoll is the scanners' poll interval on devnet chains that make
// blocks only when a transfer is sent (PAYWATCH_DEVNET_BLOCK_INTERVAL=0).
const devnetIdlePoll = time.Second

// startChains builds the chain access of cfg: when cfg.Devnet is set it
// starts a devnet chain for every network without an RPC URL (blocks every
// cfg.DevnetBlockInterval), and it dials a client per network with RPC URLs
// (cfg.RPCURLs, token contracts from cfg.Contracts over the mainnet ones)
// or a devnet chain (the devnet's contracts). A network with neither is not
// offered. observe, when set, gives each network's client its
// chains.Config.Observe (the metrics' request counter). Close releases
// everything.
func startChains(ctx context.Context, cfg Config, logger *slog.Logger, observe func(paywatch.Network) func(chains.RPCOutcome)) (*chainRuntime, error) {
	if logger == nil {
		logger = slog.Default()
	}
	rt := &chainRuntime{PollIntervals: map[paywatch.Network]time.Duration{}, WalletTokens: map[paywatch.Network]map[paywatch.Token]string{},
		Mints: map[paywatch.Network]map[paywatch.Token]string{}}
	var devnets []paywatch.Network
	for _, info := range paywatch.Networks() {
		if len(cfg.RPCURLs[info.Network]) == 0 && cfg.Devnet {
			devnets = append(devnets, info.Network)
		}
	}
	if len(devnets) > 0 {
		d, err := devnet.Start(ctx, devnet.Config{
			BlockInterval:  cfg.DevnetBlockInterval,
			BlockIntervals: cfg.DevnetBlockIntervals,
			BlockJitter:    cfg.DevnetBlockJitter,
			Networks:       devnets,
			Logger:         logger,
		})
		if err != nil {
			return nil, fmt.Errorf("start devnet chains: %w", err)
		}
		rt.Devnet = d
		rt.DevnetNetworks = devnets
		rt.DevnetHandler = d.Handler()
	}

	var cfgs []chains.Config
	for _, info := range paywatch.Networks() {
		n := info.Network
		if urls := cfg.RPCURLs[n]; len(urls) > 0 {
			cfgs = append(cfgs, providerConfig(cfg, n))
			continue
		}
		if rt.Devnet == nil {
			continue
		}
		st, ok := rt.Devnet.Network(n)
		if !ok {
			continue
		}
		if len(cfg.Contracts[n]) > 0 {
			logger.Warn("token contract overrides are ignored on a devnet chain; set an RPC URL to use them", "network", n)
		}
		cfgs = append(cfgs, chains.Config{Network: n, URLs: []string{st.RPCURL}, Contracts: st.Tokens})
		poll := cfg.DevnetBlockInterval
		if d, ok := cfg.DevnetBlockIntervals[n]; ok {
			poll = d
		}
		if poll <= 0 {
			poll = devnetIdlePoll
		}
		rt.PollIntervals[n] = poll
	}
	verified, err := verifyChains(ctx, cfg, logger)
	if err != nil {
		_ = rt.Close()
		return nil, err
	}
	for _, n := range verified {
		if info, _ := paywatch.LookupNetwork(n); info.Family == paywatch.FamilyEVM && !cfg.AllowOtherChains {
			rt.WalletTokens[n] = contractsOf(n, cfg.Contracts[n])
		}
	}
	for _, c := range cfgs {
		if !c.Network.Family().Derived() {
			rt.Mints[c.Network] = contractsOf(c.Network, c.Contracts)
		}
	}
	if observe != nil {
		for i := range cfgs {
			cfgs[i].Observe = observe(cfgs[i].Network)
		}
	}
	set, err := chains.DialSet(ctx, cfgs...)
	if err != nil {
		_ = rt.Close()
		return nil, err
	}
	rt.Set = set
	rt.Networks = set.Networks()
	rt.StartupLines = rt.describeDevnet(cfg.DevnetBlockInterval)
	return rt, nil
}

// providerConfig is the chains.Config of network n's configured
// endpoints: its RPC URLs, their headers, its token contracts and its
// quorum.
func providerConfig(cfg Config, n paywatch.Network) chains.Config {
	return chains.Config{Network: n, URLs: cfg.RPCURLs[n], Headers: cfg.RPCHeaders[n], Contracts: contractsOf(n, cfg.Contracts[n]),
		Quorum: cfg.Quorums[n]}
}

// identityTimeout bounds the start-up identity check of one endpoint.
const identityTimeout = 5 * time.Second

// verifyChains asks every configured endpoint which chain it serves, all
// networks at once, and refuses to start when one serves another chain
// than its network's (a testnet URL, or one network's URL under
// another's), as the scanners would then watch the wrong chain. An
// endpoint that does not answer only gets a warning: an outage at start
// must not keep the service down, and the scanners retry. verified lists,
// in API order, the networks every endpoint of which answered with the
// network's chain.
func verifyChains(ctx context.Context, cfg Config, logger *slog.Logger) (verified []paywatch.Network, err error) {
	var mu sync.Mutex
	var errs []error
	ok := map[paywatch.Network]bool{}
	var wg sync.WaitGroup
	for _, info := range paywatch.Networks() {
		n := info.Network
		if len(cfg.RPCURLs[n]) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			down, err := chains.VerifyIdentity(ctx, providerConfig(cfg, n), identityTimeout)
			for _, d := range down {
				logger.Warn("an RPC endpoint did not say which chain it serves; starting anyway", "network", n, "endpoint", d)
			}
			other := err != nil && cfg.AllowOtherChains && errors.Is(err, chains.ErrWrongChain)
			if other {
				logger.Warn("an RPC endpoint serves another chain than its network's; starting anyway (PAYWATCH_ALLOW_OTHER_CHAINS)",
					"network", n, "error", err)
				err = nil
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case len(down) == 0 && !other:
				ok[n] = true
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w (run `paywatch check` for details)", errors.Join(errs...))
	}
	for _, info := range paywatch.Networks() {
		if ok[info.Network] {
			verified = append(verified, info.Network)
		}
	}
	return verified, nil
}

// contractsOf returns network n's token contracts: the mainnet ones with
// overrides on top.
func contractsOf(n paywatch.Network, overrides map[paywatch.Token]string) map[paywatch.Token]string {
	info, _ := paywatch.LookupNetwork(n)
	out := make(map[paywatch.Token]string, len(info.Tokens))
	for _, t := range info.Tokens {
		out[t] = paywatch.DefaultContract(n, t)
	}
	maps.Copy(out, overrides)
	return out
}

// describeDevnet returns the start-up block's lines about the devnet chains.
func (rt *chainRuntime) describeDevnet(interval time.Duration) []string {
	if rt.Devnet == nil {
		return nil
	}
	every := "a block per transfer"
	if interval > 0 {
		every = "a block every " + interval.String()
	}
	lines := []string{fmt.Sprintf("Devnet chains (%s; send test transfers with \"paywatch devnet send\"):", every)}
	nets := rt.Devnet.Networks()
	// A token deployed at one address on several chains (the EVM
	// devnets deploy each token at one address) is named on their lines
	// and its contract given once below them.
	count := map[paywatch.Token]map[string]int{}
	for _, st := range nets {
		for t, c := range st.Tokens {
			if count[t] == nil {
				count[t] = map[string]int{}
			}
			count[t][c]++
		}
	}
	shared := map[paywatch.Token]string{}
	var common []string
	for _, t := range paywatch.Tokens() {
		for c, n := range count[t] {
			if best := count[t][shared[t]]; n > 1 && (n > best || n == best && c < shared[t]) {
				shared[t] = c
			}
		}
		if c := shared[t]; c != "" {
			common = append(common, fmt.Sprintf("%s %s", t, c))
		}
	}
	for _, st := range nets {
		var tokens []string
		info, _ := paywatch.LookupNetwork(st.Network)
		for _, t := range info.Tokens {
			if c, ok := st.Tokens[t]; ok && c == shared[t] {
				tokens = append(tokens, string(t))
			} else if ok {
				tokens = append(tokens, fmt.Sprintf("%s %s", t, c))
			}
		}
		lines = append(lines, fmt.Sprintf("  %-9s %-24s %s", st.Network, st.RPCURL, strings.Join(tokens, " ")))
	}
	if len(common) > 0 {
		lines = append(lines, "  Token contracts of the chains above that name a token alone:")
		for _, c := range common {
			lines = append(lines, "    "+c)
		}
	}
	return lines
}

// StartDevnetRuns gives each devnet network the chain state of this run's
// devnet chains (store.StartDevnetRun): the chains start from genesis on
// every run, so a cursor left by an earlier run would point past their
// head, and its recorded transfers and claims would take the new run's
// transfers, whose hashes repeat the old ones. Networks served by RPC
// endpoints are not touched. Call it before the scanners start.
func (rt *chainRuntime) StartDevnetRuns(ctx context.Context, st *store.Store, logger *slog.Logger) error {
	if rt.Devnet == nil {
		return nil
	}
	var errs []error
	for _, n := range rt.DevnetNetworks {
		cleared, err := st.StartDevnetRun(ctx, n, rt.Devnet.RunID())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cleared && logger != nil {
			logger.Info("new devnet run: earlier chain state of the network cleared", "network", n)
		}
	}
	return errors.Join(errs...)
}

// Close closes the clients and stops the devnet chains.
func (rt *chainRuntime) Close() error {
	if rt == nil {
		return nil
	}
	if rt.Set != nil {
		rt.Set.Close()
	}
	if rt.Devnet != nil {
		return rt.Devnet.Close()
	}
	return nil
}
