package chains

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
	"github.com/paywatch/paywatch/chains/tron"
)

// The checks of `paywatch check` (chainapi's types, re-exported).
type (
	// EndpointCheck is what Check found at one endpoint.
	EndpointCheck = chainapi.EndpointCheck
	// TokenCheck is one token contract as found on chain.
	TokenCheck = chainapi.TokenCheck
	// FeatureCheck is one protocol feature as an endpoint answered it.
	FeatureCheck = chainapi.FeatureCheck
	// Identity is which chain an endpoint serves.
	Identity = chainapi.Identity
)

// TronDevnetGenesisID is the id of the TRC20 devnet's block 0, the same on
// every run, which tells its nodes from mainnet's.
const TronDevnetGenesisID = tron.DevnetGenesisID

// checkTimeout bounds the checks of one endpoint.
const checkTimeout = 60 * time.Second

// staleAfter is how old a head may be before Check calls the node out of
// sync: 20 blocks' time, and at least 2 minutes.
func staleAfter(blockTime time.Duration) time.Duration {
	return max(20*blockTime, 2*time.Minute)
}

// one returns cfg narrowed to its endpoint i.
func one(cfg Config, i int) Config {
	c := cfg
	c.URLs = cfg.URLs[i : i+1]
	c.Headers = nil
	c.Quorum = 0
	if h := cfg.HeadersOf(i); h != nil {
		c.Headers = []Header{h}
	}
	return c
}

// Check checks every endpoint of cfg on its own, as `paywatch check` does:
// reachability and latency, the chain's identity, the head and its age, the
// token contracts and their decimals, the protocol features the client
// relies on, and the rate-limit answers seen. A configuration the client
// refuses gives one result with the error.
func Check(ctx context.Context, cfg Config) []EndpointCheck {
	out := make([]EndpointCheck, 0, len(cfg.URLs))
	for i := range cfg.URLs {
		var limited atomic.Int64
		c1 := one(cfg, i)
		c1.Observe = func(o RPCOutcome) {
			if o == RPCRateLimited {
				limited.Add(1)
			}
		}
		name := chainapi.NewRedactor(cfg.URLs[i], cfg.HeadersOf(i))
		cl, err := Dial(ctx, c1)
		if err != nil {
			out = append(out, EndpointCheck{Network: cfg.Network, Endpoint: name.Name(), Err: err.Error(),
				Problems: []string{"configuration: " + err.Error()}})
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		r := cl.(chainapi.Checker).Check(cctx)
		cancel()
		cl.Close()
		r.RateLimited = int(limited.Load())
		if info, _ := paywatch.LookupNetwork(cfg.Network); r.Err == "" && r.HeadAge > staleAfter(info.BlockTime) {
			r.Problems = append(r.Problems, fmt.Sprintf("the newest block is %s old: the node is not synced", r.HeadAge))
		}
		if r.RateLimited > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("%d rate-limit answers during the check", r.RateLimited))
		}
		out = append(out, r)
	}
	return out
}

// ErrWrongChain means an endpoint serves another chain than its network's.
var ErrWrongChain = errors.New("endpoint serves the wrong chain")

// VerifyIdentity asks every endpoint of cfg, all at once and each for at
// most timeout, which chain it serves, as `serve` and `worker` do before
// they start: an endpoint of another chain (a testnet URL under a mainnet
// network, or one network's URL under another) would have paywatch watch
// the wrong chain's tokens. It returns ErrWrongChain naming each such
// endpoint. An endpoint that does not answer is not an error here (an
// outage must not keep the service down): it is listed in unreachable, by
// name, with its error.
func VerifyIdentity(ctx context.Context, cfg Config, timeout time.Duration) (unreachable []string, err error) {
	type answer struct {
		down, wrong string
		err         error
	}
	answers := make([]answer, len(cfg.URLs))
	var wg sync.WaitGroup
	for i := range cfg.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := Dial(ctx, one(cfg, i))
			if err != nil {
				answers[i].err = err
				return
			}
			defer cl.Close()
			name := chainapi.NewRedactor(cfg.URLs[i], cfg.HeadersOf(i)).Name()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			id, err := cl.(chainapi.Checker).Identity(cctx)
			switch {
			case err != nil:
				answers[i].down = fmt.Sprintf("%s: %v", name, err)
			case !id.OK:
				answers[i].wrong = fmt.Sprintf("%s serves %s", name, id.Name)
			}
		}()
	}
	wg.Wait()
	var wrong []string
	for _, a := range answers {
		if a.err != nil {
			return nil, a.err
		}
		if a.down != "" {
			unreachable = append(unreachable, a.down)
		}
		if a.wrong != "" {
			wrong = append(wrong, a.wrong)
		}
	}
	if len(wrong) > 0 {
		return unreachable, fmt.Errorf("%w: %s: %s", ErrWrongChain, cfg.Network, strings.Join(wrong, "; "))
	}
	return unreachable, nil
}
