package devnet

import (
	"context"
	"math/big"

	"github.com/paywatch/paywatch"
)

// The Solana devnet as one of the devnet's chains (the chain interface):
// what Start, the block producer and the /devnet endpoints use once the
// table has a SOLANA row. Its slots are its blocks: mine makes slots (one
// now and then skipped), a batch of transfers goes into one slot, and a
// reorg drops the newest unfinalized blocks.

// status implements chain.
func (c *solanaChain) status() NetworkStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	tokens := make(map[paywatch.Token]string, len(c.mints))
	for _, m := range c.mints {
		tokens[m.Token] = m.Mint
	}
	return NetworkStatus{Network: c.network, Head: c.slot, RPCURL: c.url, Tokens: tokens}
}

// transfer implements chain: the transfers go into one new slot, all or
// none; From must be the faucet (the devnet's only Solana account), and a
// request's Memo is its Solana Pay reference.
func (c *solanaChain) transfer(_ context.Context, reqs []TransferRequest, failed bool) ([]TransferResult, error) {
	built := make([]*solanaTransfer, len(reqs))
	for i, req := range reqs {
		if req.From != "" && req.From != c.faucet.PublicKey().String() {
			return nil, paywatch.Errorf(paywatch.EINVALID, "from: the Solana devnet sends from its faucet only")
		}
		m, ok := c.mintOf(req.Token)
		if !ok {
			return nil, paywatch.Errorf(paywatch.EINVALID, "%s is not supported on %s", req.Token, c.network)
		}
		to, err := paywatch.NormalizeSolanaWallet(req.To)
		if err != nil {
			return nil, paywatch.Errorf(paywatch.EINVALID, "to: %s", paywatch.ErrorMessage(err))
		}
		amount, err := paywatch.ParseAmount(req.Amount, int(m.Decimals))
		if err != nil {
			return nil, err
		}
		units, err := amount.Rescale(int(m.Decimals))
		if err != nil {
			return nil, err
		}
		if built[i], err = c.build(to, req.Token, units.Units(), req.Memo); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !failed {
		spent := map[string]*big.Int{}
		for i, t := range built {
			if spent[t.src] == nil {
				spent[t.src] = new(big.Int)
			}
			if spent[t.src].Add(spent[t.src], t.units).Cmp(c.balances[t.src]) > 0 {
				return nil, paywatch.Errorf(paywatch.EINVALID, "transfer %d: insufficient balance", i+1)
			}
		}
	}
	slot := c.nextSlot()
	out := make([]TransferResult, len(built))
	for i, t := range built {
		tx, err := c.apply(t, slot, failed)
		if err != nil {
			return nil, err
		}
		out[i] = TransferResult{
			TxHash: tx.sig, BlockNumber: slot, Network: c.network, Token: t.mint.Token,
			From: c.faucet.PublicKey().String(), To: t.owner.String(),
			Amount: paywatch.NewAmount(t.units, int(t.mint.Decimals)).String(),
		}
	}
	return out, nil
}

// mine implements chain.
func (c *solanaChain) mine(ctx context.Context, count int) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range count {
		if err := ctx.Err(); err != nil {
			return c.slot, err
		}
		c.nextSlot()
	}
	return c.slot, nil
}

// reorg implements chain: it drops the newest depth unfinalized blocks
// (dropBlocks); with reinclude their transactions, the same signed ones,
// go again into one slot after the new fork's.
func (c *solanaChain) reorg(_ context.Context, depth int, reinclude bool) (uint64, []string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dropped, txs, err := c.dropBlocks(depth)
	if err != nil {
		return c.slot, nil, err
	}
	if reinclude && len(txs) > 0 {
		slot := c.nextSlot()
		for _, tx := range txs {
			tx.slot = slot
			if !tx.failed {
				for acct, d := range tx.deltas {
					if c.balances[acct] == nil {
						c.accounts[acct] = solanaAccount{owner: tx.transfer.owner.String(), mint: tx.transfer.mint}
						c.balances[acct] = new(big.Int)
					}
					c.balances[acct].Add(c.balances[acct], d)
				}
			}
			c.txs[tx.sig] = tx
			c.order = append(c.order, tx)
		}
	}
	return c.slot, dropped, nil
}

// finalizingBlock implements finalizer: slot height is finalized once
// solanaFinality blocks are made above it, so by the making of the
// solanaFinality-th made slot after it.
func (c *solanaChain) finalizingBlock(height uint64) (uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, _ := c.madeAt(height)
	if k := i + solanaFinality; k < len(c.made) {
		return c.made[k], true
	}
	return 0, false
}
