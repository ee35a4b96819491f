package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// ErrScanLeaseLost means a newer scan of the network has taken the scan
// lease (AcquireScanLease): the scan that holds the older generation must
// stop, and its batch was not recorded.
var ErrScanLeaseLost = errors.New("store: a newer scan of this network has taken over")

// AcquireScanLease makes the caller the network's newest scan and returns
// its generation, one more than the last one taken. From its commit on,
// the batches of older generations are refused (ErrScanLeaseLost), and a
// batch of an older generation that was being recorded when it was called
// has committed before it returns: the row lock RecordScan holds makes it
// wait. So a scan that reads the cursor after this call sees every write
// an older scan will ever make.
//
// Temporal can run two attempts of one network's scan activity at once
// (the retry of an attempt whose worker is cut off, not dead, while the
// old one still runs); each attempt takes the lease when it starts, so
// the newest one wins.
func (s *Store) AcquireScanLease(ctx context.Context, n paywatch.Network) (uint64, error) {
	var gen int64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO scanner_leases (network, generation, acquired_at) VALUES ($1, 1, $2)
		ON CONFLICT (network) DO UPDATE SET
			generation = scanner_leases.generation + 1, acquired_at = EXCLUDED.acquired_at
		RETURNING generation`, string(n), s.clock()).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("acquire %s scan lease: %w", n, err)
	}
	return uint64(gen), nil
}

// holdScanLease checks, inside a recording transaction, that generation
// gen (0: no check) is still network n's newest, and keeps the lease row
// share-locked until the transaction ends, so that AcquireScanLease waits
// for the batch to commit or roll back.
func holdScanLease(ctx context.Context, tx pgx.Tx, n paywatch.Network, gen uint64) error {
	if gen == 0 {
		return nil
	}
	var cur int64
	err := tx.QueryRow(ctx, `SELECT generation FROM scanner_leases WHERE network = $1 FOR SHARE`, string(n)).Scan(&cur)
	if noRows(err) {
		return fmt.Errorf("%s scan generation %d: no lease taken: %w", n, gen, ErrScanLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("check %s scan lease: %w", n, err)
	}
	if uint64(cur) != gen {
		return fmt.Errorf("%s scan generation %d, newest %d: %w", n, gen, cur, ErrScanLeaseLost)
	}
	return nil
}
