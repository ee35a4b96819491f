package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	batch := s.BatchBlocks(st.network)
	if st.next+batch > st.head { // near the head: ask for a newer one
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
	n, err := s.record(ctx, st.network, ts, store.ScanBatch{Network: st.network, Height: to, BlockHash: hashTo, Head: st.head, Generation: st.gen, LagAllowance: allowance})
	if err != nil {
		return false, err
	}
	st.next, st.height, st.hash = to+1, to, hashTo
	st.progress.Height, st.progress.BlockHash = to, hashTo
	st.progress.Transfers += n
	return to == limit, nil
}

// ScanStats counts what ScanRange (or one batch of it) saw and did.
type ScanStats struct {
	// Transfers counts the token transfers in the range.
	Transfers int
	// Matched counts the transfers that concern watched payments.
	Matched int
	// Signals counts the signals sent.
	Signals int
}

// record matches, records and signals one batch; it returns how many
// transfers matched.
func (s *Scanner) record(ctx context.Context, n paywatch.Network, ts []chains.Transfer, b store.ScanBatch) (int, error) {
	res, err := s.recordBatch(ctx, n, ts, b)
	if res.Matched > 0 {
		s.log.Debug("transfers recorded", "network", n, "matched", res.Matched, "signals", res.Signals, "height", b.Height)
	}
	return res.Matched, err
}

// recordBatch is the batch path: one query matches the batch's distinct
// recipients against watched payments, then one transaction records the
// matching transfers with the payment each counts for (store.ClaimOwner:
// one payment per transfer, even on a shared pool address) and moves the
// cursor, signalling each transfer to that payment before it commits. A
// transfer is signalled under the key it was first recorded with, not the
// chain's log index of the moment: mined again at another index, it is
// still the transfer the payment knows.
func (s *Scanner) recordBatch(ctx context.Context, n paywatch.Network, ts []chains.Transfer, b store.ScanBatch) (ScanStats, error) {
	out := ScanStats{Transfers: len(ts)}
	if len(ts) > 0 {
		recipients := make([]string, 0, len(ts))
		hashes := make([]string, 0, len(ts))
		for _, t := range ts {
			recipients = append(recipients, t.To)
			hashes = append(hashes, t.TxHash)
		}
		slices.Sort(recipients)
		slices.Sort(hashes)
		watched, err := s.store.WatchedAddresses(ctx, n, slices.Compact(recipients), slices.Compact(hashes))
		if err != nil {
			return out, err
		}
		for _, t := range ts {
			st := t
			owner, ok := store.ClaimOwner(watched[t.To], st)
			if !ok {
				continue
			}
			out.Matched++
			b.Transfers = append(b.Transfers, st)
			b.Claims = append(b.Claims, store.TransferClaim{Transfer: st, PaymentID: owner})
		}
	}
	_, err := s.store.RecordScan(ctx, b, func(ctx context.Context, claimed []store.ClaimedTransfer) error {
		signals := make([]signal, 0, len(claimed))
		for _, c := range claimed {
			signals = append(signals, signal{c.PaymentID, workflows.SignalTransferSeen, transferSeen(n, c.Transfer)})
		}
		out.Signals = len(signals)
		return s.send(ctx, signals)
	})
	return out, err
}

// sameHash compares block hashes as nodes print them.
func sameHash(a, b string) bool { return strings.EqualFold(a, b) }
