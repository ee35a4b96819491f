package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// errInconsistent means a batch's reads disagree: the chain changed while
// it was read. The next poll reads it again.
var errInconsistent = errors.New("chain changed while the batch was read")

// step scans the next batch: blocks [next, min(next+batch−1, head)].
func (s *Scanner) step(ctx context.Context, st *scan) (caughtUp bool, err error) {
	fresh := false // st.head was just read
	if tr, ok := st.client.(chains.TipReader); ok && !st.idle && st.hash != "" && st.next > st.head {
		var done bool
		if caughtUp, done, err = s.tip(ctx, st, tr); done || err != nil {
			return caughtUp, err
		}
		fresh = true
	}
	batch := s.BatchBlocks(st.network)
	if !fresh && st.next+batch > st.head { // near the head: ask for a newer one
		head, err := st.client.Head(ctx)
		if err != nil {
			return false, err
		}
		st.head = head
		st.progress.Head = head
	}
	limit, allowance := st.head, uint64(0)
	if st.idle && st.info.Family == paywatch.FamilyEVM {
		// Nothing waits: stay out of the blocks near the head, whose
		// completeness check costs a header read each; they are read
		// as soon as something waits, and in later idle polls.
		limit = st.head - min(st.head, chains.RecentBlocks)
		allowance = chains.RecentBlocks
	}
	if st.next > limit {
		return true, nil
	}
	to := min(st.next+batch-1, limit)
	// One read gives the hash of the batch's last block, then its
	// transfers, then the hash of the cursor's block (chains.ReadBatch): if
	// a reorg replaces the last block after its hash was read, the next
	// batch sees the new hash at this height and goes back. A batch the
	// client cannot vouch was read fully (chains.ErrIncompleteRead: a log
	// index lagging behind the head) fails like an inconsistent one: the
	// cursor stays, and the next poll reads it again.
	q := chains.BatchQuery{From: st.next, To: to, Head: st.head}
	if st.hash != "" && st.height > 0 {
		q.Cursor = st.height
	}
	if ar, ok := st.client.(chains.AccountReader); ok {
		if q.Accounts, err = s.accounts(ctx, st, ar); err != nil {
			return false, err
		}
	}
	b, err := chains.ReadBatch(ctx, st.client, q)
	if errors.Is(err, chains.ErrBlockNotFound) {
		// A node behind its own head (load-balanced providers), or a
		// shorter branch that will grow: wait.
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if q.Cursor > 0 && !sameHash(b.CursorHash, st.hash) {
		return false, s.reorg(ctx, st)
	}
	ts, hashTo := b.Transfers, b.Hash
	for _, t := range ts {
		if t.BlockNumber == to && !sameHash(t.BlockHash, hashTo) {
			return false, fmt.Errorf("block %d: %w", to, errInconsistent)
		}
	}
	sb := store.ScanBatch{Network: st.network, Height: to, BlockHash: hashTo, Head: st.head, Generation: st.gen, LagAllowance: allowance}
	for _, a := range b.Accounts {
		sb.Accounts = append(sb.Accounts, store.AccountCursor(a))
	}
	if err := s.record(ctx, st, ts, sb); err != nil {
		return false, err
	}
	st.next, st.height, st.hash = to+1, to, hashTo
	st.progress.Height, st.progress.BlockHash = to, hashTo
	return to == limit, nil
}

// accounts lists the accounts an AccountReader reads (SOLANA: every
// token account of every address a project owns or owned on the network,
// so that money no payment takes is reported too) with their cursors.
func (s *Scanner) accounts(ctx context.Context, st *scan, ar chains.AccountReader) ([]chains.AccountCursor, error) {
	owners, err := s.store.WatchedOwners(ctx, st.network)
	if err != nil {
		return nil, err
	}
	accts, err := ar.Accounts(owners)
	if err != nil {
		return nil, err
	}
	cursors, err := s.store.AccountCursors(ctx, st.network)
	if err != nil {
		return nil, err
	}
	for i, a := range accts {
		if c, ok := cursors[a.Account]; ok {
			accts[i].Signature, accts[i].Slot, accts[i].Through = c.Signature, c.Slot, c.Through
		}
	}
	return accts, nil
}

// load takes the network's scan lease, then positions the scan at the
// stored cursor, or, for a network never scanned, at the head or the
// earliest watched payment's start block. The cursor is read after the
// lease is taken, so no older scan moves it afterwards.
func (s *Scanner) load(ctx context.Context, st *scan) error {
	if st.gen == 0 {
		gen, err := s.store.AcquireScanLease(ctx, st.network)
		if err != nil {
			return err
		}
		st.gen = gen
	}
	cur, ok, err := s.store.ChainCursor(ctx, st.network)
	if err != nil {
		return err
	}
	if ok {
		st.height, st.next, st.hash, st.head = cur.Height, cur.Height+1, cur.BlockHash, cur.Head
		st.log.Debug("scan resumes", "height", cur.Height)
	} else {
		head, err := st.client.Head(ctx)
		if err != nil {
			return err
		}
		start := head
		if earliest, ok, err := s.store.EarliestWatchedBlock(ctx, st.network); err != nil {
			return err
		} else if ok && earliest < start {
			// No watched payment is older than its longest window plus the
			// late window: look back no further than that.
			lookback := uint64(maxLookback / st.info.BlockTime)
			start = max(earliest, head-min(head, lookback))
		}
		start = max(start, 1) // genesis holds no token transfers
		hash, err := st.client.BlockHash(ctx, start-1)
		if err != nil {
			return err
		}
		// Store the starting point at once: payments created from now on
		// take it as their start block, and a restart resumes here.
		if _, err := s.store.RecordScan(ctx, store.ScanBatch{Network: st.network, Height: start - 1, BlockHash: hash, Head: head, Generation: st.gen}, nil); err != nil {
			return err
		}
		st.next, st.height, st.hash, st.head = start, start-1, hash, head
		st.log.Info("scan starts", "from", start, "head", head)
	}
	st.loaded = true
	st.progress.Height, st.progress.BlockHash, st.progress.Head = st.height, st.hash, st.head
	return nil
}

// tip reads the block after the cursor of a scan at the head, while
// payments wait (chains.TipReader: about one request per block where a
// batch costs three or four). The block counts if its parent is the
// cursor's block; otherwise the chain reorganised, and the scan goes back
// as for a batch. done is false when the node's head is past the block
// (a burst, or a node that has the head but not yet the block): a batch
// then reads on from the cursor, with the head just read.
func (s *Scanner) tip(ctx context.Context, st *scan, tr chains.TipReader) (caughtUp, done bool, err error) {
	t, err := tr.ReadTip(ctx, st.next)
	if err != nil {
		return false, true, err
	}
	st.head, st.progress.Head = t.Head, t.Head
	if !t.Found {
		return true, t.Head < st.next, nil
	}
	if !sameHash(t.ParentHash, st.hash) {
		return false, true, s.reorg(ctx, st)
	}
	for _, tr := range t.Transfers {
		if tr.BlockNumber != st.next || !sameHash(tr.BlockHash, t.Hash) {
			return false, true, fmt.Errorf("block %d: a transfer of block %d %s: %w", st.next, tr.BlockNumber, tr.BlockHash, errInconsistent)
		}
	}
	if err := s.record(ctx, st, t.Transfers, store.ScanBatch{Network: st.network, Height: st.next, BlockHash: t.Hash, Head: t.Head, Generation: st.gen}); err != nil {
		return false, true, err
	}
	st.next, st.height, st.hash = st.next+1, st.next, t.Hash
	st.progress.Height, st.progress.BlockHash = st.height, t.Hash
	return st.height >= t.Head, true, nil
}

// ScanStats counts what ScanRange (or one batch of it) saw and did.
type ScanStats struct {
	// Transfers counts the token transfers in the range.
	Transfers int
	// Matched counts the transfers that concern watched payments.
	Matched int
	// Signals counts the signals sent.
	Signals int
	// Deepest is the lowest block of the matched transfers; 0 without.
	Deepest uint64
}

// record matches, records and signals one batch. A transfer that already
// has its network's confirmations at the batch's head (a batch that read a
// burst of blocks: a node catching up, a provider's lag clearing) is
// signalled seen with its depth, which the payment takes as its
// confirmation in the block the batch read (one signal, not two: each is a
// billable Action on Temporal Cloud); and it opens the scan's
// confirmation window, in case the payment did not take it: the payment
// awaits the confirmation as soon as its workflow has saved the transfer,
// and the scanner looks for that between polls (sleepConfirming) rather
// than at its next poll. On a network whose depth is not finality
// (chains.FinalityReader) the confirmation pass asks instead.
func (s *Scanner) record(ctx context.Context, st *scan, ts []chains.Transfer, b store.ScanBatch) error {
	required := uint64(max(st.info.Confirmations, 1))
	if _, ok := st.client.(chains.FinalityReader); ok {
		required = 0
	}
	res, err := s.recordBatch(ctx, st.network, ts, b, required)
	if res.Matched > 0 {
		s.log.Debug("transfers recorded", "network", st.network, "matched", res.Matched, "signals", res.Signals, "height", b.Height)
	}
	if err != nil {
		return err
	}
	st.progress.Transfers += res.Matched
	if res.Deepest > 0 && res.Deepest+uint64(max(st.info.Confirmations, 1)) <= b.Head+1 {
		st.confirmSoon = time.Now().Add(confirmWindow)
	}
	return nil
}

// recordBatch is the batch path: one query matches the batch's distinct
// recipients against watched payments, then one transaction records the
// matching transfers with the payment each counts for (store.ClaimOwner:
// one payment per transfer, even on a shared pool address) and moves the
// cursor, signalling each transfer to that payment before it commits. A
// transfer is signalled under the key it was first recorded with, not the
// chain's log index of the moment: mined again at another index, it is
// still the transfer the payment knows.
//
// A transfer whose block has required confirmations at the batch's head
// (required 0: never) is signalled with its depth (Confirmations), in the
// block whose hash the batch checked, so canonical as the confirmation
// pass would find it.
func (s *Scanner) recordBatch(ctx context.Context, n paywatch.Network, ts []chains.Transfer, b store.ScanBatch, required uint64) (ScanStats, error) {
	out := ScanStats{Transfers: len(ts)}
	if len(ts) > 0 {
		recipients := make([]string, 0, len(ts))
		hashes := make([]string, 0, len(ts))
		var memos []string
		for _, t := range ts {
			recipients = append(recipients, t.To)
			hashes = append(hashes, t.TxHash)
			memos = append(memos, t.Memos...)
		}
		slices.Sort(recipients)
		slices.Sort(hashes)
		slices.Sort(memos)
		watched, err := s.store.WatchedAddresses(ctx, n, slices.Compact(recipients), slices.Compact(hashes), slices.Compact(memos))
		if err != nil {
			return out, err
		}
		var rest []chains.Transfer
		for _, t := range ts {
			st := t
			owner, ok := store.ClaimOwner(watched[t.To], st)
			if !ok {
				rest = append(rest, t)
				continue
			}
			out.Matched++
			if out.Deepest == 0 || st.BlockNumber < out.Deepest {
				out.Deepest = st.BlockNumber
			}
			b.Transfers = append(b.Transfers, st)
			b.Claims = append(b.Claims, store.TransferClaim{Transfer: st, PaymentID: owner})
		}
		// The others are recorded too, without a payment, when they go to an
		// address a project owns: funds nobody counted (store.ProjectTransfers).
		if len(rest) > 0 {
			others := make([]string, 0, len(rest))
			for _, t := range rest {
				others = append(others, t.To)
			}
			slices.Sort(others)
			owned, err := s.store.OwnedAddresses(ctx, n, slices.Compact(others))
			if err != nil {
				return out, err
			}
			for _, t := range rest {
				if owned[t.To] {
					b.Transfers = append(b.Transfers, t)
				}
			}
		}
	}
	_, err := s.store.RecordScan(ctx, b, func(ctx context.Context, claimed []store.ClaimedTransfer) error {
		signals := make([]signal, 0, len(claimed))
		for _, c := range claimed {
			seen := transferSeen(n, c.Transfer)
			if t := c.Transfer; required > 0 && t.BlockNumber+required <= b.Head+1 {
				seen.Confirmations = int(b.Head - t.BlockNumber + 1)
			}
			signals = append(signals, signal{c.PaymentID, workflows.SignalTransferSeen, seen})
		}
		out.Signals = len(signals)
		if err := s.send(ctx, signals); err != nil {
			return err
		}
		return nil
	})
	return out, err
}

// sameHash compares block hashes as nodes print them.
func sameHash(a, b string) bool { return strings.EqualFold(a, b) }
