package devnet

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/paywatch/paywatch"
)

// reorg implements chain: it rewinds the canonical chain to the parent of
// the newest depth blocks with the simulated beacon's Fork, empties the
// transaction pool (which the rewind refills with the replaced blocks'
// transactions, as a real node would), and seals depth+1 empty blocks.
// With reinclude it then puts the replaced blocks' signed transactions back
// into the pool and seals one more block with them: the same hashes, each
// with the receipt status it had.
func (c *evmChain) reorg(ctx context.Context, depth int, reinclude bool) (uint64, []string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	head := c.head()
	if uint64(depth) > head-c.setupHead {
		return head, nil, paywatch.Errorf(paywatch.EINVALID,
			"depth %d reaches into block %d or earlier, which holds the devnet's setup; at most %d blocks can be replaced now",
			depth, c.setupHead, head-c.setupHead)
	}
	bc := c.eth.BlockChain()
	fork := head - uint64(depth)
	var dropped []string
	var oldHashes []common.Hash
	var txs []*types.Transaction
	for n := fork + 1; n <= head; n++ {
		b := bc.GetBlockByNumber(n)
		if b == nil {
			return head, nil, fmt.Errorf("%s: block %d missing", c.info.Network, n)
		}
		oldHashes = append(oldHashes, b.Hash())
		for _, tx := range b.Transactions() {
			dropped = append(dropped, tx.Hash().Hex())
			txs = append(txs, tx)
		}
	}
	// The receipt statuses, for checking that the transactions mined again
	// do what they did (a TransferFailed transaction fails again).
	statuses := make([]uint64, len(txs))
	if reinclude {
		for i, tx := range txs {
			r, err := c.client.TransactionReceipt(ctx, tx.Hash())
			if err != nil {
				return head, nil, fmt.Errorf("%s: receipt of %s: %w", c.info.Network, tx.Hash().Hex(), err)
			}
			statuses[i] = r.Status
		}
	}
	if err := c.beacon.Fork(bc.GetCanonicalHash(fork)); err != nil {
		return head, nil, fmt.Errorf("%s: fork at %d: %w", c.info.Network, fork, err)
	}
	pool := c.eth.TxPool()
	if err := pool.Sync(); err != nil {
		return c.head(), nil, err
	}
	pool.Clear()
	for range depth + 1 {
		if err := c.commit(); err != nil {
			return c.head(), nil, fmt.Errorf("%s: reorg: %w", c.info.Network, err)
		}
	}
	// The new branch must really lack the old blocks and their transactions.
	for i, h := range oldHashes {
		if bc.GetCanonicalHash(fork+1+uint64(i)) == h {
			return c.head(), nil, fmt.Errorf("%s: reorg kept block %d", c.info.Network, fork+1+uint64(i))
		}
	}
	for _, h := range dropped {
		if _, err := c.client.TransactionReceipt(ctx, common.HexToHash(h)); !errors.Is(err, ethereum.NotFound) {
			return c.head(), nil, fmt.Errorf("%s: reorg: transaction %s is still on chain (%v)", c.info.Network, h, err)
		}
	}
	if reinclude {
		if err := c.reinclude(ctx, txs, statuses); err != nil {
			return c.head(), nil, fmt.Errorf("%s: reorg: %w", c.info.Network, err)
		}
	}
	if dropped == nil {
		dropped = []string{}
	}
	return c.head(), dropped, nil
}

// reinclude seals one block with txs, signed transactions a reorg dropped,
// and checks that each is in it with the receipt status it had before.
// Callers hold mu.
func (c *evmChain) reinclude(ctx context.Context, txs []*types.Transaction, statuses []uint64) error {
	pool := c.eth.TxPool()
	for i, err := range pool.Add(txs, true) {
		if err != nil {
			pool.Clear()
			return fmt.Errorf("transaction %s back into the pool: %w", txs[i].Hash().Hex(), err)
		}
	}
	if err := c.commit(); err != nil {
		pool.Clear()
		return err
	}
	head := c.head()
	for i, tx := range txs {
		r, err := c.client.TransactionReceipt(ctx, tx.Hash())
		if err != nil {
			pool.Clear()
			return fmt.Errorf("transaction %s was not mined again: %w", tx.Hash().Hex(), err)
		}
		if r.BlockNumber.Uint64() != head {
			return fmt.Errorf("transaction %s mined again in block %d, want %d", tx.Hash().Hex(), r.BlockNumber, head)
		}
		if r.Status != statuses[i] {
			return fmt.Errorf("transaction %s mined again with receipt status %d, had %d", tx.Hash().Hex(), r.Status, statuses[i])
		}
	}
	return nil
}
