// Package chains reads token transfers from blockchains: one Client per
// network, over the same code path for real RPC providers and the in-process
// devnet chains (package chains/devnet).
//
// Dial picks the implementation by the network's address family: chains/evm
// (go-ethereum's ethclient over JSON-RPC) for the evm family (BEP20, ERC20,
// POLYGON, ARBITRUM, BASE), chains/tron (gotron-sdk over gRPC) for TRC20.
// Both cost the same RPC calls per block whatever the number of watched
// addresses: a scan reads every Transfer of the configured token contracts
// and the caller matches recipients itself. chains/solana (solana-go over
// JSON-RPC) reads SOLANA per watched token account instead
// (AccountReader): a block range of all Solana token transfers is far too
// much to read. chains/ton (TON Center's API v3) reads TON per watched
// owner too: the owner's jetton wallet.
//
// The types below are defined in an internal package so that the
// implementations can return them without importing this package (which
// imports them); they are aliases, so chains.Transfer and the type the
// implementations return are one and the same.
package chains

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/evm"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
	"github.com/paywatch/paywatch/chains/solana"
	"github.com/paywatch/paywatch/chains/ton"
	"github.com/paywatch/paywatch/chains/tron"
)

// Transfer is one token Transfer event seen on chain.
//
//	type Transfer struct {
//	    Network     paywatch.Network
//	    Token       paywatch.Token
//	    Contract    string   // normalised token contract address
//	    TxHash      string   // normalised as paywatch.NormalizeTxHash
//	    LogIndex    uint32   // EVM: index of the log in its block; Tron: position in the block's flattened logs
//	    BlockNumber uint64
//	    BlockHash   string   // "0x…" EVM; 64 lowercase hex Tron block id
//	    From, To    string   // normalised addresses (EIP-55 / Tron base58)
//	    Amount      *big.Int // base units
//	}
//
// Tron nodes report no log index, so a Tron transfer's LogIndex is its log's
// position among all logs of all TransactionInfos of its block, in block
// order; Transfers and TransactionTransfers compute it the same way, so
// (network, tx hash, log index) identifies a transfer on every network.
type Transfer = chainapi.Transfer

// Client reads one network. Implementations are safe for concurrent use.
//
//	type Client interface {
//	    Network() paywatch.Network
//	    Head(ctx context.Context) (uint64, error)
//	    // Transfers returns the Transfer events of the configured token contracts in blocks [from, to] inclusive;
//	    // to must not exceed the head (callers clamp). Implementations chunk large ranges internally.
//	    Transfers(ctx context.Context, from, to uint64) ([]Transfer, error)
//	    // BlockHash returns the canonical block hash at height n.
//	    BlockHash(ctx context.Context, n uint64) (string, error)
//	    // TransactionTransfers returns the token transfers of one transaction; found is false (and err nil)
//	    // when the transaction is not (yet) on chain or failed.
//	    TransactionTransfers(ctx context.Context, txHash string) (transfers []Transfer, found bool, err error)
//	    // AddressTransfers returns transfers to addr in blocks [from, head].
//	    AddressTransfers(ctx context.Context, addr string, from uint64) ([]Transfer, error)
//	    Close()
//	}
type Client = chainapi.Client

// Config configures a Client.
//
//	type Config struct {
//	    Network       paywatch.Network
//	    URLs          []string                  // several for failover
//	    Contracts     map[paywatch.Token]string // token contract per token; nil: mainnet contracts
//	    MaxBlockRange uint64                    // per eth_getLogs / per Tron batch; default 1000 EVM, 100 Tron (its maximum)
//	    Concurrency   int                       // Tron per-block calls in flight; default 4
//	    Observe       func(RPCOutcome)          // told how each request to an endpoint ended (metrics); may be nil
//	    Quorum        int                       // ≥ 2: that many endpoints must agree on every answer (quorum.go); 0, 1: failover
//	}
type Config = chainapi.Config

// RetryAfterError is an endpoint's refusal that says how long to wait
// (chainapi.RetryAfterError).
type RetryAfterError = chainapi.RetryAfterError

// RetryAfterOf returns the wait an error of a client asks for: a
// provider's Retry-After, when every endpoint rests after one.
func RetryAfterOf(err error) (time.Duration, bool) { return chainapi.RetryAfterOf(err) }

// RecentBlocks is how near the head an EVM block must be for ReadBatch to
// check its logs against its header (evm.RecentBlocks): further down, a
// batch costs no header reads beyond its last block's.
const RecentBlocks = evm.RecentBlocks

// Header is one endpoint's headers (Config.Headers).
type Header = http.Header

// RPCOutcome is how one request to one endpoint ended: RPCOK (the
// endpoint answered, "not found" and refused ranges included), RPCError
// (unreachable, timed out, a server error) or RPCRateLimited.
type RPCOutcome = chainapi.RPCOutcome

// The outcomes of a request (Config.Observe).
const (
	RPCOK          = chainapi.RPCOK
	RPCError       = chainapi.RPCError
	RPCRateLimited = chainapi.RPCRateLimited
)

// RPCOutcomes lists every RPCOutcome.
func RPCOutcomes() []RPCOutcome { return chainapi.RPCOutcomes() }

// AddressRangeReader is implemented by every Client of this package:
// AddressTransfersIn(ctx, addr, from, to) returns the transfers to addr in
// blocks [from, to] (to at most the head), one eth_getLogs per
// MaxBlockRange blocks on EVM, about one call per block on Tron. The final
// check reads a long window with it piece by piece, heartbeating between
// the pieces.
type AddressRangeReader = chainapi.AddressRangeReader

// BlockTimer is implemented by every Client of this package: BlockTime(ctx,
// n) returns block n's timestamp. The close of a payment's late window
// finds the last block before the window's end with it.
type BlockTimer = chainapi.BlockTimer

// CallCounter is implemented by every Client of this package: Calls returns
// the number of RPC calls issued so far (failed attempts and failovers
// included), so benchmarks can report RPC calls per block.
type CallCounter = chainapi.CallCounter

// Errors wrapped by clients, for errors.Is.
var (
	// ErrRateLimited means every endpoint answered 429, gRPC
	// ResourceExhausted or a rate-limit message: back off and retry.
	ErrRateLimited = chainapi.ErrRateLimited
	// ErrRangeTooLarge means the provider refused the block range; EVM
	// clients already halve it inside Transfers and AddressTransfers, down to
	// a single block, before returning it.
	ErrRangeTooLarge = chainapi.ErrRangeTooLarge
	// ErrUnavailable means no endpoint could be reached or every one failed
	// with a server error.
	ErrUnavailable = chainapi.ErrUnavailable
	// ErrBlockNotFound means BlockHash (or a Tron batch) asked for a height
	// above the node's head.
	ErrBlockNotFound = chainapi.ErrBlockNotFound
)

// Dial returns a Client for cfg.Network, EVM or Tron by the network's
// address family. It validates cfg but does no I/O: an endpoint that is down
// at start must not keep the service (or other networks) from starting, so
// connection errors surface on the first call.
func Dial(ctx context.Context, cfg Config) (Client, error) {
	info, ok := paywatch.LookupNetwork(cfg.Network)
	if !ok {
		return nil, fmt.Errorf("chains: unknown network %q", cfg.Network)
	}
	if cfg.Quorum < 0 || (cfg.Quorum > 1 && cfg.Quorum > len(cfg.URLs)) {
		return nil, fmt.Errorf("chains: %s quorum %d: want 1 to %d (the number of RPC URLs)", cfg.Network, cfg.Quorum, len(cfg.URLs))
	}
	if cfg.Quorum > 1 {
		return dialQuorum(ctx, cfg)
	}
	switch info.Family {
	case paywatch.FamilyEVM:
		return evm.Dial(ctx, cfg)
	case paywatch.FamilyTron:
		return tron.Dial(ctx, cfg)
	case paywatch.FamilySolana:
		return solana.DialConfig(cfg)
	case paywatch.FamilyTON:
		return ton.DialConfig(cfg)
	default:
		return nil, fmt.Errorf("chains: network %s has unsupported family %q", cfg.Network, info.Family)
	}
}

// Calls returns the number of RPC calls c has issued, or 0 if c does not
// count them.
func Calls(c Client) uint64 {
	if cc, ok := c.(CallCounter); ok {
		return cc.Calls()
	}
	return 0
}
