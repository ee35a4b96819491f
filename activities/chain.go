package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"golang.org/x/sync/errgroup"

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
	// A chain that names its final block (SOLANA) gives a transfer above
	// it one confirmation short of the requirement, however deep.
	final := uint64(math.MaxUint64)
	if fr, ok := c.(chains.FinalityReader); ok {
		if final, err = fr.Finalized(ctx); err != nil {
			return workflows.CheckTransfersResult{}, temporalError(err)
		}
	}
	info, _ := paywatch.LookupNetwork(in.Network)
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
				if t.BlockNumber > final {
					chk.Confirmations = min(chk.Confirmations, info.Confirmations-1)
				} else if final != math.MaxUint64 {
					chk.Confirmations = min(chk.Confirmations, info.Confirmations)
				}
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
//
// A window can be long (a day on ARBITRUM is 345,600 blocks, 346
// eth_getLogs), so the chain is read in rounds of finalCheckParallel
// ranges in flight, with a heartbeat after each round whose details
// (FinalCheckProgress) are the blocks read so far and what they held: an
// attempt that dies (a timeout, a lost worker, a provider gone) is
// followed by one that resumes from its last heartbeat, so every attempt
// moves the check forward and a window of any length is read in the end.
//
// A StartBlock of 0 is unknown, never genesis (windowStart).
//
// With Until set (the close of a late window, issue 37) the window ends at
// the last block mined before Until (lastBlockBefore), and the check fails
// while the chain has no block at or after it. Only the blocks after the
// scanner's cursor are read from the chain, on every network: what the
// deadline's check read (ReadFrom) and what the scanner recorded are not
// read again. On TRC20 a scanner at work that has not reached the window's
// last block is waited for (the check fails with ErrTypeScannerBehind, and
// the workflow tries again a minute later), so an abandoned checkout costs
// a head and a few block-time reads rather than its window's blocks; a
// scanner that has recorded nothing for scannerAlive is not waited for,
// nor one the workflow has waited for long enough (NoWait).
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
	start := in.StartBlock
	if start == 0 {
		if start, err = a.windowStart(ctx, in, head); err != nil {
			return workflows.FinalCheckResult{}, temporalError(err)
		}
	}
	rec, err := a.store.RecordedTransfersTo(ctx, in.Network, in.Token, addr, start)
	if err != nil {
		return workflows.FinalCheckResult{}, temporalError(err)
	}
	// Blocks cost a call or more each where a client cannot filter by
	// recipient (TRC20), and the network's scanner, at work, reads them
	// anyway, once for every payment: the close of a late window waits for
	// it rather than read them again for each window that ends (issue 37),
	// unless the workflow has waited long enough (NoWait: a scanner that
	// moves but never catches up). On EVM networks the few blocks after the
	// cursor (an idle scanner keeps 128 behind the head) are one
	// eth_getLogs filtered by recipient.
	waitForScanner := !in.Until.IsZero() && !in.NoWait && in.Network.Family() != paywatch.FamilyEVM &&
		rec.Scanned && a.now().Sub(rec.RecordedAt) < scannerAlive
	if waitForScanner && rec.Height+1 < estimatedBlockAt(in.Network, a.blockTimes[in.Network], in.Until, a.now(), head) {
		// Surely behind: no block reads to say so.
		return workflows.FinalCheckResult{}, scannerBehind(in.Network, rec.Height, in.Until)
	}
	end := head
	if !in.Until.IsZero() {
		if end, err = a.lastBlockBefore(ctx, c, in.Until, start, head); err != nil {
			return workflows.FinalCheckResult{}, temporalError(err)
		}
	}
	if waitForScanner && rec.Height < end {
		return workflows.FinalCheckResult{}, scannerBehind(in.Network, rec.Height, in.Until)
	}
	var found []chains.Transfer
	for _, t := range rec.Transfers {
		if in.Until.IsZero() || t.BlockNumber <= end {
			found = append(found, t)
		}
	}
	from := max(start, in.ReadFrom)
	if rec.Scanned && (in.Network.Family() != paywatch.FamilyEVM || !in.Until.IsZero()) {
		from = max(from, rec.Height+1)
	}
	onChain, err := a.readWindow(ctx, c, in, addr, start, from, end)
	if err != nil {
		return workflows.FinalCheckResult{}, temporalError(err)
	}
	if onChain, err = a.store.IdentifyTransfers(ctx, in.Network, latestCopies(onChain)); err != nil {
		return workflows.FinalCheckResult{}, temporalError(err)
	}
	return a.finalCheckResult(ctx, in, head, mergeTransfers(found, onChain))
}

// FinalCheckProgress is the heartbeat detail of FinalCheck: the blocks of
// the window it has read from the chain, [From, Next), and the transfers
// to the address it found there. A retried attempt whose input names the
// same address and start block resumes at Next.
type FinalCheckProgress struct {
	Address    string
	Token      paywatch.Token
	StartBlock uint64
	From, Next uint64
	Found      []chains.Transfer
}

// Final check reading.
const (
	// finalCheckParallel is how many ranges of the window are read at
	// once: one eth_getLogs each (MaxBlockRange blocks) on EVM, one
	// GetBlockByLimitNext and its blocks' infos on Tron.
	finalCheckParallel = 4
	// finalCheckEVMRange and finalCheckTronRange are the blocks per range:
	// the clients' default eth_getLogs range, and Tron's batch maximum.
	finalCheckEVMRange  = 1000
	finalCheckTronRange = 100
	// maxHeartbeatTransfers bounds the transfers a heartbeat carries
	// (Temporal limits a payload's size): a window with more (a busy pool
	// address) heartbeats without them and is read again from its start by
	// a retried attempt.
	maxHeartbeatTransfers = 2000
	// startSlack is added to a payment's age when its start block is
	// estimated (windowStart): clocks and the head's caching differ.
	startSlack = 10 * time.Minute
)

// readWindow returns the token's transfers to addr in blocks [from, head]
// (start is the window's start block, which resumption checks), in rounds
// with a heartbeat after each, resuming from the heartbeat of an earlier
// attempt. A client that cannot read bounded ranges is asked once.
func (a *Activities) readWindow(ctx context.Context, c chains.Client, in workflows.FinalCheckInput, addr string, start, from, head uint64) ([]chains.Transfer, error) {
	keep := func(ts []chains.Transfer, lo uint64) []chains.Transfer {
		var out []chains.Transfer
		for _, t := range ts {
			if t.Token == in.Token && sameAddress(in.Network, t.To, addr) && t.BlockNumber >= lo {
				out = append(out, t)
			}
		}
		return out
	}
	if from > head { // the scanner has read up to this node's head, or past it
		return nil, nil
	}
	rr, ok := c.(chains.AddressRangeReader)
	if !ok {
		ts, err := c.AddressTransfers(ctx, addr, from)
		return keep(ts, from), err
	}
	p := FinalCheckProgress{Address: addr, Token: in.Token, StartBlock: start, From: from, Next: from}
	if prev, ok := resumedProgress(ctx); ok && prev.Address == addr && prev.Token == in.Token &&
		prev.StartBlock == start && prev.From <= from && prev.Next > from && prev.Next <= head+1 {
		p.From, p.Next, p.Found = prev.From, prev.Next, prev.Found
		a.log.InfoContext(ctx, "final check resumes", "network", in.Network, "address", addr, "from", p.From, "next", p.Next, "head", head)
	}
	size := uint64(finalCheckEVMRange)
	if in.Network.Family() == paywatch.FamilyTron {
		size = finalCheckTronRange
	}
	for p.Next <= head {
		var ranges [][2]uint64
		for lo := p.Next; lo <= head && len(ranges) < finalCheckParallel; lo += size {
			ranges = append(ranges, [2]uint64{lo, min(lo+size-1, head)})
		}
		got := make([][]chains.Transfer, len(ranges))
		g, gctx := errgroup.WithContext(ctx)
		for i, r := range ranges {
			g.Go(func() error {
				ts, err := rr.AddressTransfersIn(gctx, addr, r[0], r[1])
				got[i] = ts
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		for _, ts := range got {
			p.Found = append(p.Found, keep(ts, p.From)...)
		}
		p.Next = ranges[len(ranges)-1][1] + 1
		heartbeat(ctx, p)
	}
	return p.Found, nil
}

// resumedProgress returns the progress of the attempt before this one, if
// it heartbeated any.
func resumedProgress(ctx context.Context) (FinalCheckProgress, bool) {
	var p FinalCheckProgress
	if !activity.IsActivity(ctx) || !activity.HasHeartbeatDetails(ctx) {
		return p, false
	}
	if err := activity.GetHeartbeatDetails(ctx, &p); err != nil {
		return p, false
	}
	return p, p.Next > 0
}

// heartbeat records p as the activity's progress; outside an activity (a
// direct call) it does nothing.
func heartbeat(ctx context.Context, p FinalCheckProgress) {
	if !activity.IsActivity(ctx) {
		return
	}
	if len(p.Found) > maxHeartbeatTransfers {
		activity.RecordHeartbeat(ctx) // alive, but not resumable
		return
	}
	activity.RecordHeartbeat(ctx, p)
}

// windowStart returns the first block of the window of a payment whose
// start block is unknown (0): its address was assigned while the chain's
// head could not be read and no scanner had recorded a block, or before
// start blocks were recorded. Genesis would make the check read the whole
// chain and count any transfer ever made to a reused address; instead the
// window starts at the payment row's start block if it has one since, or
// else goes back from the head by twice the blocks the network makes in
// the time since the address was assigned (plus startSlack): a chain
// slower than its usual pace only widens the window, and it would have to
// run at twice its pace to leave a transfer of the payment out. Without a
// payment or its assignment time, the window is the scanner's longest
// look-back (maxLookback).
func (a *Activities) windowStart(ctx context.Context, in workflows.FinalCheckInput, head uint64) (uint64, error) {
	info, _ := paywatch.LookupNetwork(in.Network)
	blockTime := info.BlockTime
	if bt := a.blockTimes[in.Network]; bt > 0 {
		blockTime = bt
	}
	age := maxLookback
	if in.PaymentID != "" {
		p, err := a.store.PaymentByID(ctx, in.PaymentID)
		switch {
		case paywatch.ErrorCode(err) == paywatch.ENOTFOUND: // the longest look-back
		case err != nil:
			return 0, err
		case p.StartBlock > 0:
			return p.StartBlock, nil
		case p.AddressAssignedAt != nil:
			age = 2 * (max(a.now().Sub(*p.AddressAssignedAt), 0) + startSlack)
		}
	}
	back := uint64(age / max(blockTime, time.Millisecond))
	if back >= head {
		return 1, nil // genesis holds no token transfers
	}
	return head - back, nil
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
// latestCopies keeps, of each transaction, only its transfers in the
// highest block they were read in. A window read in rounds (or resumed
// from an earlier attempt's heartbeat) can meet a transaction twice when a
// reorg mined it again in a later range meanwhile; identified as two, its
// transfer would take a second key (store.IdentifyTransfers), which a
// shared address could give to another payment. The copy kept is checked
// like any other: the confirmation check drops it if its block is not
// canonical.
func latestCopies(ts []chains.Transfer) []chains.Transfer {
	top := map[string]uint64{}
	for _, t := range ts {
		top[t.TxHash] = max(top[t.TxHash], t.BlockNumber)
	}
	out := ts[:0:0]
	for _, t := range ts {
		if t.BlockNumber == top[t.TxHash] {
			out = append(out, t)
		}
	}
	return out
}

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
