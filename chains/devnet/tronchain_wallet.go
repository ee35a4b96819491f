package devnet

import (
	"context"
	"encoding/binary"

	"github.com/ethereum/go-ethereum/common"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/api"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/core"
)

// block returns block n, or nil. Callers hold mu.
func (c *tronChain) block(n int64) *tronBlock {
	if n < 0 || n >= int64(len(c.blocks)) {
		return nil
	}
	return c.blocks[n]
}

// extension returns b as the Wallet API's BlockExtention.
func (b *tronBlock) extension() *api.BlockExtention {
	ext := &api.BlockExtention{BlockHeader: b.header, Blockid: b.id[:]}
	for _, tx := range b.txs {
		ext.Transactions = append(ext.Transactions, &api.TransactionExtention{
			Transaction: tx.tx,
			Txid:        tx.id[:],
			Result:      &api.Return{Result: true},
		})
	}
	return ext
}

// plain returns b as a core.Block (the Wallet API's older calls).
func (b *tronBlock) plain() *core.Block {
	out := &core.Block{BlockHeader: b.header}
	for _, tx := range b.txs {
		out.Transactions = append(out.Transactions, tx.tx)
	}
	return out
}

// txInfo returns tx's TransactionInfo as java-tron reports a TRC20 transfer
// mined in block b: Result SUCESS and Receipt.Result SUCCESS, or for a
// failed one FAILED and REVERT (keeping the log, see Devnet.TransferFailed).
func (c *tronChain) txInfo(tx *tronTx, b *tronBlock) *core.TransactionInfo {
	ret := make([]byte, 32)
	ret[31] = 1
	info := &core.TransactionInfo{
		Id:              tx.id[:],
		Fee:             0,
		BlockNumber:     int64(b.num),
		BlockTimeStamp:  b.header.RawData.Timestamp,
		ContractResult:  [][]byte{ret},
		ContractAddress: tronAddress(c.contract),
		Receipt: &core.ResourceReceipt{
			EnergyUsage:      tronTransferEnergy,
			EnergyUsageTotal: tronTransferEnergy,
			NetUsage:         tronTransferNet,
			Result:           core.Transaction_Result_SUCCESS,
		},
		Log: []*core.TransactionInfo_Log{{
			Address: c.contract.Bytes(),
			Topics: [][]byte{
				tronTransferTopic,
				common.LeftPadBytes(tx.from.Bytes(), 32),
				common.LeftPadBytes(tx.to.Bytes(), 32),
			},
			Data: common.LeftPadBytes(tx.amount.Bytes(), 32),
		}},
		Result: core.TransactionInfo_SUCESS,
	}
	if tx.failed {
		info.Result = core.TransactionInfo_FAILED
		info.ResMessage = []byte("REVERT opcode executed")
		info.Receipt.Result = core.Transaction_Result_REVERT
		info.ContractResult = [][]byte{{}}
	}
	return info
}

// GetNowBlock2 returns the newest block.
func (c *tronChain) GetNowBlock2(context.Context, *api.EmptyMessage) (*api.BlockExtention, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.head().extension(), nil
}

// GetNowBlock returns the newest block (the Wallet API's older call).
func (c *tronChain) GetNowBlock(context.Context, *api.EmptyMessage) (*core.Block, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.head().plain(), nil
}

// GetBlockByNum2 returns block n, or an empty message if there is none.
func (c *tronChain) GetBlockByNum2(_ context.Context, m *api.NumberMessage) (*api.BlockExtention, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if b := c.block(m.GetNum()); b != nil {
		return b.extension(), nil
	}
	return &api.BlockExtention{}, nil
}

// GetBlockByNum returns block n, or an empty message if there is none.
func (c *tronChain) GetBlockByNum(_ context.Context, m *api.NumberMessage) (*core.Block, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if b := c.block(m.GetNum()); b != nil {
		return b.plain(), nil
	}
	return &core.Block{}, nil
}

// GetBlockById returns the block with the given id, or an empty message.
func (c *tronChain) GetBlockById(_ context.Context, m *api.BytesMessage) (*core.Block, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(m.GetValue()) == 32 {
		n := binary.BigEndian.Uint64(m.GetValue()[:8])
		if b := c.block(int64(n)); b != nil && string(b.id[:]) == string(m.GetValue()) {
			return b.plain(), nil
		}
	}
	return &core.Block{}, nil
}

// limitNext returns blocks [start, end) as java-tron does: nothing unless
// 0 < end - start <= 100, and only the blocks that exist.
func (c *tronChain) limitNext(m *api.BlockLimit) []*tronBlock {
	start, end := m.GetStartNum(), m.GetEndNum()
	if start < 0 || end <= start || end-start > tronBlockLimit {
		return nil
	}
	var out []*tronBlock
	for n := start; n < end; n++ {
		b := c.block(n)
		if b == nil {
			break
		}
		out = append(out, b)
	}
	return out
}

// GetBlockByLimitNext2 returns blocks [start, end), at most 100.
func (c *tronChain) GetBlockByLimitNext2(_ context.Context, m *api.BlockLimit) (*api.BlockListExtention, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := &api.BlockListExtention{}
	for _, b := range c.limitNext(m) {
		out.Block = append(out.Block, b.extension())
	}
	return out, nil
}

// GetBlockByLimitNext returns blocks [start, end), at most 100.
func (c *tronChain) GetBlockByLimitNext(_ context.Context, m *api.BlockLimit) (*api.BlockList, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := &api.BlockList{}
	for _, b := range c.limitNext(m) {
		out.Block = append(out.Block, b.plain())
	}
	return out, nil
}

// GetBlockByLatestNum2 returns the newest num blocks (0 < num < 100), as
// java-tron does.
func (c *tronChain) GetBlockByLatestNum2(_ context.Context, m *api.NumberMessage) (*api.BlockListExtention, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := &api.BlockListExtention{}
	num := m.GetNum()
	if num <= 0 || num >= tronBlockLimit {
		return out, nil
	}
	for n := max(int64(len(c.blocks))-num, 0); n < int64(len(c.blocks)); n++ {
		out.Block = append(out.Block, c.blocks[n].extension())
	}
	return out, nil
}

// lookup returns the transaction with id v and its block, or nils.
func (c *tronChain) lookup(v []byte) (*tronTx, *tronBlock) {
	if len(v) != 32 {
		return nil, nil
	}
	id := [32]byte(v)
	tx, ok := c.txs[id]
	if !ok {
		return nil, nil
	}
	return tx, c.blocks[c.txBlock[id]]
}

// GetTransactionById returns a transaction, or an empty message.
func (c *tronChain) GetTransactionById(_ context.Context, m *api.BytesMessage) (*core.Transaction, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if tx, _ := c.lookup(m.GetValue()); tx != nil {
		return tx.tx, nil
	}
	return &core.Transaction{}, nil
}

// GetTransactionInfoById returns a transaction's info, or an empty message
// (which gotron-sdk's client reports as "transaction info not found").
func (c *tronChain) GetTransactionInfoById(_ context.Context, m *api.BytesMessage) (*core.TransactionInfo, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if tx, b := c.lookup(m.GetValue()); tx != nil {
		return c.txInfo(tx, b), nil
	}
	return &core.TransactionInfo{}, nil
}

// GetTransactionInfoByBlockNum returns the infos of block n's
// transactions, in block order; an empty list for an unknown block.
func (c *tronChain) GetTransactionInfoByBlockNum(_ context.Context, m *api.NumberMessage) (*api.TransactionInfoList, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := &api.TransactionInfoList{}
	if b := c.block(m.GetNum()); b != nil {
		for _, tx := range b.txs {
			out.TransactionInfo = append(out.TransactionInfo, c.txInfo(tx, b))
		}
	}
	return out, nil
}
