package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/workflows"
)

// client returns the chain client of network n.
func (a *Activities) client(n paywatch.Network) (chains.Client, error) {
	if a.chains == nil {
		return nil, fmt.Errorf("no chain access configured")
	}
	c, err := a.chains.Client(n)
	if err != nil {
		return nil, fmt.Errorf("chain client for %s: %w", n, err)
	}
	return c, nil
}

// CheckTransfers counts each transfer's confirmations (head − block + 1)
// and checks that its block is still canonical (the block hash at its
// height is unchanged). A block above the head (a lagging node) gives 0
// confirmations without declaring the transfer gone.
func (a *Activities) CheckTransfers(ctx context.Context, in workflows.CheckTransfersInput) (workflows.CheckTransfersResult, error) {
	c, err := a.client(in.Network)
	if err != nil {
		return workflows.CheckTransfersResult{}, err
	}
	head, err := c.Head(ctx)
	if err != nil {
		return workflows.CheckTransfersResult{}, temporalError(err)
	}
	res := workflows.CheckTransfersResult{Head: head, BlockTime: a.blockTimes[in.Network]}
	hashes := map[uint64]string{}
	for _, t := range in.Transfers {
		chk := workflows.TransferCheck{TxHash: t.TxHash, LogIndex: t.LogIndex, Canonical: true}
		if t.BlockNumber <= head {
			h, ok := hashes[t.BlockNumber]
			if !ok {
				h, err = c.BlockHash(ctx, t.BlockNumber)
				switch {
				case errors.Is(err, chains.ErrBlockNotFound):
					h = ""
				case err != nil:
					return workflows.CheckTransfersResult{}, temporalError(err)
				}
				hashes[t.BlockNumber] = h
			}
			if h != "" {
				chk.Canonical = strings.EqualFold(h, t.BlockHash)
				chk.Confirmations = int(head - t.BlockNumber + 1)
			}
		}
		res.Transfers = append(res.Transfers, chk)
	}
	return res, nil
}

// FinalCheck lists the token's transfers to the payment's address since
// its StartBlock, for the one last on-chain look before a payment expires.
//
// It asks the chain itself, not only the scanner's records: on EVM
// networks one eth_getLogs per MaxBlockRange blocks filtered by recipient
// covers the whole window [StartBlock, head], so a transfer the records lack
// (a block whose logs a lagging provider left out, a record lost) is still
// found; the recorded transfers of the window are added to what the chain
// returned, the chain's version winning for a transfer in both. Tron cannot
// filter by address (reading a window costs about one call per block), so
// there the blocks the network's scanner has read come from PostgreSQL,
// where it recorded every transfer that concerns a watched payment, and
// only the blocks after its cursor are read from the chain. Without a
// cursor, or with one below StartBlock, the chain is read from StartBlock.
// What the chain returned takes the keys it is recorded under
// (store.IdentifyTransfers) before it meets the records: a transfer mined
// again at another log index is the recorded one, not a second.
func (a *Activities) FinalCheck(ctx context.Context, in workflows.FinalCheckInput) (workflows.FinalCheckResult, error) {
	c, err := a.client(in.Network)
	if err != nil {
		return workflows.FinalCheckResult{}, err
	}
	addr, err := paywatch.NormalizeAddress(in.Network.Family(), in.Address)
	if err != nil {
		return workflows.FinalCheckResult{}, temporalError(err)
	}
	head, err := c.Head(ctx)
	if err != nil {
		return workflows.FinalCheckResult{}, temporalError(err)
	}
	rec, err := a.store.RecordedTransfersTo(ctx, in.Network, in.Token, addr, in.StartBlock)
	if err != nil {
		return workflows.FinalCheckResult{}, temporalError(err)
	}
	var found []chains.Transfer
	for _, t := range rec.Transfers {
		found = append(found, t)
	}
	from := in.StartBlock
	if rec.Scanned && in.Network.Family() != paywatch.FamilyEVM {
		from = max(from, rec.Height+1)
	}
	if from <= head { // else the scanner has read up to this node's head, or past it
		ts, err := c.AddressTransfers(ctx, addr, from)
		if err != nil {
			return workflows.FinalCheckResult{}, temporalError(err)
		}
		var onChain []chains.Transfer
		for _, t := range ts {
			if t.Token == in.Token && sameAddress(in.Network, t.To, addr) && t.BlockNumber >= from {
				onChain = append(onChain, t)
			}
		}
		if onChain, err = a.store.IdentifyTransfers(ctx, in.Network, onChain); err != nil {
			return workflows.FinalCheckResult{}, temporalError(err)
		}
		found = mergeTransfers(found, onChain)
	}
	return a.finalCheckResult(ctx, in, head, found)
}

// finalCheckResult keeps the transfers found that count for the payment
// (ownTransfers): on a shared pool address a transfer another payment
// claimed, or one nearer another payment's amount, is not this payment's.
func (a *Activities) finalCheckResult(ctx context.Context, in workflows.FinalCheckInput, head uint64, found []chains.Transfer) (workflows.FinalCheckResult, error) {
	if in.PaymentID != "" {
		var err error
		if found, err = a.ownTransfers(ctx, in.Network, in.PaymentID, found); err != nil {
			return workflows.FinalCheckResult{}, temporalError(err)
		}
	}
	res := workflows.FinalCheckResult{Head: head}
	for _, t := range found {
		res.Transfers = append(res.Transfers, transferSeen(in.Network, t))
	}
	return res, nil
}

// VerifyTxHash looks a submitted transaction up (pool + txid). A
// transaction that is not on chain yet is Found false, a normal answer.
// Found transactions report their transfers of the payment's token to its
// address in blocks from StartBlock on, under the keys they are recorded
// with (store.IdentifyTransfers), which the scanner signals them under
// too; when there are none, Reason says why.
func (a *Activities) VerifyTxHash(ctx context.Context, in workflows.VerifyTxHashInput) (workflows.VerifyTxHashResult, error) {
	c, err := a.client(in.Network)
	if err != nil {
		return workflows.VerifyTxHashResult{}, err
	}
	ts, found, err := c.TransactionTransfers(ctx, in.TxHash)
	if err != nil {
		return workflows.VerifyTxHashResult{}, temporalError(err)
	}
	if !found {
		return workflows.VerifyTxHashResult{Found: false}, nil
	}
	res := workflows.VerifyTxHashResult{Found: true}
	early := false
	var mine []chains.Transfer
	for _, t := range ts {
		if t.Token != in.Token || !sameAddress(in.Network, t.To, in.Address) {
			continue
		}
		if t.BlockNumber < in.StartBlock {
			early = true
			continue
		}
		mine = append(mine, t)
	}
	if mine, err = a.store.IdentifyTransfers(ctx, in.Network, mine); err != nil {
		return workflows.VerifyTxHashResult{}, temporalError(err)
	}
	for _, t := range mine {
		res.Transfers = append(res.Transfers, transferSeen(in.Network, t))
	}
	if len(res.Transfers) == 0 {
		res.Reason = fmt.Sprintf("Transaction does not transfer %s to this payment's address on %s", in.Token, in.Network)
		if early {
			res.Reason = "Transaction was sent before this payment's address was assigned"
		}
	}
	return res, nil
}

// transferSeen converts a chain transfer to the workflow's form, with the
// amount at the token's decimals.
func transferSeen(n paywatch.Network, t chains.Transfer) paywatch.Transaction {
	return paywatch.Transaction{
		TxHash:      t.TxHash,
		LogIndex:    t.LogIndex,
		BlockNumber: t.BlockNumber,
		BlockHash:   t.BlockHash,
		From:        t.From,
		Amount:      paywatch.NewAmount(t.Amount, paywatch.Decimals(n, t.Token)),
	}
}

// mergeTransfers adds the transfers read from the chain, under their
// recorded keys, to the recorded ones: a transfer in both (same transaction
// and key) takes the chain's block, which is the canonical one now. The
// result is in block order.
func mergeTransfers(recorded, onChain []chains.Transfer) []chains.Transfer {
	type key struct {
		tx  string
		log uint32
	}
	at := make(map[key]int, len(recorded))
	out := slices.Clone(recorded)
	for i, t := range out {
		at[key{strings.ToLower(t.TxHash), t.LogIndex}] = i
	}
	for _, t := range onChain {
		if i, ok := at[key{strings.ToLower(t.TxHash), t.LogIndex}]; ok {
			out[i] = t
			continue
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b chains.Transfer) int {
		return cmp.Or(cmp.Compare(a.BlockNumber, b.BlockNumber), cmp.Compare(a.LogIndex, b.LogIndex))
	})
	return out
}

// sameAddress compares addresses in their normalised forms: EVM addresses
// case-insensitively (EIP-55 is only a checksum), Tron exactly.
func sameAddress(n paywatch.Network, a, b string) bool {
	if n.Family() == paywatch.FamilyEVM {
		return strings.EqualFold(a, b)
	}
	return a == b
}
