package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/paywatch/paywatch"
)

// maxScanErrorBytes bounds the last error kept for a failing scanner.
const maxScanErrorBytes = 1000

// RecordScanFailure records that a poll of network n's scanner failed with
// msg: the first failure in a row starts the network's failure record, the
// following ones count on it and replace its last error. A record last
// written before the scanner's last progress (chain_cursors) is stale:
// ChainStatus ignores it, and the next failure starts it again. /health
// reads the record through ChainStatus, whichever process runs the
// scanner. msg must hold no secret; the chain clients redact their
// endpoints' URLs.
func (s *Store) RecordScanFailure(ctx context.Context, n paywatch.Network, msg string) error {
	msg = strings.ReplaceAll(strings.ToValidUTF8(msg, "?"), "\x00", "")
	if len(msg) > maxScanErrorBytes {
		msg = strings.ToValidUTF8(msg[:maxScanErrorBytes], "")
	}
	now := s.clock()
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO scanner_failures (network, failing_since, failed_polls, last_error, updated_at)
		VALUES ($1, $2, 1, $3, $2)
		ON CONFLICT (network) DO UPDATE SET
			failed_polls = CASE WHEN scanner_failures.updated_at < (
				SELECT c.updated_at FROM chain_cursors c WHERE c.network = $1)
				THEN 1 ELSE scanner_failures.failed_polls + 1 END,
			failing_since = CASE WHEN scanner_failures.updated_at < (
				SELECT c.updated_at FROM chain_cursors c WHERE c.network = $1)
				THEN EXCLUDED.failing_since ELSE scanner_failures.failing_since END,
			last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at`,
		string(n), now, msg); err != nil {
		return fmt.Errorf("record %s scan failure: %w", n, err)
	}
	return nil
}

// ClearScanFailure ends network n's failure record: its scanner's last
// poll worked. It is a no-op for a network without one.
func (s *Store) ClearScanFailure(ctx context.Context, n paywatch.Network) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM scanner_failures WHERE network = $1`, string(n)); err != nil {
		return fmt.Errorf("clear %s scan failure: %w", n, err)
	}
	return nil
}
