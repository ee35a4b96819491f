package devnet

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	sol "github.com/gagliardetto/solana-go"
)

// The devnet's blocks, for getBlock, getBlocks and getBlockTime: a made
// slot is a block whose hash is drawn from the genesis and the slot (a
// slot is never made twice: a reorg's new fork comes at slots above the
// dropped ones, as on mainnet), its parent the made slot before it.

// blockHash is the hash of the block at slot.
func (c *solanaChain) blockHash(slot uint64) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], slot)
	h := sha256.Sum256(append([]byte("paywatch devnet solana block "+c.genesis), b[:]...))
	return sol.HashFromBytes(h[:]).String()
}

// tipAt is the newest slot the commitment sees. Callers hold c.mu.
func (c *solanaChain) tipAt(commitment string) uint64 {
	if commitment == "finalized" {
		return c.finalized()
	}
	return c.slot
}

// madeAt returns slot's index in c.made. Callers hold c.mu.
func (c *solanaChain) madeAt(slot uint64) (int, bool) {
	return slices.BinarySearch(c.made, slot)
}

// slotParam reads the slot of params[0].
func slotParam(params []json.RawMessage) (uint64, *rpcErr) {
	var slot uint64
	if len(params) == 0 || json.Unmarshal(params[0], &slot) != nil {
		return 0, &rpcErr{-32602, "Invalid params: invalid type: expected u64"}
	}
	return slot, nil
}

// blockAt finds the block at slot as the commitment sees it, with agave's
// errors: -32004 above the commitment's newest slot, -32007 for a slot
// that holds no block. Callers hold c.mu.
func (c *solanaChain) blockAt(slot uint64, commitment string) (int, *rpcErr) {
	if commitment == "processed" {
		return 0, errCommitment
	}
	if slot > c.tipAt(commitment) {
		return 0, &rpcErr{-32004, fmt.Sprintf("Block not available for slot %d", slot)}
	}
	i, ok := c.madeAt(slot)
	if !ok {
		return 0, &rpcErr{-32007, fmt.Sprintf("Slot %d was skipped, or missing due to ledger jump to recent snapshot", slot)}
	}
	return i, nil
}

// block answers getBlock. Only transactionDetails "none" is served (what
// chains/solana asks: the hash, parent and time of a block), with
// mainnet's keys for it; rewards are left out when asked to be.
func (c *solanaChain) block(req rpcRequest) (any, *rpcErr) {
	slot, e := slotParam(req.Params)
	if e != nil {
		return nil, e
	}
	var opts struct {
		TransactionDetails string `json:"transactionDetails"`
		Rewards            *bool  `json:"rewards"`
	}
	if len(req.Params) > 1 {
		_ = json.Unmarshal(req.Params[1], &opts)
	}
	if opts.TransactionDetails != "none" {
		return nil, &rpcErr{-32602, "the paywatch devnet serves getBlock with transactionDetails none only"}
	}
	i, e := c.blockAt(slot, commitmentOf(req.Params, 1))
	if e != nil {
		return nil, e
	}
	parent, prevHash := uint64(0), c.genesis
	if i > 0 {
		parent, prevHash = c.made[i-1], c.blockHash(c.made[i-1])
	}
	out := map[string]any{
		"blockHeight": i + 1, "blockTime": c.times[slot], "blockhash": c.blockHash(slot),
		"parentSlot": parent, "previousBlockhash": prevHash,
	}
	if opts.Rewards == nil || *opts.Rewards {
		out["rewards"] = []any{}
	}
	return out, nil
}

// blocks answers getBlocks: the made slots in [start, end] (end: the
// commitment's newest slot when left out), at most 500,000 slots apart.
func (c *solanaChain) blocks(req rpcRequest) (any, *rpcErr) {
	start, e := slotParam(req.Params)
	if e != nil {
		return nil, e
	}
	commitment := "finalized"
	end := uint64(0)
	hasEnd := false
	if len(req.Params) > 1 {
		if json.Unmarshal(req.Params[1], &end) == nil {
			hasEnd = true
			commitment = commitmentOf(req.Params, 2)
		} else {
			commitment = commitmentOf(req.Params, 1)
		}
	}
	if commitment == "processed" {
		return nil, errCommitment
	}
	tip := c.tipAt(commitment)
	if !hasEnd || end > tip {
		end = tip
	}
	if end >= start && end-start > 500_000 {
		return nil, &rpcErr{-32602, fmt.Sprintf("Slot range too large; max %d", 500_000)}
	}
	out := []uint64{}
	for _, s := range c.made {
		if s >= start && s <= end {
			out = append(out, s)
		}
	}
	return out, nil
}

// blockTime answers getBlockTime.
func (c *solanaChain) blockTime(req rpcRequest) (any, *rpcErr) {
	slot, e := slotParam(req.Params)
	if e != nil {
		return nil, e
	}
	if _, e := c.blockAt(slot, "confirmed"); e != nil {
		return nil, e
	}
	return c.times[slot], nil
}
