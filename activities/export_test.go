package activities

import (
	"context"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// ScanRange scans blocks [from, to] of network n through the same batch
// path as the scan (read, match, record, signal, in batches of BatchBlocks)
// and leaves the cursor at to, under a scan lease of its own. It does no reorg check; benchmarks and
// tests use it to measure and drive the batch path without Temporal.
func (s *Scanner) ScanRange(ctx context.Context, n paywatch.Network, from, to uint64) (ScanStats, error) {
	c, err := s.chains.Client(n)
	if err != nil {
		return ScanStats{}, err
	}
	gen, err := s.store.AcquireScanLease(ctx, n)
	if err != nil {
		return ScanStats{}, err
	}
	var total ScanStats
	for start := from; start <= to; {
		end := min(start+s.BatchBlocks(n)-1, to)
		hash, err := c.BlockHash(ctx, end)
		if err != nil {
			return total, err
		}
		ts, err := c.Transfers(ctx, start, end)
		if err != nil {
			return total, err
		}
		b, err := s.recordBatch(ctx, n, ts, store.ScanBatch{Network: n, Height: end, BlockHash: hash, Head: end, Generation: gen}, 0)
		if err != nil {
			return total, err
		}
		total.Transfers += b.Transfers
		total.Matched += b.Matched
		total.Signals += b.Signals
		start = end + 1
	}
	return total, nil
}

// TipPace exposes the caught-up scanner's poll timing to the tests.
type TipPace struct{ p tipPace }

// Next is tipPace.next.
func (t *TipPace) Next(start, now time.Time, head uint64, interval time.Duration) time.Time {
	return t.p.next(start, now, head, interval)
}

// FailureLevel exposes failureLevel to the tests.
var FailureLevel = failureLevel

// RecordBatch runs the scanner's batch path (match, record, claim, signal)
// over transfers as a chain client returned them, for tests of what a
// batch does with transfers a devnet cannot make, such as one transaction
// paying two watched addresses.
func (s *Scanner) RecordBatch(ctx context.Context, n paywatch.Network, ts []paywatch.Transfer, b store.ScanBatch) (ScanStats, error) {
	return s.recordBatch(ctx, n, ts, b, 0)
}

// LatestCopies exposes latestCopies to the package's external tests.
var LatestCopies = latestCopies

// Backoff exposes backoff to the tests.
var Backoff = backoff
