package activities

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// Bounds of one poll's confirmation pass; what is left is due again at the
// next poll, so a backlog (after downtime) drains over a few polls instead
// of one pass outgrowing its budget and starting over every time.
const (
	// dueConfirmationsPerPoll is the most awaited transfers one pass reads.
	dueConfirmationsPerPoll = 200
	// dueBlocksPerPoll is the most distinct blocks one pass checks.
	dueBlocksPerPoll = 32
	// confirmTimeout bounds one pass.
	confirmTimeout = 20 * time.Second
	// confirmWindow is how long after a batch that read transfers already
	// confirmed the scan looks for their rows every confirmStep between
	// polls: the workflow saves them within milliseconds once it has the
	// signal, and each look is one indexed query (RPC only for rows due).
	confirmWindow = 5 * time.Second
	confirmStep   = 50 * time.Millisecond
)

// sleepConfirming waits d like sleep, but while the scan's confirmation
// window is open it runs the confirmation pass every confirmStep: a
// transfer a burst of blocks brought with its confirmations is then
// confirmed as soon as its payment awaits it, not a poll later (issue 26,
// item 5: 1.7 s behind the confirming block). The window stays open its
// whole length, for every payment the burst paid, unless a pass fails or
// leaves rows due: those wait for the next poll.
func (s *Scanner) sleepConfirming(ctx context.Context, st *scan, d time.Duration, beat func()) error {
	end := time.Now().Add(d)
	for time.Now().Before(st.confirmSoon) {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if err := sleep(ctx, min(left, confirmStep), beat); err != nil {
			return err
		}
		if !s.confirmDue(ctx, st) {
			// A pass that failed, or left rows due (a block the node
			// does not have): the next poll tries again, not every step.
			st.confirmSoon = time.Time{}
		}
		beat()
	}
	return sleep(ctx, time.Until(end), beat)
}

// confirmDue runs the confirmation pass of a poll (confirm) on its own
// budget. A failure is logged, not returned: the batch the poll read is
// recorded either way, and the rows stay due for the next poll.
// It reports whether the pass signalled every row that was due.
func (s *Scanner) confirmDue(ctx context.Context, st *scan) (clean bool) {
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	skipped, err := s.confirm(ctx, st)
	switch {
	case err == nil:
		st.confirmFails = 0
	case errors.Is(err, context.Canceled):
	default:
		// Log the first failure in a row, then every tenth.
		if st.confirmFails++; st.confirmFails%10 == 1 {
			st.log.Warn("pushing confirmations failed; trying again at the next poll",
				"head", st.head, "failures", st.confirmFails, "error", err)
		}
	}
	return err == nil && skipped == 0
}

// confirm signals the payments whose awaited transfers have the network's
// confirmations at the head the scan saw (store.DueConfirmations): the
// transfer's block is at most head − confirmations + 1. Each distinct block
// is checked against the chain first, and each payment gets one signal
// with all its transfers that are due (one block-hash call per block, and
// none at all on a poll with nothing due): a transfer whose block is still
// canonical is signalled confirmed, one whose block was replaced is
// signalled as having left the chain. A row is marked once its signal was
// delivered, or its workflow has ended (NotFound: unlike a transfer just
// seen, an awaited one belongs to a workflow that has run). A block above a
// node's own head (a lagging provider) waits for the next poll.
//
// The payment workflow counts the signal only for the transfer in the block
// it names, so a row read just before the workflow saw the transfer mined
// again cannot confirm the new block early.
func (s *Scanner) confirm(ctx context.Context, st *scan) (skipped int, err error) {
	required := uint64(max(st.info.Confirmations, 1))
	if st.head < required {
		return 0, nil
	}
	due, err := s.store.DueConfirmations(ctx, st.network, st.head-required+1, dueConfirmationsPerPoll)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	// On a chain that names its final block (SOLANA), a transfer deep
	// enough waits until its block is final: one call per pass with rows
	// due.
	final := uint64(math.MaxUint64)
	if fr, ok := st.client.(chains.FinalityReader); ok {
		if final, err = fr.Finalized(ctx); err != nil {
			return 0, err
		}
	}
	hashes := map[uint64]string{}
	var (
		signals []signal
		sent    []store.AwaitedConfirmation
	)
	// One signal per payment, with all its transfers due at this head.
	byPayment := map[string]int{}
	for i, a := range due {
		if a.BlockNumber > final {
			skipped++
			continue
		}
		h, ok := hashes[a.BlockNumber]
		if !ok && len(hashes) == dueBlocksPerPoll {
			skipped += len(due) - i
			break // the rows are in block order: the rest wait for the next poll
		}
		if !ok {
			h, err = st.client.BlockHash(ctx, a.BlockNumber)
			if errors.Is(err, chains.ErrBlockNotFound) {
				h, err = "", nil
			}
			if err != nil {
				return 0, err
			}
			hashes[a.BlockNumber] = h
		}
		if h == "" {
			skipped++
			continue
		}
		c := workflows.TransferConfirmed{
			TxHash: a.TxHash, LogIndex: a.LogIndex, BlockNumber: a.BlockNumber, BlockHash: a.BlockHash,
			Confirmations: int(st.head - a.BlockNumber + 1), Canonical: sameHash(h, a.BlockHash),
		}
		if final != math.MaxUint64 {
			// Final is final: its confirmations count up to the
			// requirement (SOLANA: 32, the transaction finalized).
			c.Confirmations = min(c.Confirmations, int(required))
		}
		i, ok := byPayment[a.PaymentID]
		if !ok {
			i = len(signals)
			byPayment[a.PaymentID] = i
			signals = append(signals, signal{a.PaymentID, workflows.SignalTransfersConfirmed, workflows.TransfersConfirmed{}})
		}
		arg := signals[i].arg.(workflows.TransfersConfirmed)
		arg.Transfers = append(arg.Transfers, c)
		signals[i].arg = arg
		sent = append(sent, a)
	}
	// A row exists because its workflow saved the payment's state, so a
	// NotFound means the workflow has ended: its row is done with too.
	if _, err := s.deliver(ctx, signals); err != nil {
		return 0, err
	}
	st.progress.Confirmations += len(sent)
	return skipped, s.store.MarkConfirmationsSignalled(ctx, sent)
}
