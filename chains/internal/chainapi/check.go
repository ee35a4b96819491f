package chainapi

import (
	"context"
	"fmt"
	"time"

	"github.com/paywatch/paywatch"
)

// Checker is implemented by the clients of package chains: it runs the
// checks of `paywatch check` against the client's first endpoint (callers
// dial one client per endpoint to check each).
type Checker interface {
	Check(ctx context.Context) EndpointCheck
	// Identity reads only the chain's identity, for the start-up guard.
	Identity(ctx context.Context) (Identity, error)
}

// Identity is which chain an endpoint serves.
type Identity struct {
	// Name names the chain: "mainnet (chain id 56)", "Nile testnet",
	// "chain id 97", "the paywatch devnet", "unknown chain (genesis …)".
	Name string
	// OK is set when it is the chain the network means: its mainnet, or
	// the paywatch devnet (tests and `paywatch dev` run on it).
	OK bool
}

// EndpointCheck is what `paywatch check` found at one endpoint.
type EndpointCheck struct {
	Network paywatch.Network
	// Endpoint is the endpoint's redacted name (Redactor).
	Endpoint string
	// Transport is how it is spoken to: "json-rpc", "grpc", "grpcs",
	// "http" (TRON's FullNode HTTP API).
	Transport string
	// Err is set when the endpoint could not be reached or answered
	// nothing usable; the other fields are then mostly empty.
	Err string
	// Latency is the round trip of the first call.
	Latency time.Duration
	Identity
	// Head is the newest block and HeadAge how old its timestamp is.
	Head    uint64
	HeadAge time.Duration
	// Tokens are the configured token contracts, checked.
	Tokens []TokenCheck
	// Features are the protocol features the client relies on (EVM:
	// JSON-RPC batches, the eth_getLogs range, logs by block hash; TRON:
	// full transaction infos), each accepted or not.
	Features []FeatureCheck
	// RateLimited counts the rate-limit answers seen during the checks:
	// chains.Check fills it from the client's Observe hook, which sees
	// every endpoint answer, retries included.
	RateLimited int
	// Problems lists what stops paywatch from working with the endpoint;
	// empty means none.
	Problems []string
}

// TokenCheck is one token contract as found on chain.
type TokenCheck struct {
	Token    paywatch.Token
	Contract string
	// Decimals is what the contract's decimals() answered; -1 when it did
	// not answer (no contract there).
	Decimals int
	// Want is the decimals the registry expects (paywatch.Decimals).
	Want int
	Err  string
}

// FeatureCheck is one protocol feature as the endpoint answered it.
type FeatureCheck struct {
	Name string
	OK   bool
	// Detail says what was seen ("1000 blocks accepted", "refused: ...").
	Detail string
	// Required marks a feature whose absence is a problem; the others
	// only cost calls.
	Required bool
	// Tell marks a Detail the operator should read even when the
	// feature is there (how far back an endpoint's history reaches).
	Tell bool
}

// Problem adds a problem line to the check.
func (c *EndpointCheck) Problem(format string, args ...any) {
	c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
}

// Identify opens a check with the endpoint's identity, timing that first
// call as the endpoint's latency: ok is false when the endpoint could not
// be reached (the check says so). A chain other than the network's is a
// problem: "serves <name>, not <want>".
func (c *EndpointCheck) Identify(ctx context.Context, identity func(context.Context) (Identity, error), want string) (ok bool) {
	start := time.Now()
	ident, err := identity(ctx)
	c.Latency = time.Since(start)
	if err != nil {
		c.Err = err.Error()
		c.Problem("unreachable: %v", err)
		return false
	}
	c.Identity = ident
	if !ident.OK {
		c.Problem("serves %s, not %s", ident.Name, want)
	}
	return true
}
