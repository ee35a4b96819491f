// Package evm is the chains.Client of the EVM networks (BEP20, ERC20,
// POLYGON, ARBITRUM, BASE): go-ethereum's ethclient over JSON-RPC on
// HTTP(S).
//
// A scan is one eth_getLogs per MaxBlockRange blocks for the Transfer event
// of the configured token contracts (an address filter, never one call per
// watched address), so its cost does not depend on how many addresses are
// watched. Block hashes are taken as the node reports them, never recomputed
// from decoded headers, so they match the blockHash of logs on chains whose
// headers go-ethereum does not know field for field.
//
// The scanner reads its batches with ReadBatch (batch.go): JSON-RPC batches
// that also check the blocks near the head against their logsBloom, so that
// a provider whose log index lags behind its head cannot make it pass a
// block as one without transfers.
package evm

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// TransferTopic is topic 0 of the ERC-20 event Transfer(address indexed
// from, address indexed to, uint256 value).
var TransferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

// httpTimeout bounds one HTTP round trip when the caller's context has no
// earlier deadline, so a hung provider cannot stall a scanner forever.
const httpTimeout = 60 * time.Second

// growAfter is how many successful chunks at a halved range it takes to try
// doubling the range again: a range refused for "too many results" in a busy
// stretch should not stay small forever.
const growAfter = 64

// Client reads one EVM network. It is safe for concurrent use.
type Client struct {
	network   paywatch.Network
	maxRange  uint64
	addresses []common.Address
	tokens    map[common.Address]paywatch.Token
	eps       *chainapi.Endpoints[*ethclient.Client]
	calls     atomic.Uint64

	// rangeLimit is the block range currently used per eth_getLogs: the
	// configured maximum, or less after the provider refused it.
	rangeLimit atomic.Uint64
	// goodChunks counts successes at a halved range, toward growing it.
	goodChunks atomic.Uint64
	// retry is each endpoint's transport, which keeps the Retry-After of
	// its last 429 or 503 (read-only after Dial).
	retry map[*ethclient.Client]*retryTransport
	// noBatch is set once an endpoint refused a JSON-RPC batch whose calls
	// then went through one at a time (batch).
	noBatch atomic.Bool
}

var (
	_ chainapi.Client             = (*Client)(nil)
	_ chainapi.AddressRangeReader = (*Client)(nil)
)

// Dial returns a Client for cfg. It does no I/O; cfg.URLs are JSON-RPC
// endpoints over HTTP(S), tried in order with failover.
func Dial(ctx context.Context, cfg chainapi.Config) (*Client, error) {
	cfg, contracts, err := chainapi.Prepare(cfg, paywatch.FamilyEVM)
	if err != nil {
		return nil, err
	}
	c := &Client{
		network:  cfg.Network,
		maxRange: cfg.MaxBlockRange,
		tokens:   make(map[common.Address]paywatch.Token, len(contracts)),
	}
	c.rangeLimit.Store(cfg.MaxBlockRange)
	for _, ct := range contracts {
		a := common.HexToAddress(ct.Address)
		c.addresses = append(c.addresses, a)
		c.tokens[a] = ct.Token
	}
	var base http.RoundTripper = http.DefaultTransport
	if t, ok := base.(*http.Transport); ok {
		t = t.Clone()
		t.MaxIdleConnsPerHost = 16
		if cfg.TLS != nil {
			t.TLSClientConfig = cfg.TLS.Clone()
		}
		base = t
	}
	c.retry = map[*ethclient.Client]*retryTransport{}
	var clients []*ethclient.Client
	var names []chainapi.Redactor
	for i, raw := range cfg.URLs {
		name := chainapi.NewRedactor(raw, cfg.HeadersOf(i))
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			closeAll(clients)
			return nil, fmt.Errorf("evm: %s RPC URL %q: want http(s)://host[:port][/path]", cfg.Network, name.Name())
		}
		rt := &retryTransport{base: &countingTransport{base: base, calls: &c.calls}}
		hc := &http.Client{
			Transport: rt,
			Timeout:   httpTimeout,
			// A JSON-RPC endpoint has no business redirecting, and a redirect
			// would carry the endpoint's headers (its key) to wherever it points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		opts := []rpc.ClientOption{rpc.WithHTTPClient(hc)}
		if h := cfg.HeadersOf(i); len(h) > 0 {
			opts = append(opts, rpc.WithHeaders(h.Clone()))
		}
		rc, err := rpc.DialOptions(ctx, raw, opts...)
		if err != nil {
			closeAll(clients)
			return nil, fmt.Errorf("evm: %s RPC URL %s: %w", cfg.Network, name.Name(), name.Error(err))
		}
		ec := ethclient.NewClient(rc)
		c.retry[ec] = rt
		clients = append(clients, ec)
		names = append(names, name)
	}
	c.eps = chainapi.NewEndpoints(clients, names, cfg.Observe)
	return c, nil
}

// Network returns the network the client reads.
func (c *Client) Network() paywatch.Network { return c.network }

// Calls returns the number of JSON-RPC HTTP requests issued so far.
func (c *Client) Calls() uint64 { return c.calls.Load() }

// Close closes the connections of every endpoint.
func (c *Client) Close() { closeAll(c.eps.All()) }

// Head returns the number of the newest block.
func (c *Client) Head(ctx context.Context) (uint64, error) {
	var head uint64
	err := c.do(ctx, func(ec *ethclient.Client) (err error) {
		head, err = ec.BlockNumber(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("evm: %s head: %w", c.network, err)
	}
	return head, nil
}

// rpcBlock is the part of eth_getBlockByNumber's answer BlockHash needs.
type rpcBlock struct {
	Hash   common.Hash    `json:"hash"`
	Number hexutil.Uint64 `json:"number"`
}

// BlockHash returns the canonical hash of block n as the node reports it.
func (c *Client) BlockHash(ctx context.Context, n uint64) (string, error) {
	var b *rpcBlock
	err := c.do(ctx, func(ec *ethclient.Client) error {
		b = nil
		return ec.Client().CallContext(ctx, &b, "eth_getBlockByNumber", hexutil.EncodeUint64(n), false)
	})
	if err != nil {
		return "", fmt.Errorf("evm: %s block %d: %w", c.network, n, err)
	}
	if b == nil {
		return "", fmt.Errorf("evm: %s block %d: %w", c.network, n, chainapi.ErrBlockNotFound)
	}
	return b.Hash.Hex(), nil
}

// Transfers returns the Transfer events of the configured token contracts in
// blocks [from, to], in chain order, with one eth_getLogs per chunk of at
// most MaxBlockRange blocks. A chunk the provider refuses as too large is
// halved and retried, and the smaller range is kept for later calls.
func (c *Client) Transfers(ctx context.Context, from, to uint64) ([]chainapi.Transfer, error) {
	return c.logs(ctx, from, to, [][]common.Hash{{TransferTopic}})
}

// AddressTransfers returns the transfers to addr in blocks [from, head]: the
// same eth_getLogs as Transfers with the recipient topic set.
func (c *Client) AddressTransfers(ctx context.Context, addr string, from uint64) ([]chainapi.Transfer, error) {
	head, err := c.Head(ctx)
	if err != nil {
		return nil, err
	}
	if from > head {
		return nil, nil
	}
	return c.AddressTransfersIn(ctx, addr, from, head)
}

// AddressTransfersIn returns the transfers to addr in blocks [from, to],
// one eth_getLogs per chunk with the recipient topic set.
func (c *Client) AddressTransfersIn(ctx context.Context, addr string, from, to uint64) ([]chainapi.Transfer, error) {
	norm, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, addr)
	if err != nil {
		return nil, err
	}
	if from > to {
		return nil, nil
	}
	recipient := common.BytesToHash(common.HexToAddress(norm).Bytes())
	return c.logs(ctx, from, to, [][]common.Hash{{TransferTopic}, nil, {recipient}})
}

// logs runs eth_getLogs over [from, to] in chunks for the token contracts
// and the given topics, and decodes the transfers.
func (c *Client) logs(ctx context.Context, from, to uint64, topics [][]common.Hash) ([]chainapi.Transfer, error) {
	logs, err := c.rawLogs(ctx, from, to, topics)
	if err != nil {
		return nil, err
	}
	return c.decodeAll(logs), nil
}

// decodeAll decodes the transfers among logs.
func (c *Client) decodeAll(logs []types.Log) []chainapi.Transfer {
	var out []chainapi.Transfer
	for i := range logs {
		if t, ok := c.decode(&logs[i]); ok {
			out = append(out, t)
		}
	}
	return out
}

// rawLogs runs eth_getLogs over [from, to] in chunks for the token
// contracts and the given topics.
func (c *Client) rawLogs(ctx context.Context, from, to uint64, topics [][]common.Hash) ([]types.Log, error) {
	var out []types.Log
	for start := from; start <= to; {
		size := c.rangeLimit.Load()
		end := to
		if to-start >= size {
			end = start + size - 1
		}
		var logs []types.Log
		q := ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(start),
			ToBlock:   new(big.Int).SetUint64(end),
			Addresses: c.addresses,
			Topics:    topics,
		}
		err := c.do(ctx, func(ec *ethclient.Client) (err error) {
			logs, err = ec.FilterLogs(ctx, q)
			return err
		})
		if errors.Is(err, chainapi.ErrRangeTooLarge) && end > start {
			c.shrink(end - start + 1)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("evm: %s logs of blocks %d-%d: %w", c.network, start, end, err)
		}
		c.maybeGrow(size)
		out = append(out, logs...)
		if end == to {
			break
		}
		start = end + 1
	}
	return out, nil
}

// shrink halves the block range after the provider refused a chunk of
// refused blocks, never going up again within this chunk.
func (c *Client) shrink(refused uint64) {
	half := max(refused/2, 1)
	for {
		cur := c.rangeLimit.Load()
		if cur <= half || c.rangeLimit.CompareAndSwap(cur, half) {
			break
		}
	}
	c.goodChunks.Store(0)
}

// maybeGrow doubles a halved range back toward the maximum after enough
// successful chunks.
func (c *Client) maybeGrow(size uint64) {
	if size >= c.maxRange {
		return
	}
	if c.goodChunks.Add(1) < growAfter {
		return
	}
	c.goodChunks.Store(0)
	c.rangeLimit.CompareAndSwap(size, min(size*2, c.maxRange))
}

// TransactionTransfers returns the token transfers of one transaction from
// its receipt. found is false when the node knows no receipt (not mined, or
// dropped by a reorg) or the receipt's status is 0 (failed).
func (c *Client) TransactionTransfers(ctx context.Context, txHash string) ([]chainapi.Transfer, bool, error) {
	norm, err := paywatch.NormalizeTxHash(c.network, txHash)
	if err != nil {
		return nil, false, err
	}
	var r *types.Receipt
	err = c.do(ctx, func(ec *ethclient.Client) (err error) {
		r, err = ec.TransactionReceipt(ctx, common.HexToHash(norm))
		return err
	})
	if errors.Is(err, ethereum.NotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("evm: %s receipt of %s: %w", c.network, norm, err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return nil, false, nil
	}
	var out []chainapi.Transfer
	for _, l := range r.Logs {
		if t, ok := c.decode(l); ok {
			out = append(out, t)
		}
	}
	return out, true, nil
}

// decode turns a log of a configured contract into a Transfer; ok is false
// for removed logs and for logs that are not an ERC-20 Transfer.
func (c *Client) decode(l *types.Log) (chainapi.Transfer, bool) {
	token, ok := c.tokens[l.Address]
	if !ok || l.Removed || len(l.Topics) != 3 || l.Topics[0] != TransferTopic || len(l.Data) != 32 {
		return chainapi.Transfer{}, false
	}
	return chainapi.Transfer{
		Network:     c.network,
		Token:       token,
		Contract:    l.Address.Hex(),
		TxHash:      l.TxHash.Hex(),
		LogIndex:    uint32(l.Index),
		BlockNumber: l.BlockNumber,
		BlockHash:   l.BlockHash.Hex(),
		From:        common.BytesToAddress(l.Topics[1].Bytes()).Hex(),
		To:          common.BytesToAddress(l.Topics[2].Bytes()).Hex(),
		Amount:      new(big.Int).SetBytes(l.Data),
	}, true
}

// do runs call with failover over the endpoints, with errors normalised.
func (c *Client) do(ctx context.Context, call func(*ethclient.Client) error) error {
	return c.eps.Do(ctx, classify, func(ec *ethclient.Client) error {
		err := normalize(call(ec))
		if err != nil {
			if d := c.retry[ec].take(); d > 0 {
				err = &chainapi.RetryAfterError{After: d, Err: err}
			}
		}
		return err
	})
}

// Phrases providers use when they refuse an eth_getLogs range or result
// size, lowercased. geth says "exceed maximum block range"; others say
// "query returned more than 10000 results", "block range is too wide",
// "Log response size exceeded", "eth_getLogs is limited to a 10,000 range".
var rangePhrases = []string{
	"exceed maximum block range", "exceeds maximum block range", "max block range",
	"range too large", "range is too large", "range too wide", "range is too wide",
	"block range limit", "range limit exceeded", "query returned more than",
	"too many blocks", "too many results", "response size exceeded",
	"response size is larger", "is limited to", "requested blocks",
	"ranges over", "range exceeds",
}

// Phrases providers use for rate limits inside a JSON-RPC error, lowercased.
var ratePhrases = []string{
	"rate limit", "ratelimit", "too many requests", "request limit",
	"exceeded the quota", "quota exceeded", "capacity exceeded", "throughput",
	"compute units",
}

// normalize wraps provider errors in chainapi's sentinels: rate limits in
// ErrRateLimited, refused ranges in ErrRangeTooLarge. (The endpoint list
// scrubs the URL's and headers' credentials from every error it returns.)
func normalize(err error) error {
	if err == nil || errors.Is(err, ethereum.NotFound) {
		return err
	}
	var he rpc.HTTPError
	if errors.As(err, &he) {
		if he.StatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("%w: %w", chainapi.ErrRateLimited, err)
		}
		if he.StatusCode == http.StatusRequestEntityTooLarge {
			return fmt.Errorf("%w: %w", chainapi.ErrRangeTooLarge, err)
		}
		return err
	}
	var re rpc.Error
	if errors.As(err, &re) {
		msg := strings.ToLower(re.Error())
		for _, p := range ratePhrases {
			if strings.Contains(msg, p) {
				return fmt.Errorf("%w: %w", chainapi.ErrRateLimited, err)
			}
		}
		if strings.Contains(msg, "beyond current head") {
			return err // the caller asked past the head: not a range limit
		}
		for _, p := range rangePhrases {
			if strings.Contains(msg, p) {
				return fmt.Errorf("%w: %w", chainapi.ErrRangeTooLarge, err)
			}
		}
	}
	return err
}

// classify decides whether a normalised error moves on to the next
// endpoint: rate limits and transport or HTTP errors do; answers of the
// node (JSON-RPC errors, not found, refused ranges) do not.
func classify(err error) chainapi.Failure {
	switch {
	case errors.Is(err, chainapi.ErrRateLimited):
		return chainapi.Limited
	case errors.Is(err, chainapi.ErrRangeTooLarge), errors.Is(err, ethereum.NotFound):
		return chainapi.Final
	}
	var re rpc.Error
	if errors.As(err, &re) {
		return chainapi.Final
	}
	return chainapi.Failover
}

// retryTransport keeps the Retry-After of an endpoint's last 429 or 503,
// which go-ethereum's errors do not carry, for the endpoint list to honour.
type retryTransport struct {
	base http.RoundTripper
	last atomic.Int64 // a time.Duration; 0: none
}

func (t *retryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if res != nil && (res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable) {
		if d := chainapi.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now()); d > 0 {
			t.last.Store(int64(d))
		}
	}
	return res, err
}

// take returns the Retry-After last seen, once.
func (t *retryTransport) take() time.Duration {
	if t == nil {
		return 0
	}
	return time.Duration(t.last.Swap(0))
}

// countingTransport counts HTTP requests, which are JSON-RPC calls.
type countingTransport struct {
	base  http.RoundTripper
	calls *atomic.Uint64
}

// RoundTrip counts the request and passes it on.
func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	return t.base.RoundTrip(r)
}

// closeAll closes the clients.
func closeAll(clients []*ethclient.Client) {
	for _, ec := range clients {
		ec.Close()
	}
}
