package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// RecentBlocks is how near the head a block must be for ReadBatch to check
// its logs against its header's logsBloom. A provider behind a load
// balancer can serve the head from one backend and eth_getLogs from another
// whose log index has not reached the newest blocks yet, which answers []
// for them; blocks further down are taken to be indexed everywhere.
const RecentBlocks = 128

// maxBatchItems bounds the calls in one JSON-RPC batch: providers refuse
// larger batches (limits of 100 to 1,000 calls are common).
const maxBatchItems = 64

var _ chainapi.BatchReader = (*Client)(nil)

// rpcHeader is the part of an eth_getBlockByNumber answer ReadBatch needs.
type rpcHeader struct {
	Hash       common.Hash    `json:"hash"`
	ParentHash common.Hash    `json:"parentHash"`
	Number     hexutil.Uint64 `json:"number"`
	Bloom      types.Bloom    `json:"logsBloom"`
}

// ReadBatch reads one scanner batch in three HTTP requests, whatever its
// length: a JSON-RPC batch of the headers of its blocks within RecentBlocks
// of q.Head (at least block q.To's, whose hash it returns), then one batch
// of the eth_getLogs of the blocks and the cursor block's header (plain
// calls when the range needs several eth_getLogs chunks).
//
// The recent blocks are checked for logs the node left out: a block whose
// logsBloom matches a configured token contract and the Transfer topic but
// for which eth_getLogs returned nothing is asked for again alone, with
// eth_getLogs by its hash (EIP-234, one batch for all such blocks), which a
// node that does not know the block fails. An error or a log there means
// the range's answer was incomplete: ErrIncompleteRead. An empty answer
// means a bloom false positive, and the block counts as read. The headers
// must link up and the logs' block hashes match them, or the chain changed
// between the reads: ErrIncompleteRead too.
func (c *Client) ReadBatch(ctx context.Context, q chainapi.BatchQuery) (chainapi.BatchRead, error) {
	if q.To < q.From {
		return chainapi.BatchRead{}, fmt.Errorf("evm: %s batch %d-%d ends before it starts", c.network, q.From, q.To)
	}
	head := max(q.Head, q.To)
	first, check := q.To, false
	if lo := max(q.From, head-min(head, RecentBlocks-1)); lo <= q.To {
		first, check = lo, true
	}
	headers, err := c.headers(ctx, first, q.To)
	if err != nil {
		return chainapi.BatchRead{}, err
	}
	out := chainapi.BatchRead{Hash: headers[len(headers)-1].Hash.Hex()}
	logs, cursor, err := c.logsThenHeader(ctx, q.From, q.To, q.Cursor)
	if err != nil {
		return chainapi.BatchRead{}, err
	}
	out.CursorHash = cursor
	if check {
		if err := c.checkComplete(ctx, headers, logs); err != nil {
			return chainapi.BatchRead{}, err
		}
	}
	out.Transfers = c.decodeAll(logs)
	return out, nil
}

// headers reads the headers of blocks [from, to] in JSON-RPC batches and
// checks that they link up. A block the node does not have gives
// ErrBlockNotFound.
func (c *Client) headers(ctx context.Context, from, to uint64) ([]rpcHeader, error) {
	out := make([]rpcHeader, 0, to-from+1)
	for start := from; start <= to; start += maxBatchItems {
		end := min(to, start+maxBatchItems-1)
		got := make([]*rpcHeader, end-start+1)
		elems := make([]rpc.BatchElem, len(got))
		err := c.do(ctx, func(ec *ethclient.Client) error {
			for i := range elems {
				got[i] = nil
				elems[i] = rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{hexutil.EncodeUint64(start + uint64(i)), false}, Result: &got[i]}
			}
			return c.batchCall(ctx, ec, elems)
		})
		if err != nil {
			return nil, fmt.Errorf("evm: %s headers of blocks %d-%d: %w", c.network, start, end, err)
		}
		for i, h := range got {
			n := start + uint64(i)
			if h == nil {
				return nil, fmt.Errorf("evm: %s block %d: %w", c.network, n, chainapi.ErrBlockNotFound)
			}
			if uint64(h.Number) != n {
				return nil, fmt.Errorf("evm: %s block %d: node returned block %d", c.network, n, h.Number)
			}
			out = append(out, *h)
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].ParentHash != out[i-1].Hash {
			return nil, fmt.Errorf("evm: %s blocks %d and %d are of different branches (the chain changed while they were read): %w",
				c.network, out[i-1].Number, out[i].Number, chainapi.ErrIncompleteRead)
		}
	}
	return out, nil
}

// logsThenHeader reads the Transfer logs of [from, to] and then, when
// cursor is above 0, the hash of block cursor: in one JSON-RPC batch when
// the range takes one eth_getLogs, else in plain calls.
func (c *Client) logsThenHeader(ctx context.Context, from, to, cursor uint64) ([]types.Log, string, error) {
	topics := [][]common.Hash{{TransferTopic}}
	if size := c.rangeLimit.Load(); cursor > 0 && to-from < size {
		var logs []types.Log
		var b *rpcBlock
		err := c.do(ctx, func(ec *ethclient.Client) error {
			logs, b = nil, nil
			return c.batchCall(ctx, ec, []rpc.BatchElem{
				{Method: "eth_getLogs", Args: []any{c.filter(from, to, topics)}, Result: &logs},
				{Method: "eth_getBlockByNumber", Args: []any{hexutil.EncodeUint64(cursor), false}, Result: &b},
			})
		})
		switch {
		case err == nil && b == nil:
			return nil, "", fmt.Errorf("evm: %s block %d: %w", c.network, cursor, chainapi.ErrBlockNotFound)
		case err == nil:
			c.maybeGrow(size)
			return logs, b.Hash.Hex(), nil
		case errors.Is(err, chainapi.ErrRangeTooLarge) && to > from:
			c.shrink(to - from + 1) // and read the range in chunks below
		default:
			return nil, "", fmt.Errorf("evm: %s logs of blocks %d-%d: %w", c.network, from, to, err)
		}
	}
	logs, err := c.rawLogs(ctx, from, to, topics)
	if err != nil {
		return nil, "", err
	}
	if cursor == 0 {
		return logs, "", nil
	}
	hash, err := c.BlockHash(ctx, cursor)
	return logs, hash, err
}

// checkComplete checks the logs of a batch against the headers of its
// recent blocks: see ReadBatch.
func (c *Client) checkComplete(ctx context.Context, headers []rpcHeader, logs []types.Log) error {
	index := make(map[uint64]int, len(headers))
	for i, h := range headers {
		index[uint64(h.Number)] = i
	}
	seen := make([]bool, len(headers))
	for _, l := range logs {
		i, ok := index[l.BlockNumber]
		if !ok {
			continue
		}
		if l.BlockHash != headers[i].Hash {
			return fmt.Errorf("evm: %s block %d: logs of block %s, header of block %s (the chain changed while the batch was read): %w",
				c.network, l.BlockNumber, l.BlockHash.Hex(), headers[i].Hash.Hex(), chainapi.ErrIncompleteRead)
		}
		seen[i] = true
	}
	var suspects []rpcHeader
	for i, h := range headers {
		if !seen[i] && c.mayHoldTransfers(h.Bloom) {
			suspects = append(suspects, h)
		}
	}
	topics := [][]common.Hash{{TransferTopic}}
	for start := 0; start < len(suspects); start += maxBatchItems {
		chunk := suspects[start:min(len(suspects), start+maxBatchItems)]
		got := make([][]types.Log, len(chunk))
		elems := make([]rpc.BatchElem, len(chunk))
		err := c.do(ctx, func(ec *ethclient.Client) error {
			for i, h := range chunk {
				got[i] = nil
				arg := map[string]any{"blockHash": h.Hash, "address": c.addresses, "topics": topics}
				elems[i] = rpc.BatchElem{Method: "eth_getLogs", Args: []any{arg}, Result: &got[i]}
			}
			if err := c.batch(ctx, ec, elems); err != nil {
				return err
			}
			for _, e := range elems { // only rate limits are the endpoint's fault
				if e.Error != nil && errors.Is(normalize(e.Error), chainapi.ErrRateLimited) {
					return e.Error
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("evm: %s logs of blocks by hash: %w", c.network, err)
		}
		for i, h := range chunk {
			if err := elems[i].Error; err != nil {
				return fmt.Errorf("evm: %s block %d: its logsBloom matches but eth_getLogs returned no logs, and by its hash: %w: %w",
					c.network, h.Number, err, chainapi.ErrIncompleteRead)
			}
			if len(got[i]) > 0 {
				return fmt.Errorf("evm: %s block %d: eth_getLogs left out its %d token logs: %w",
					c.network, h.Number, len(got[i]), chainapi.ErrIncompleteRead)
			}
		}
	}
	return nil
}

// mayHoldTransfers reports whether a block's logsBloom admits a Transfer
// log of a configured token contract. Blooms have no false negatives.
func (c *Client) mayHoldTransfers(b types.Bloom) bool {
	if !types.BloomLookup(b, TransferTopic) {
		return false
	}
	for _, a := range c.addresses {
		if types.BloomLookup(b, a) {
			return true
		}
	}
	return false
}

// filter is the eth_getLogs filter of the token contracts over [from, to].
func (c *Client) filter(from, to uint64, topics [][]common.Hash) map[string]any {
	return map[string]any{
		"fromBlock": hexutil.EncodeUint64(from),
		"toBlock":   hexutil.EncodeUint64(to),
		"address":   c.addresses,
		"topics":    topics,
	}
}

// batchCall sends elems as one JSON-RPC batch (c.batch) and returns the
// first call's error, if any. A null result leaves the call's Result nil
// rather than failing it.
func (c *Client) batchCall(ctx context.Context, ec *ethclient.Client, elems []rpc.BatchElem) error {
	if err := c.batch(ctx, ec, elems); err != nil {
		return err
	}
	for _, e := range elems {
		if e.Error != nil && !errors.Is(e.Error, rpc.ErrNoResult) {
			return e.Error
		}
	}
	return nil
}

// batch sends elems as one JSON-RPC batch, one HTTP request, setting each
// call's Error as rpc.Client.BatchCallContext does. Some providers refuse
// batches (an HTTP 4xx, or one error object where a list was due): when a
// batch is refused so (batchRefused) and the same calls then succeed one
// at a time, the client sends its calls one at
// a time from then on, so such a provider costs more requests but never
// stalls the scanner.
func (c *Client) batch(ctx context.Context, ec *ethclient.Client, elems []rpc.BatchElem) error {
	if c.noBatch.Load() {
		return oneByOne(ctx, ec, elems)
	}
	err := ec.Client().BatchCallContext(ctx, elems)
	if err == nil || !batchRefused(err) {
		return err
	}
	if oneByOne(ctx, ec, elems) != nil {
		return err // the endpoint failed, not just the batch
	}
	if c.noBatch.CompareAndSwap(false, true) {
		// Only how it refused: the answer's body may echo the request's
		// credentials (issue 38), and this line is logged as is.
		reason := "its answer is not a list of results"
		var herr rpc.HTTPError
		if errors.As(err, &herr) {
			reason = fmt.Sprintf("HTTP %d", herr.StatusCode)
		}
		slog.Warn("the RPC endpoint refused a JSON-RPC batch; sending calls one at a time",
			"network", c.network, "reason", reason)
	}
	return nil
}

// batchRefused reports whether a batch's error looks like an endpoint that
// does not take batches: an HTTP 4xx other than a rate limit, or an answer
// that is not the list a batch needs. A 5xx or a lost connection is a
// failure like any other, for the caller's retries and failover.
func batchRefused(err error) bool {
	var herr rpc.HTTPError
	var jerr *json.UnmarshalTypeError
	if errors.As(err, &herr) {
		return herr.StatusCode >= 400 && herr.StatusCode < 500 && herr.StatusCode != http.StatusTooManyRequests
	}
	return errors.As(err, &jerr)
}

// oneByOne makes elems' calls one request each. A call the node answers
// with an error (or no result) gets it in its Error, as in a batch; a
// failed request ends it with that error.
func oneByOne(ctx context.Context, ec *ethclient.Client, elems []rpc.BatchElem) error {
	for i := range elems {
		e := &elems[i]
		e.Error = nil
		err := ec.Client().CallContext(ctx, e.Result, e.Method, e.Args...)
		var rerr rpc.Error
		switch {
		case err == nil:
		case errors.As(err, &rerr), errors.Is(err, rpc.ErrNoResult):
			e.Error = err
		default:
			return err
		}
	}
	return nil
}
