package activities

import (
	"context"
	"log/slog"
	"time"

	"github.com/paywatch/paywatch"
)

// The scanners' side of /health: every failed poll is counted in
// PostgreSQL (store.RecordScanFailure) and the first poll that works
// clears the count, so /health, in whichever process serves it, names a
// network whose scanner keeps failing (paywatch.FailingPolls).

// failureRecordTimeout bounds the write of a poll's failure record, so
// that a hung database delays the next poll by no more than this.
const failureRecordTimeout = 5 * time.Second

// recordFailure counts a failed poll of st's network for /health. When
// that fails too (the database is down), /health says so by itself.
func (s *Scanner) recordFailure(ctx context.Context, st *scan, err error) {
	ctx, cancel := context.WithTimeout(ctx, failureRecordTimeout)
	defer cancel()
	if rerr := s.store.RecordScanFailure(ctx, st.network, err.Error()); rerr != nil && ctx.Err() == nil {
		st.log.Debug("scan failure not recorded", "error", rerr)
	}
}

// clearFailure ends st's network failure record after a poll that worked;
// it reports whether it did, and is tried again after the next poll if not.
func (s *Scanner) clearFailure(ctx context.Context, st *scan) bool {
	ctx, cancel := context.WithTimeout(ctx, failureRecordTimeout)
	defer cancel()
	if err := s.store.ClearScanFailure(ctx, st.network); err != nil {
		st.log.Debug("scan failure record not cleared", "error", err)
		return false
	}
	return true
}

// failureLevel says whether and at which level a scanner logs its fails-th
// failed poll in a row (changed: its error differs from the last logged
// one): at ERROR when the scanner becomes failing for /health
// (paywatch.FailingPolls) and every 100th failure after, so that an alert on
// ERROR logs fires once per outage and reminds while it lasts; at WARN the
// first failure, a changed error and every tenth; not at all otherwise.
// The recovery is logged at INFO.
func failureLevel(fails int, changed bool) (slog.Level, bool) {
	switch {
	case fails == paywatch.FailingPolls || fails%100 == 0:
		return slog.LevelError, true
	case fails == 1 || changed || fails%10 == 0:
		return slog.LevelWarn, true
	}
	return 0, false
}
