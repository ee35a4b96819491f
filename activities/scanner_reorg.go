package activities

import (
	"context"
	"errors"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/workflows"
)

// reorg handles a changed block at the cursor: the recorded transfers of
// the last Confirmations blocks whose blocks changed are reported to their
// workflows and marked removed, and the scan goes back Confirmations blocks.
func (s *Scanner) reorg(ctx context.Context, st *scan) error {
	depth := uint64(max(st.info.Confirmations, 1))
	from := uint64(1)
	if st.height > depth {
		from = st.height - depth + 1
	}
	st.log.Warn("reorg: the block at the cursor changed; re-checking recorded transfers", "height", st.height, "from", from)
	recent, err := s.store.RecentTransfers(ctx, st.network, from)
	if err != nil {
		return err
	}
	hashes := map[uint64]string{}
	var gone []paywatch.Transfer
	for _, t := range recent {
		if t.BlockNumber > st.height {
			continue
		}
		h, ok := hashes[t.BlockNumber]
		if !ok {
			h, err = st.client.BlockHash(ctx, t.BlockNumber)
			if errors.Is(err, chains.ErrBlockNotFound) {
				h, err = "", nil // above a shorter new head: gone for now
			}
			if err != nil {
				return err
			}
			hashes[t.BlockNumber] = h
		}
		if !sameHash(h, t.BlockHash) {
			gone = append(gone, t)
		}
	}
	if err := s.remove(ctx, st.network, gone); err != nil {
		return err
	}
	base := from - 1
	baseHash := ""
	if base > 0 {
		if baseHash, err = st.client.BlockHash(ctx, base); err != nil {
			return err
		}
	}
	st.next, st.height, st.hash = from, base, baseHash
	st.progress.Height, st.progress.BlockHash = base, baseHash
	st.progress.Reorgs++
	if len(gone) > 0 {
		st.log.Warn("reorg removed recorded transfers", "count", len(gone), "rescanFrom", from)
	}
	return nil
}

// remove signals TransferRemoved for transfers that left the chain to the
// payment each was claimed for, then marks them removed. Signals go first:
// if marking fails, the next reorg check finds them again. The claims stay:
// a transfer mined again with the same key counts for the same payment.
func (s *Scanner) remove(ctx context.Context, n paywatch.Network, gone []paywatch.Transfer) error {
	if len(gone) == 0 {
		return nil
	}
	keys := make([]paywatch.TransferKey, 0, len(gone))
	for _, t := range gone {
		keys = append(keys, t.Key())
	}
	owners, err := s.store.TransferOwners(ctx, n, keys)
	if err != nil {
		return err
	}
	var signals []signal
	for _, t := range gone {
		if owner, ok := owners[t.Key()]; ok {
			signals = append(signals, signal{owner, workflows.SignalTransferRemoved,
				workflows.TransferRemoved{TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash}})
		}
	}
	if err := s.send(ctx, signals); err != nil {
		return err
	}
	return s.store.MarkTransfersRemoved(ctx, n, keys)
}
