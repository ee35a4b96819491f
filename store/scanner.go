package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/paywatch/paywatch"
)

// The scanner*.go files are the chain scanners' side of the store: their
// cursors (here), the one query per batch that matches recipients against
// watched addresses (scanner_watched.go), the recorded transfers
// (scanner_record.go, scanner_transfers.go) and the chain status of /health.

// ChainCursor is one network's scan progress.
type ChainCursor struct {
	Network paywatch.Network
	// Height is the last block whose transfers are recorded.
	Height uint64
	// BlockHash is the hash of block Height when it was scanned; "" if
	// unknown.
	BlockHash string
	// Head is the chain head the scanner saw with its last batch.
	Head      uint64
	UpdatedAt time.Time
}

// ChainCursor returns the cursor of network n; ok is false when n has never
// been scanned (or its cursor was reset).
func (s *Store) ChainCursor(ctx context.Context, n paywatch.Network) (ChainCursor, bool, error) {
	c := ChainCursor{Network: n}
	var height, head int64
	err := s.pool.QueryRow(ctx, `
		SELECT height, block_hash, head, updated_at FROM chain_cursors WHERE network = $1`,
		string(n)).Scan(&height, &c.BlockHash, &head, &c.UpdatedAt)
	if noRows(err) {
		return ChainCursor{}, false, nil
	}
	if err != nil {
		return ChainCursor{}, false, fmt.Errorf("read %s cursor: %w", n, err)
	}
	c.Height, c.Head = uint64(height), uint64(head)
	return c, true, nil
}

// ResetChainCursor forgets the cursor of network n, so its scanner starts
// afresh at the chain head (or at the earliest watched payment's start
// block). `paywatch dev` resets the cursors of its devnet chains, which
// start from genesis on every run.
func (s *Store) ResetChainCursor(ctx context.Context, n paywatch.Network) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM chain_cursors WHERE network = $1`, string(n)); err != nil {
		return fmt.Errorf("reset %s cursor: %w", n, err)
	}
	return nil
}

// PaymentsWithoutWorkflow returns, for those of ids (payment ids) whose
// workflow is not recorded as started (payments.workflow_started), when
// their row was created. The API writes a payment's row before it starts
// the workflow, and the reconciler starts the workflows whose start failed:
// a scanner whose signal finds no workflow asks this whether the workflow
// has ended (not listed) or is yet to start (listed). Unknown ids are not
// listed.
func (s *Store) PaymentsWithoutWorkflow(ctx context.Context, ids []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id::text, created_at FROM payments
		WHERE id = ANY($1::uuid[]) AND NOT workflow_started`, ids)
	if err != nil {
		return nil, fmt.Errorf("payments without workflow: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var created time.Time
		if err := rows.Scan(&id, &created); err != nil {
			return nil, fmt.Errorf("payments without workflow: %w", err)
		}
		out[id] = created
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("payments without workflow: %w", err)
	}
	return out, nil
}

// ChainStatus is one network's scan progress as /health reports it.
type ChainStatus struct {
	Network paywatch.Network
	// Head is the newest block the scanner saw.
	Head uint64
	// Scanned is the last block whose transfers are recorded.
	Scanned uint64
	// LagBlocks is Head − Scanned.
	LagBlocks uint64
	// LagAllowance is the lag the scanner keeps by design
	// (ScanBatch.LagAllowance).
	LagAllowance uint64
	// UpdatedAt is when the scanner last recorded progress; zero for a
	// network not scanned yet.
	UpdatedAt time.Time
	// FailedPolls is how many polls of the scanner failed in a row, up to
	// now (RecordScanFailure); 0 while its polls work.
	FailedPolls int
	// FailingSince is when the first of those polls failed; zero while
	// its polls work.
	FailingSince time.Time
	// LastError is the error of the last failed poll; "" while its polls
	// work. It may name RPC hosts: it is for the operator's logs, not for
	// an unauthenticated answer.
	LastError string
	// RPCRequestsToday is the requests the network's chain client made
	// this UTC day as its scanners recorded them (AddRPCUsage, every 30 s),
	// and RPCDailyBudget the daily budget they run under; 0: none.
	RPCRequestsToday, RPCDailyBudget uint64
}

// ChainStatus returns the scan progress of the offered networks (see
// WithNetworks), in API order, with their scanners' failure records; a
// network not scanned yet has zeros. Without WithNetworks it lists the
// networks that have a cursor or a failure record.
func (s *Store) ChainStatus(ctx context.Context) ([]ChainStatus, error) {
	// A scanner that never reached its chain has a failure record but no
	// cursor. A failure record last written before the cursor's last
	// progress is stale (the scanner worked since; a leftover activity or
	// a late write may have left it): it is ignored.
	rows, err := s.pool.Query(ctx, `
		SELECT COALESCE(c.network, f.network), COALESCE(c.height, 0), COALESCE(c.head, 0), COALESCE(c.lag_allowance, 0), c.updated_at,
		       COALESCE(f.failed_polls, 0), f.failing_since, COALESCE(f.last_error, '')
		FROM chain_cursors c FULL JOIN scanner_failures f
			ON f.network = c.network AND f.updated_at >= c.updated_at
		WHERE c.network IS NOT NULL OR NOT EXISTS (
			SELECT 1 FROM chain_cursors c2 WHERE c2.network = f.network)`)
	if err != nil {
		return nil, fmt.Errorf("chain status: %w", err)
	}
	defer rows.Close()
	byNetwork := map[paywatch.Network]ChainStatus{}
	for rows.Next() {
		var n string
		var height, head, allowance int64
		var updated, failingSince *time.Time
		var st ChainStatus
		if err := rows.Scan(&n, &height, &head, &allowance, &updated, &st.FailedPolls, &failingSince, &st.LastError); err != nil {
			return nil, fmt.Errorf("chain status: %w", err)
		}
		st.Network, st.Head, st.Scanned = paywatch.Network(n), uint64(head), uint64(height)
		if updated != nil {
			st.UpdatedAt = *updated
		}
		if failingSince != nil {
			st.FailingSince = *failingSince
		}
		st.Head = max(st.Head, st.Scanned)
		st.LagBlocks = st.Head - st.Scanned
		st.LagAllowance = uint64(allowance)
		byNetwork[st.Network] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("chain status: %w", err)
	}
	if err := s.addRPCUsage(ctx, byNetwork); err != nil {
		return nil, err
	}
	out := []ChainStatus{}
	for _, info := range paywatch.Networks() {
		st, ok := byNetwork[info.Network]
		switch {
		case s.offered != nil && slices.Contains(s.offered, info.Network):
			if !ok {
				st = ChainStatus{Network: info.Network}
			}
			out = append(out, st)
		case s.offered == nil && ok:
			out = append(out, st)
		}
	}
	return out, nil
}
