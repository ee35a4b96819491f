package solana

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// The clusters a genesis hash names (solana-foundation/explorer's
// GENESIS_HASHES; ChainAgnostic/namespaces solana/caip2.md).
var clusters = map[string]string{
	"5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d": "mainnet-beta",
	"EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG": "devnet",
	"4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY": "testnet",
}

// MainnetGenesis is mainnet-beta's genesis hash.
const MainnetGenesis = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"

// httpTimeout bounds one JSON-RPC call, as on the other networks.
const httpTimeout = 30 * time.Second

// Client reads Solana through one or more JSON-RPC endpoints, with
// failover, each endpoint's credentials redacted from every error (the
// endpoints of chainapi.Endpoints).
type Client struct {
	eps   *chainapi.Endpoints[*rpc.Client]
	retry map[*rpc.Client]*retryTransport
	// calls counts the calls made, failed attempts and failovers too.
	calls atomic.Uint64
	// historyFirst is the oldest slot the endpoints keep, as read at
	// historyAt (cachedHistoryStart).
	historyMu    sync.Mutex
	historyFirst uint64
	historyAt    time.Time
}

// Dial returns a client of urls (http:// or https://, any path and query;
// headers, per URL, may be nil). It makes no call.
func Dial(urls []string, headers []http.Header, observe func(chainapi.RPCOutcome)) (*Client, error) {
	if len(urls) == 0 {
		return nil, errors.New("solana: no RPC URL")
	}
	var conns []*rpc.Client
	var names []chainapi.Redactor
	retry := map[*rpc.Client]*retryTransport{}
	for i, raw := range urls {
		var h http.Header
		if i < len(headers) {
			h = headers[i]
		}
		name := chainapi.NewRedactor(raw, h)
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("solana: RPC URL %q: want http(s)://host[:port][/path]", name.Name())
		}
		custom := map[string]string{}
		for k, vs := range h {
			if len(vs) > 0 {
				custom[k] = vs[0]
			}
		}
		rt := &retryTransport{base: http.DefaultTransport}
		hc := &http.Client{
			Transport: rt,
			Timeout:   httpTimeout,
			// An RPC endpoint has no business redirecting, and a redirect
			// would carry its headers (its key) to wherever it points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		rc := rpc.NewWithCustomRPCClient(jsonrpc.NewClientWithOpts(raw, &jsonrpc.RPCClientOpts{HTTPClient: hc, CustomHeaders: custom}))
		retry[rc] = rt
		conns = append(conns, rc)
		names = append(names, name)
	}
	return &Client{eps: chainapi.NewEndpoints(conns, names, observe), retry: retry}, nil
}

// nodeStateErrors are the JSON-RPC error codes of a node that cannot
// answer now (behind, unhealthy, missing the slot or its history:
// agave's rpc custom errors -32004, -32005, -32007, -32009, -32011,
// -32014, -32016): another endpoint may answer.
var nodeStateErrors = []int{-32004, -32005, -32007, -32009, -32011, -32014, -32016}

// classify sorts an endpoint's error: a rate limit (HTTP 429, whatever its
// body, or a JSON-RPC error 429), a node that cannot answer now, or a
// transport error tries the next endpoint; any other JSON-RPC error object
// is the node's answer (final).
func classify(err error) chainapi.Failure {
	if errors.Is(err, chainapi.ErrRateLimited) {
		return chainapi.Limited
	}
	var he *jsonrpc.HTTPError
	if errors.As(err, &he) && he.Code == http.StatusTooManyRequests {
		return chainapi.Limited
	}
	var re *RPCError
	if errors.As(err, &re) {
		switch {
		case re.Code == http.StatusTooManyRequests || re.Code == -32429:
			return chainapi.Limited
		case slices.Contains(nodeStateErrors, re.Code):
			return chainapi.Failover
		}
		return chainapi.Final
	}
	if errors.Is(err, rpc.ErrNotFound) {
		return chainapi.Final
	}
	return chainapi.Failover
}

// RPCError is a node's JSON-RPC error object, as solana-go reports it
// (*jsonrpc.RPCError, whose message is a dump of the struct) but read by
// people: "JSON-RPC error -32007: Slot 5 was skipped, …".
type RPCError struct {
	Code    int
	Message string
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// readable replaces a JSON-RPC error object in err by an RPCError.
func readable(err error) error {
	var re *jsonrpc.RPCError
	if err == nil || !errors.As(err, &re) {
		return err
	}
	return &RPCError{Code: re.Code, Message: re.Message}
}

// do runs call with failover; a rate-limited answer is ErrRateLimited, as
// the scanners' budgets and back-off expect of every client, and a
// Retry-After the endpoint sent rests it that long (chainapi.Endpoints).
func (c *Client) do(ctx context.Context, call func(*rpc.Client) error) error {
	return c.eps.Do(ctx, classify, func(rc *rpc.Client) error {
		c.calls.Add(1)
		err := readable(call(rc))
		status, wait := c.retry[rc].take()
		if err == nil {
			return nil
		}
		if status == http.StatusTooManyRequests || classify(err) == chainapi.Limited {
			err = fmt.Errorf("%w: %w", chainapi.ErrRateLimited, err)
		}
		if wait > 0 {
			err = &chainapi.RetryAfterError{After: wait, Err: err}
		}
		return err
	})
}

// retryTransport keeps an endpoint's last 429 or 503 and its Retry-After,
// which solana-go's errors do not carry when the body is a JSON-RPC error
// object (a public RPC's 429 is), for do and the endpoint list. Calls to
// one endpoint may overlap, so a wait seen by one call can be taken by
// another: either way the endpoint rests.
type retryTransport struct {
	base   http.RoundTripper
	status atomic.Int32
	last   atomic.Int64 // a time.Duration; 0: none
}

func (t *retryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if res != nil && (res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable) {
		t.status.Store(int32(res.StatusCode))
		if d := chainapi.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now()); d > 0 {
			t.last.Store(int64(d))
		}
	}
	return res, err
}

// take returns the status and Retry-After last seen, once.
func (t *retryTransport) take() (int, time.Duration) {
	if t == nil {
		return 0, 0
	}
	return int(t.status.Swap(0)), time.Duration(t.last.Swap(0))
}

// Cluster returns the genesis hash the endpoints serve and the cluster it
// names ("mainnet-beta", "devnet", "testnet"; "" for another chain).
func (c *Client) Cluster(ctx context.Context) (genesis, cluster string, err error) {
	err = c.do(ctx, func(rc *rpc.Client) error {
		h, err := rc.GetGenesisHash(ctx)
		genesis = h.String()
		return err
	})
	return genesis, clusters[genesis], err
}

// Slot returns the newest slot at the commitment: confirmed (the
// scanner's head) or finalized (how far transfers count).
func (c *Client) Slot(ctx context.Context, commitment rpc.CommitmentType) (uint64, error) {
	var slot uint64
	err := c.do(ctx, func(rc *rpc.Client) (err error) {
		slot, err = rc.GetSlot(ctx, commitment)
		return err
	})
	return slot, err
}

// Signatures returns an account's new signatures, oldest first, failed
// ones listed with their Err (NewSignatures), at the given commitment
// (confirmed, to see a transfer early; finalized, to count it), each page
// from a node that has reached q.MinContextSlot.
func (c *Client) Signatures(ctx context.Context, account string, q SignatureQuery, commitment rpc.CommitmentType) ([]*rpc.TransactionSignature, error) {
	key, err := sol.PublicKeyFromBase58(account)
	if err != nil {
		return nil, fmt.Errorf("solana: account %q: %w", account, err)
	}
	page := func(ctx context.Context, before, until string, limit int) ([]*rpc.TransactionSignature, error) {
		opts := &rpc.GetSignaturesForAddressOpts{Limit: &limit, Commitment: commitment}
		if q.MinContextSlot > 0 {
			opts.MinContextSlot = &q.MinContextSlot
		}
		if before != "" {
			if opts.Before, err = sol.SignatureFromBase58(before); err != nil {
				return nil, err
			}
		}
		if until != "" {
			if opts.Until, err = sol.SignatureFromBase58(until); err != nil {
				return nil, err
			}
		}
		var out []*rpc.TransactionSignature
		err := c.do(ctx, func(rc *rpc.Client) (err error) {
			out, err = rc.GetSignaturesForAddressWithOpts(ctx, key, opts)
			return err
		})
		return out, err
	}
	return NewSignatures(ctx, page, q, MaxSignaturesPage, c.cachedHistoryStart)
}

// historyTTL is how long a read of the oldest slot an endpoint keeps is
// reused: it moves slowly (a node drops old ledger in large steps), and
// NewSignatures may need it for every account of every batch.
const historyTTL = time.Minute

// cachedHistoryStart is HistoryStart, read at most once per historyTTL.
func (c *Client) cachedHistoryStart(ctx context.Context) (uint64, error) {
	c.historyMu.Lock()
	defer c.historyMu.Unlock()
	if !c.historyAt.IsZero() && time.Since(c.historyAt) < historyTTL {
		return c.historyFirst, nil
	}
	first, err := c.HistoryStart(ctx)
	if err != nil {
		return 0, err
	}
	c.historyFirst, c.historyAt = first, time.Now()
	return first, nil
}

// Credits returns the token credits of one transaction (ParseTransaction);
// found is false while the node does not have it at the commitment. Not
// found is the node's answer, not a fork's proof: a node behind, or one
// without the history, says so too, so a scanner must call a transaction
// seen at confirmed dropped only once its blockhash has expired (about 150
// slots) and a finalized head is past it.
func (c *Client) Credits(ctx context.Context, signature string, commitment rpc.CommitmentType) (credits []Credit, found bool, err error) {
	sig, err := sol.SignatureFromBase58(signature)
	if err != nil {
		return nil, false, fmt.Errorf("solana: signature %q: %w", signature, err)
	}
	var res *rpc.GetTransactionResult
	v := uint64(0)
	err = c.do(ctx, func(rc *rpc.Client) (err error) {
		// No encoding: the node's default, "json", which ParseTransaction
		// reads (solana-go's option list leaves "json" out).
		res, err = rc.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: commitment, MaxSupportedTransactionVersion: &v})
		return err
	})
	if errors.Is(err, rpc.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	credits, err = ParseTransaction(res)
	if errors.Is(err, ErrNoTransaction) {
		return nil, false, nil
	}
	return credits, err == nil, err
}
