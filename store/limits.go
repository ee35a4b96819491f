package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// DailyKind names a daily counter of an owner account.
type DailyKind string

// The daily counters (interface.md "Plan limits").
const (
	DailyAPICalls          DailyKind = "api_calls"
	DailyWebhooks          DailyKind = "webhooks"
	DailyChatNotifications DailyKind = "chat_notifications"
)

// RateWindow is the state of a fixed-window counter after a hit.
type RateWindow struct {
	// Count is the number of hits in the window, this one included.
	Count int64
	// Reset is when the window ends and the count starts again.
	Reset time.Time
	// Now is the store's time of the hit, for Retry-After.
	Now time.Time
}

// RetryAfter is how long until the window resets, rounded up to whole
// seconds and at least one.
func (w RateWindow) RetryAfter() time.Duration {
	d := w.Reset.Sub(w.Now)
	secs := (d + time.Second - 1) / time.Second
	return max(secs, 1) * time.Second
}

// HitRate counts one request against the fixed window of length window
// that contains the store's current time, under key, and returns the count
// so far. The counter lives in PostgreSQL, so every API replica shares it;
// the upsert makes concurrent hits add up exactly.
func (s *Store) HitRate(ctx context.Context, key string, window time.Duration) (RateWindow, error) {
	now := s.clock()
	start := now.Truncate(window)
	var w RateWindow
	err := s.pool.QueryRow(ctx, `
		INSERT INTO rate_limits (key, window_start, count) VALUES ($1, $2, 1)
		ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
		RETURNING count`, key, start).Scan(&w.Count)
	if err != nil {
		return RateWindow{}, fmt.Errorf("rate limit %s: %w", key, err)
	}
	w.Reset, w.Now = start.Add(window), now
	return w, nil
}

// HitSliding counts one request under key in a sliding window of length
// window and returns, as Count, the hits of the last window as the
// sliding-window counter estimates them: this fixed window's hits plus
// the previous window's, weighted by how much of the previous window the
// last window still covers (rounded up). A fixed window lets twice its
// limit through across a window's edge (20 wrong passwords in 4 s around
// a minute's turn at 10 a minute); this does not. Reset is when this
// fixed window ends. The counts are HitRate's rows, so ForgiveRate takes
// a hit back as before.
func (s *Store) HitSliding(ctx context.Context, key string, window time.Duration) (RateWindow, error) {
	return s.hitSliding(ctx, s.pool, key, window)
}

// hitSliding is HitSliding on q, which may be a transaction: a hit counted
// in a transaction that rolls back is not counted.
func (s *Store) hitSliding(ctx context.Context, q querier, key string, window time.Duration) (RateWindow, error) {
	now := s.clock()
	start := now.Truncate(window)
	var cur, prev int64
	err := q.QueryRow(ctx, `
		WITH hit AS (
			INSERT INTO rate_limits (key, window_start, count) VALUES ($1, $2, 1)
			ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
			RETURNING count)
		SELECT (SELECT count FROM hit),
		       COALESCE((SELECT count FROM rate_limits WHERE key = $1 AND window_start = $3), 0)`,
		key, start, start.Add(-window)).Scan(&cur, &prev)
	if err != nil {
		return RateWindow{}, fmt.Errorf("rate limit %s: %w", key, err)
	}
	left := int64(window - now.Sub(start)) // of the previous window still in the last one
	span := int64(window)
	weighted := (prev*left + span - 1) / span
	return RateWindow{Count: cur + weighted, Reset: start.Add(window), Now: now}, nil
}

// HitDaily counts one use of kind for the account on the current UTC day
// and returns the day's count; Reset is the next midnight UTC.
func (s *Store) HitDaily(ctx context.Context, accountID int64, kind DailyKind) (RateWindow, error) {
	return s.hitDaily(ctx, s.pool, accountID, kind)
}

// hitDaily is HitDaily on q, which may be a transaction: a use counted in a
// transaction that rolls back is not counted.
func (s *Store) hitDaily(ctx context.Context, q querier, accountID int64, kind DailyKind) (RateWindow, error) {
	now := s.clock()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var w RateWindow
	err := q.QueryRow(ctx, `
		INSERT INTO daily_usage (account_id, day, kind, count) VALUES ($1, $2, $3, 1)
		ON CONFLICT (account_id, day, kind) DO UPDATE SET count = daily_usage.count + 1
		RETURNING count`, accountID, day, kind).Scan(&w.Count)
	if err != nil {
		return RateWindow{}, fmt.Errorf("daily usage: %w", err)
	}
	w.Reset, w.Now = day.AddDate(0, 0, 1), now
	return w, nil
}

// PruneRateLimits deletes rate-limit windows that started more than three
// hours ago (the longest window is an hour, and a sliding window reads the
// one before the current); the reconciler calls it now and then so the
// table stays small.
func (s *Store) PruneRateLimits(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM rate_limits WHERE window_start < $1`, s.clock().Add(-3*time.Hour))
	if err != nil {
		return fmt.Errorf("prune rate limits: %w", err)
	}
	return nil
}

// countQuota counts one use of kind against the daily quota of the
// project's owner (limit reads it; negative is unlimited) and reports
// whether it was within it. A project without an owner has no quota.
func countQuota(ctx context.Context, tx pgx.Tx, projectID int64, kind string, now time.Time,
	limit func(context.Context, pgx.Tx, int64) (int64, int64, error)) (bool, error) {
	accountID, max, err := limit(ctx, tx, projectID)
	if err != nil || accountID == 0 || max < 0 {
		return err == nil, err
	}
	if max == 0 {
		return false, nil
	}
	var n int64
	err = tx.QueryRow(ctx, `
		INSERT INTO daily_usage (account_id, day, kind, count) VALUES ($1, $2::date, $3, 1)
		ON CONFLICT (account_id, day, kind) DO UPDATE SET count = daily_usage.count + 1
		WHERE daily_usage.count < $4
		RETURNING count`, accountID, now.Format(time.DateOnly), kind, max).Scan(&n)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
