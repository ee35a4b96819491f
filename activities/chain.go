package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
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
// The blocks the network's scanner has already read come from PostgreSQL:
// it recorded every transfer there that concerns a watched payment. Only the
// blocks after its cursor are read from the chain, so the check costs a few
// RPC calls however long the payment's window was (Tron cannot filter by
// address: reading the whole window was about one call per block). Without
// a cursor, or with one below StartBlock, the chain is read from StartBlock.
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
	res := workflows.FinalCheckResult{Head: head}
	for _, t := range rec.Transfers {
		res.Transfers = append(res.Transfers, transferSeen(in.Network, chainTransfer(in.Network, t)))
	}
	from := in.StartBlock
	if rec.Scanned {
		from = max(from, rec.Height+1)
	}
	if from > head { // the scanner has read up to this node's head, or past it
		return res, nil
	}
	ts, err := c.AddressTransfers(ctx, addr, from)
	if err != nil {
		return workflows.FinalCheckResult{}, temporalError(err)
	}
	for _, t := range ts {
		if t.Token == in.Token && sameAddress(in.Network, t.To, addr) && t.BlockNumber >= from {
			res.Transfers = append(res.Transfers, transferSeen(in.Network, t))
		}
	}
	return res, nil
}

// VerifyTxHash looks a submitted transaction up (pool + txid). A
// transaction that is not on chain yet is Found false, a normal answer.
// Found transactions report their transfers of the payment's token to its
// address in blocks from StartBlock on; when there are none, Reason says why.
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
	for _, t := range ts {
		if t.Token != in.Token || !sameAddress(in.Network, t.To, in.Address) {
			continue
		}
		if t.BlockNumber < in.StartBlock {
			early = true
			continue
		}
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
func transferSeen(n paywatch.Network, t chains.Transfer) workflows.TransferSeen {
	return workflows.TransferSeen{
		TxHash:      t.TxHash,
		LogIndex:    t.LogIndex,
		BlockNumber: t.BlockNumber,
		BlockHash:   t.BlockHash,
		From:        t.From,
		Amount:      paywatch.NewAmount(t.Amount, paywatch.Decimals(n, t.Token)),
	}
}

// chainTransfer converts a recorded transfer back to the chain's form.
func chainTransfer(n paywatch.Network, t store.ChainTransfer) chains.Transfer {
	return chains.Transfer{
		Network: n, Token: t.Token, TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber,
		BlockHash: t.BlockHash, From: t.From, To: t.To, Amount: t.Amount,
	}
}

// sameAddress compares addresses in their normalised forms: EVM addresses
// case-insensitively (EIP-55 is only a checksum), Tron exactly.
func sameAddress(n paywatch.Network, a, b string) bool {
	if n.Family() == paywatch.FamilyEVM {
		return strings.EqualFold(a, b)
	}
	return a == b
}
