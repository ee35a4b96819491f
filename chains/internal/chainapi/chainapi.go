// Package chainapi holds the types shared by package chains and its EVM and
// Tron implementations. It exists only to break the import cycle between
// chains (which dials the implementations) and the implementations (which
// return chains' types); package chains re-exports everything here under the
// same names, and callers should use those.
package chainapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/paywatch/paywatch"
)

// Transfer is one token Transfer event seen on chain (paywatch.Transfer).
type Transfer = paywatch.Transfer

// Client reads one network. Implementations are safe for concurrent use.
type Client interface {
	Network() paywatch.Network
	Head(ctx context.Context) (uint64, error)
	// Transfers returns the Transfer events of the configured token contracts in blocks [from, to] inclusive; to must not exceed the head (callers clamp). Implementations chunk large ranges internally.
	Transfers(ctx context.Context, from, to uint64) ([]Transfer, error)
	// BlockHash returns the canonical block hash at height n.
	BlockHash(ctx context.Context, n uint64) (string, error)
	// TransactionTransfers returns the token transfers of one transaction; found is false (and err nil) when the transaction is not (yet) on chain or failed.
	TransactionTransfers(ctx context.Context, txHash string) (transfers []Transfer, found bool, err error)
	// AddressTransfers returns transfers to addr in blocks [from, head].
	AddressTransfers(ctx context.Context, addr string, from uint64) ([]Transfer, error)
	Close()
}

// AddressRangeReader is implemented by the clients of package chains: it
// reads the transfers to one address in a bounded range of blocks, so that
// a long window can be read in pieces, with progress between them.
type AddressRangeReader interface {
	// AddressTransfersIn returns the transfers to addr in blocks [from,
	// to]; to must not exceed the head.
	AddressTransfersIn(ctx context.Context, addr string, from, to uint64) ([]Transfer, error)
}

// BlockTimer is implemented by the clients of package chains: it reads a
// block's timestamp, so that a payment's late window can be closed at the
// block its end falls in (the final check's Until), whatever the time its
// signals arrive.
type BlockTimer interface {
	// BlockTime returns the timestamp of block n; ErrBlockNotFound when n
	// is above the node's head.
	BlockTime(ctx context.Context, n uint64) (time.Time, error)
}

// CallCounter is implemented by clients that count the RPC calls they issue,
// retries and failovers included, so benchmarks can report calls per block.
type CallCounter interface {
	// Calls returns the number of RPC calls issued so far.
	Calls() uint64
}

// Config configures a Client.
type Config struct {
	Network paywatch.Network
	// URLs are the endpoints, tried in order with failover: JSON-RPC over
	// HTTP(S) for EVM networks; for TRC20 gRPC (host:port or grpc://host:port
	// in plaintext, grpcs://host:port over TLS) or the FullNode HTTP API
	// (http:// or https://, with any base path). A URL may carry a key in
	// its path, query or user info.
	URLs []string
	// Headers, when set, holds one header set per URL (same order; nil for
	// none): sent with every HTTP request, or as gRPC metadata, to that
	// endpoint, e.g. TRON-PRO-API-KEY or Authorization. Their values are
	// secrets: errors and names never show them.
	Headers []http.Header
	// TLS, when set, is the TLS configuration of https:// and grpcs://
	// endpoints (tests set RootCAs); nil means the system's roots.
	TLS *tls.Config
	// Contracts is the token contract per token. Nil means the network's
	// mainnet contracts (paywatch.DefaultContract).
	Contracts map[paywatch.Token]string
	// MaxBlockRange is the most blocks per eth_getLogs call (default 1000)
	// or per Tron batch (default and maximum 100).
	MaxBlockRange uint64
	// Concurrency is how many per-block calls a Tron client keeps in flight
	// while reading a batch (default 4). EVM clients ignore it.
	Concurrency int
	// Observe, when set, is told how every request to an endpoint ended
	// (each endpoint a failover tries counts once), for the service's
	// metrics. It must be cheap and safe for concurrent use.
	Observe func(RPCOutcome)
	// Quorum, when 2 or more, is how many endpoints must give the same
	// answer before the client takes it (package chains' quorum client):
	// the endpoints are no longer a failover list but read side by side,
	// and a head is the slowest of Quorum endpoints'. 0 and 1 read one
	// endpoint at a time, with failover. At most len(URLs).
	Quorum int
	// QuorumLag is how long, in a quorum, one endpoint may lack a block
	// that another endpoint has shown before it counts as failing rather
	// than as behind (default 2 minutes).
	QuorumLag time.Duration
}

// RPCOutcome is how one request to one endpoint ended, as far as the
// endpoint's health goes.
type RPCOutcome string

// The outcomes of a request.
const (
	// RPCOK means the endpoint answered. An answer about the request (not
	// found, a block range refused as too large, an invalid argument) is an
	// answer too: the endpoint works, and the client acts on it.
	RPCOK RPCOutcome = "ok"
	// RPCError means the endpoint failed: unreachable, timed out, a server
	// error or an answer that could not be read. The client fails over.
	RPCError RPCOutcome = "error"
	// RPCRateLimited means the endpoint refused the request for rate
	// limiting (HTTP 429, gRPC ResourceExhausted or a rate-limit message).
	RPCRateLimited RPCOutcome = "rate_limited"
)

// RPCOutcomes lists every RPCOutcome, so that metrics can show each at 0.
func RPCOutcomes() []RPCOutcome { return []RPCOutcome{RPCOK, RPCError, RPCRateLimited} }

// Errors a Client wraps, so callers can tell them apart with errors.Is.
var (
	// ErrRateLimited means every endpoint refused the call for rate limiting
	// (HTTP 429, gRPC ResourceExhausted or a provider's rate-limit message);
	// back off and retry.
	ErrRateLimited = errors.New("rate limited")
	// ErrRangeTooLarge means the provider refused a block range as too large
	// or as returning too many results; retry with a smaller range. EVM
	// clients already halve the range inside Transfers, so it surfaces only
	// when a single block is refused.
	ErrRangeTooLarge = errors.New("block range too large")
	// ErrUnavailable means no endpoint could be reached or every one failed
	// with a server error.
	ErrUnavailable = errors.New("rpc endpoints unavailable")
	// ErrBlockNotFound means the node has no block at the asked height
	// (above its head).
	ErrBlockNotFound = errors.New("block not found")
	// ErrIncompleteRead means a batch was not read fully: the node's answers
	// disagree about a recent block (its header says it may hold token
	// transfers, the logs answer has none, and the node cannot confirm that
	// for the block alone), as when a load-balanced provider's log index
	// lags behind the backend that served the head. Read the batch again
	// later; never take the block as one without transfers.
	ErrIncompleteRead = errors.New("batch not read fully")
)

// BatchQuery asks a BatchReader for one scanner batch.
type BatchQuery struct {
	// From and To are the batch's blocks, inclusive; To must not exceed
	// the head.
	From, To uint64
	// Head is the newest block the caller knows of. EVM clients check the
	// blocks within RecentBlocks of it for logs the node left out.
	Head uint64
	// Cursor, when above 0, is the block the caller's cursor is at (below
	// From); its hash is read after To's, so that a reorg that replaced it
	// before the transfers were read shows up.
	Cursor uint64
	// Accounts are the accounts an AccountReader reads, each with how
	// far it was read; clients that read whole blocks ignore them.
	Accounts []AccountCursor
}

// BatchRead is one scanner batch as read.
type BatchRead struct {
	// Hash is the hash of block To, read before the transfers: a reorg
	// after that read changes it, and the next batch sees it.
	Hash string
	// CursorHash is the hash of block Cursor ("" when Cursor is 0).
	CursorHash string
	// Transfers are the batch's transfers, as Transfers returns them.
	Transfers []Transfer
	// Accounts are the query's accounts read up to To: the cursors to
	// record with the batch (an AccountReader's; nil for the others).
	Accounts []AccountCursor
}

// AccountCursor is how far one account of an AccountReader was read: its
// newest transaction at or below the batch's last block.
type AccountCursor struct {
	// Account is the account read (Solana: a token account); Owner the
	// watched address it belongs to (the wallet).
	Account, Owner string
	// Signature is the newest transaction read ("" none yet) and Slot its
	// block.
	Signature string
	Slot      uint64
	// Through is the last block the account was read through (the last
	// of the batch that read it): its cursor stands for everything up to
	// there, and is followed only by the batch that starts right after.
	Through uint64
}

// AccountReader is implemented by clients that cannot read every token
// transfer of a block range and read the history of each watched account
// instead (Solana: a wallet's token accounts, one getSignaturesForAddress
// each). The scanner passes the accounts of every address a project owns
// on the network, with their cursors, in each BatchQuery, and records the
// BatchRead's cursors with the batch.
type AccountReader interface {
	// Accounts returns the accounts to read for the watched addresses,
	// without cursors.
	Accounts(owners []string) ([]AccountCursor, error)
}

// FinalityReader is implemented by clients of chains whose blocks become
// final at a point the chain names rather than at a depth (Solana: a
// finalized slot): a transfer has its confirmations only once its block
// is at or below Finalized.
type FinalityReader interface {
	Finalized(ctx context.Context) (uint64, error)
}

// BatchReader is implemented by clients that read a scanner batch in fewer
// calls than BlockHash, Transfers and BlockHash in turn, or that check it
// for completeness (the EVM clients). chains.ReadBatch uses it when a
// client has it.
type BatchReader interface {
	// ReadBatch reads the hash of block q.To, then the transfers of blocks
	// [q.From, q.To], then the hash of block q.Cursor (when above 0). It
	// returns ErrBlockNotFound when the node has no block To or Cursor,
	// and ErrIncompleteRead when it cannot vouch that the transfers are
	// all there.
	ReadBatch(ctx context.Context, q BatchQuery) (BatchRead, error)
}

// TipRead is what a TipReader found at the tip of the chain.
type TipRead struct {
	// Head is the newest block the node knows of.
	Head uint64
	// Found is set when the node has the block asked for; the fields below
	// describe it.
	Found bool
	// Hash and ParentHash are the block's hash and its parent's: a parent
	// other than the caller's cursor block means a reorg.
	Hash, ParentHash string
	// Transfers are the block's transfers, all of the one block Hash names.
	Transfers []Transfer
}

// TipReader is implemented by clients that read the block after a caught-up
// scanner's cursor, the chain's head and whether the block links to the
// cursor in one request for most blocks (one JSON-RPC batch on EVM, the
// newest block on TRON plus its transaction infos when it has any), where
// a scanner batch costs a head read, a block read and a cursor read.
type TipReader interface {
	// ReadTip reads block next with its transfers and the node's head.
	// Found is false when the node has no block next (yet); the transfers
	// of a found block are complete as ReadBatch vouches for a batch's, or
	// the error is ErrIncompleteRead.
	ReadTip(ctx context.Context, next uint64) (TipRead, error)
}

// Defaults of Config.MaxBlockRange and Config.Concurrency.
const (
	DefaultEVMBlockRange  = 1000
	DefaultTronBlockRange = 100
	MaxTronBlockRange     = 100
	DefaultConcurrency    = 4
)

// Contract is one configured token contract in the normalised form of its
// network's family.
type Contract struct {
	Token   paywatch.Token
	Address string
}

// Prepare validates cfg for a client of family f and returns a copy with
// defaults filled in and the token contracts normalised.
func Prepare(cfg Config, f paywatch.Family) (Config, []Contract, error) {
	info, ok := paywatch.LookupNetwork(cfg.Network)
	if !ok {
		return cfg, nil, fmt.Errorf("chains: unknown network %q", cfg.Network)
	}
	if info.Family != f {
		return cfg, nil, fmt.Errorf("chains: network %s is not of family %s", cfg.Network, f)
	}
	if len(cfg.URLs) == 0 {
		return cfg, nil, fmt.Errorf("chains: no RPC URL for %s", cfg.Network)
	}
	cfg.URLs = slices.Clone(cfg.URLs)
	if len(cfg.Headers) != 0 && len(cfg.Headers) != len(cfg.URLs) {
		return cfg, nil, fmt.Errorf("chains: %s has %d header sets for %d RPC URLs", cfg.Network, len(cfg.Headers), len(cfg.URLs))
	}
	switch f {
	case paywatch.FamilyTron:
		if cfg.MaxBlockRange == 0 || cfg.MaxBlockRange > MaxTronBlockRange {
			cfg.MaxBlockRange = DefaultTronBlockRange
		}
	default:
		if cfg.MaxBlockRange == 0 {
			cfg.MaxBlockRange = DefaultEVMBlockRange
		}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	src := cfg.Contracts
	if src == nil {
		src = map[paywatch.Token]string{}
		for _, t := range info.Tokens {
			src[t] = paywatch.DefaultContract(cfg.Network, t)
		}
	}
	contracts := make([]Contract, 0, len(src))
	cfg.Contracts = make(map[paywatch.Token]string, len(src))
	for _, t := range info.Tokens { // API order, so results are deterministic
		addr, ok := src[t]
		if !ok {
			continue
		}
		norm, err := paywatch.NormalizeAddress(f, addr)
		if err != nil {
			return cfg, nil, fmt.Errorf("chains: %s contract of %s: %w", t, cfg.Network, err)
		}
		cfg.Contracts[t] = norm
		contracts = append(contracts, Contract{Token: t, Address: norm})
	}
	for t := range src {
		if _, ok := cfg.Contracts[t]; !ok {
			return cfg, nil, fmt.Errorf("chains: token %s is not served on %s", t, cfg.Network)
		}
	}
	if len(contracts) == 0 {
		return cfg, nil, fmt.Errorf("chains: no token contracts for %s", cfg.Network)
	}
	return cfg, contracts, nil
}

// Endpoints is a failover list of connections of type T. It remembers the
// last one that answered and starts there, so a dead primary costs one
// failed call per outage rather than one per request.
type Endpoints[T any] struct {
	conns   []T
	names   []Redactor
	current atomic.Int32
	observe func(RPCOutcome)
	// restUntil is, per endpoint, when the Retry-After it last sent ends
	// (unix nanoseconds; 0: none).
	restUntil []atomic.Int64
}

// NewEndpoints returns a failover list over conns, named for error
// messages by names (one per conn), which also scrub each endpoint's
// credentials from the errors Do returns. observe (Config.Observe, may be
// nil) is told the outcome of every call to an endpoint.
func NewEndpoints[T any](conns []T, names []Redactor, observe func(RPCOutcome)) *Endpoints[T] {
	return &Endpoints[T]{conns: conns, names: names, observe: observe, restUntil: make([]atomic.Int64, len(conns))}
}

// Name returns the redacted name of endpoint i.
func (e *Endpoints[T]) Name(i int) string { return e.names[i].Name() }

// All returns the connections, for closing them.
func (e *Endpoints[T]) All() []T { return e.conns }

// Failure classifies an error from one endpoint.
type Failure int

// The failure classes.
const (
	// Final errors go back to the caller at once: a valid answer of the
	// node (not found, bad request, range too large).
	Final Failure = iota
	// Failover errors try the next endpoint: transport errors, 5xx.
	Failover
	// Limited errors try the next endpoint and, if every one is limited,
	// surface as ErrRateLimited.
	Limited
)

// Do runs call against the endpoints in turn, starting with the one that
// last answered, until one returns nil or an error that classify calls
// Final. When every endpoint fails it returns their errors joined: as they
// are if every failure was Limited (call is expected to wrap those in
// ErrRateLimited), else wrapped in ErrUnavailable.
func (e *Endpoints[T]) Do(ctx context.Context, classify func(error) Failure, call func(T) error) error {
	n := len(e.conns)
	start := int(e.current.Load())
	var errs []error
	allLimited := true
	now := time.Now().UnixNano()
	resting, soonest := 0, int64(0)
	for i := range n {
		if until := e.restUntil[i].Load(); until > now {
			resting++
			if soonest == 0 || until < soonest {
				soonest = until
			}
		}
	}
	if resting == n {
		// Every endpoint asked to wait (Retry-After): honour it.
		wait := time.Duration(soonest - now)
		return fmt.Errorf("%w: every endpoint asked to wait: %w", ErrRateLimited,
			&RetryAfterError{After: wait, Err: errors.New("resting after Retry-After")})
	}
	for i := range n {
		idx := (start + i) % n
		if e.restUntil[idx].Load() > now {
			continue // another endpoint has headroom
		}
		err := e.names[idx].Error(call(e.conns[idx]))
		if d, ok := RetryAfterOf(err); ok {
			e.restUntil[idx].Store(time.Now().Add(d).UnixNano())
		}
		if err == nil {
			e.record(RPCOK)
			e.current.Store(int32(idx))
			return nil
		}
		if ctx.Err() != nil {
			// The caller gave up (shutdown, or its own deadline): that says
			// nothing about the endpoint unless the deadline ran out on it.
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				e.record(RPCError)
			}
			return err
		}
		class := classify(err)
		switch class {
		case Final:
			e.record(RPCOK)
		case Limited:
			e.record(RPCRateLimited)
		default:
			e.record(RPCError)
		}
		if class == Final {
			e.current.Store(int32(idx))
			return err
		}
		if class != Limited {
			allLimited = false
		}
		if n == 1 {
			errs = append(errs, err)
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", e.names[idx].Name(), err))
		}
	}
	if allLimited {
		return errors.Join(errs...)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(errs...))
}

// record tells the observer, if any, how one call ended.
func (e *Endpoints[T]) record(o RPCOutcome) {
	if e.observe != nil {
		e.observe(o)
	}
}

// HeadersOf returns the headers of endpoint i of cfg (nil when none).
func (cfg Config) HeadersOf(i int) http.Header {
	if i < len(cfg.Headers) {
		return cfg.Headers[i]
	}
	return nil
}
