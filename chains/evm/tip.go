package evm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

var _ chainapi.TipReader = (*Client)(nil)

// ReadTip reads block next at the tip of the chain in one JSON-RPC batch,
// one HTTP request: the block's header, then its Transfer logs, then the
// head. A scanner batch of one block costs three (the head, the headers,
// the logs with the cursor's header); here the header's parent hash stands
// in for the cursor's, and the head comes with it.
//
// The block is checked as ReadBatch checks its recent blocks: the logs must
// be of the header's block, and a header whose logsBloom admits a token
// Transfer while eth_getLogs returned none is asked for again by its hash
// (a second request, for such blocks only). A node processes a batch's
// calls in turn, so the block can appear between the header call and the
// logs call; an empty answer for it is caught the same way.
//
// Without the block (null header) Found is false and the logs' answer,
// which may be an error for a range above the head, is not looked at.
// With the block but an error for its logs, Found is false too, with a
// head of at least next: the caller reads the block with a batch.
func (c *Client) ReadTip(ctx context.Context, next uint64) (chainapi.TipRead, error) {
	var (
		h    *rpcHeader
		logs []types.Log
		head hexutil.Uint64
	)
	tag := hexutil.EncodeUint64(next)
	topics := [][]common.Hash{{TransferTopic}}
	var elems []rpc.BatchElem
	err := c.do(ctx, func(ec *ethclient.Client) error {
		h, logs, head = nil, nil, 0
		elems = []rpc.BatchElem{
			{Method: "eth_getBlockByNumber", Args: []any{tag, false}, Result: &h},
			{Method: "eth_getLogs", Args: []any{c.filter(next, next, topics)}, Result: &logs},
			{Method: "eth_blockNumber", Result: &head},
		}
		if err := c.batch(ctx, ec, elems); err != nil {
			return err
		}
		for _, i := range []int{0, 2} { // the logs' error is looked at below
			if e := elems[i].Error; e != nil && !errors.Is(e, rpc.ErrNoResult) {
				return e
			}
		}
		return nil
	})
	if err != nil {
		return chainapi.TipRead{}, fmt.Errorf("evm: %s block %d at the tip: %w", c.network, next, err)
	}
	out := chainapi.TipRead{Head: uint64(head)}
	if h == nil {
		return out, nil
	}
	if e := elems[1].Error; e != nil && !errors.Is(e, rpc.ErrNoResult) {
		// The header is there but eth_getLogs refused the block (a
		// backend whose log index is behind: "block range extends beyond
		// current head block"): not found here, with a head at least
		// next, so the caller reads it with a batch, whose errors fail
		// over and back off as usual.
		out.Head = max(out.Head, next)
		return out, nil
	}
	if uint64(h.Number) != next {
		return chainapi.TipRead{}, fmt.Errorf("evm: %s block %d: node returned block %d", c.network, next, h.Number)
	}
	if err := c.checkComplete(ctx, []rpcHeader{*h}, logs); err != nil {
		return chainapi.TipRead{}, err
	}
	for _, l := range logs {
		if l.BlockNumber != next { // checkComplete matched the others' hashes
			return chainapi.TipRead{}, fmt.Errorf("evm: %s eth_getLogs of block %d returned a log of block %d: %w",
				c.network, next, l.BlockNumber, chainapi.ErrIncompleteRead)
		}
	}
	out.Found, out.Hash, out.ParentHash = true, h.Hash.Hex(), h.ParentHash.Hex()
	out.Head = max(out.Head, next) // a load-balanced node's head can lag its blocks
	out.Transfers = c.decodeAll(logs)
	return out, nil
}

// rpcBlockTime is the part of eth_getBlockByNumber's answer BlockTime needs.
type rpcBlockTime struct {
	Number    hexutil.Uint64 `json:"number"`
	Timestamp hexutil.Uint64 `json:"timestamp"`
}

// BlockTime returns the timestamp of block n as the node reports it.
func (c *Client) BlockTime(ctx context.Context, n uint64) (time.Time, error) {
	var b *rpcBlockTime
	err := c.do(ctx, func(ec *ethclient.Client) error {
		b = nil
		return ec.Client().CallContext(ctx, &b, "eth_getBlockByNumber", hexutil.EncodeUint64(n), false)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("evm: %s block %d: %w", c.network, n, err)
	}
	if b == nil {
		return time.Time{}, fmt.Errorf("evm: %s block %d: %w", c.network, n, chainapi.ErrBlockNotFound)
	}
	return time.Unix(int64(b.Timestamp), 0).UTC(), nil
}
