package tron

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

var _ chainapi.TipReader = (*Client)(nil)

// ReadTip reads the newest block (getnowblock, one request) and, when it
// is block next, its transaction infos (a second request, for a block with
// transactions only). A scanner batch of one block costs four: the head,
// the block range, the infos and the cursor's block; here the newest
// block's parent id stands in for the cursor's. When the newest block is
// not next, Found is false: below it, nothing is new; above it, the caller
// reads the blocks in between with a batch.
func (c *Client) ReadTip(ctx context.Context, next uint64) (chainapi.TipRead, error) {
	h, err := c.nowBlock(ctx)
	if err != nil {
		return chainapi.TipRead{}, err
	}
	out := chainapi.TipRead{Head: h.num}
	if h.num != next {
		return out, nil
	}
	if next > 0 {
		if err := checkBlockID(h.parent, next-1); err != nil {
			return chainapi.TipRead{}, fmt.Errorf("tron: parent of block %d: %w", next, err)
		}
	}
	b := block{num: next, id: hex.EncodeToString(h.id), txs: make(map[string]bool, len(h.txids))}
	for _, id := range h.txids {
		b.txs[hex.EncodeToString(id)] = true
	}
	if len(b.txs) > 0 {
		if out.Transfers, err = c.blockTransfers(ctx, b); err != nil {
			return chainapi.TipRead{}, err
		}
	}
	out.Found, out.Hash, out.ParentHash = true, b.id, hex.EncodeToString(h.parent)
	return out, nil
}

// blockTransfers reads the transaction infos of block b and returns its
// transfers; every info must be of one of b's transactions.
func (c *Client) blockTransfers(ctx context.Context, b block) ([]chainapi.Transfer, error) {
	infos, err := c.blockInfos(ctx, b)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		if id := hex.EncodeToString(info.id); !b.txs[id] {
			return nil, fmt.Errorf("tron: block %d changed while it was read (reorg); transaction %s is not in block %s", b.num, id, b.id)
		}
	}
	return c.decodeBlock(b, infos, ""), nil
}

// BlockTime returns the timestamp of block n.
func (c *Client) BlockTime(ctx context.Context, n uint64) (time.Time, error) {
	b, err := c.blockAt(ctx, n)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(b.time).UTC(), nil
}

// blockAt returns block n's header, its id checked; ErrBlockNotFound above
// the node's head.
func (c *Client) blockAt(ctx context.Context, n uint64) (blockHead, error) {
	var b blockHead
	var found bool
	err := c.do(ctx, func(ctx context.Context, nd node) (err error) {
		b, found, err = nd.blockByNum(ctx, n)
		return err
	})
	if err != nil {
		return blockHead{}, fmt.Errorf("tron: block %d: %w", n, err)
	}
	if !found { // java-tron answers an unknown height with an empty block
		return blockHead{}, fmt.Errorf("tron: block %d: %w", n, chainapi.ErrBlockNotFound)
	}
	if err := checkBlockID(b.id, n); err != nil {
		return blockHead{}, err
	}
	return b, nil
}
