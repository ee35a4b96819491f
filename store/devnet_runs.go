package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// StartDevnetRun makes network n's chain state that of the devnet run
// runID (issue 24, item 11). `paywatch dev` calls it for each devnet
// network before its scanners start: its devnet chains start from genesis
// on every run, so their block numbers and transaction hashes repeat those
// of the run before, and a new transfer would meet an old one's record and
// claim under the same hash and count for the old payment. When the run
// recorded for n (devnet_runs) is not runID, n's chain state goes, in one
// transaction: the cursor, the recorded transfers, the transfer and hash
// claims, the awaited confirmations and the scanner's failure record; the
// payments stay. cleared reports that it did. Calling it again with the
// same runID changes nothing.
//
// Only dev calls it, for its own in-memory devnet chains: a network served
// by an RPC endpoint is never passed, and no other mode calls it.
func (s *Store) StartDevnetRun(ctx context.Context, n paywatch.Network, runID string) (cleared bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// The row lock orders two starts of a network run before; two first
		// starts both clear an empty state, which is harmless.
		var prev string
		err := tx.QueryRow(ctx, `SELECT run_id FROM devnet_runs WHERE network = $1 FOR UPDATE`, string(n)).Scan(&prev)
		switch {
		case noRows(err):
		case err != nil:
			return err
		case prev == runID:
			return nil
		}
		for _, table := range []string{"chain_cursors", "chain_transfers", "transfer_claims", "tx_claims",
			"awaited_confirmations", "scanner_failures"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE network = $1`, string(n)); err != nil {
				return fmt.Errorf("clear %s: %w", table, err)
			}
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO devnet_runs (network, run_id, started_at) VALUES ($1, $2, $3)
			ON CONFLICT (network) DO UPDATE SET run_id = EXCLUDED.run_id, started_at = EXCLUDED.started_at`,
			string(n), runID, s.clock()); err != nil {
			return err
		}
		cleared = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("start %s devnet run: %w", n, err)
	}
	return cleared, nil
}
