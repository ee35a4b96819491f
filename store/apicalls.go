package store

import (
	"context"
	"fmt"
	"time"

	"github.com/paywatch/paywatch"
)

// APICall is an API call to authenticate and count: its key, the rate-limit
// window of the key, and whether it counts toward the owner's daily API
// calls.
type APICall struct {
	// Key is the x-api-key header.
	Key string
	// RateKey names the key's fixed window in rate_limits (as HitRate's
	// key), Window its length and Burst the most calls it allows.
	RateKey string
	Window  time.Duration
	Burst   int64
	// CountDaily counts the call toward the owner's DailyAPICalls once it is
	// within Burst.
	CountDaily bool
}

// CountedCall is the outcome of AuthenticateCall.
type CountedCall struct {
	Project *Project
	// Burst is the key's window after this call.
	Burst RateWindow
	// Daily is the owner's day of DailyAPICalls after this call; nil when
	// the call was not counted there (over Burst, or not CountDaily).
	Daily *RateWindow
}

// AuthenticateCall authenticates c.Key as Authenticate does and counts the
// call as HitRate and HitDaily would, in one statement: the key's window
// only for a project that may call (an unknown key, a deactivated project
// or an inactive owner counts nothing), and the owner's day only when the
// call is within the burst. Errors are Authenticate's.
func (s *Store) AuthenticateCall(ctx context.Context, c APICall) (CountedCall, error) {
	h := hashSecret(c.Key)
	now := s.clock()
	start := now.Truncate(c.Window)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var burst, daily *int64
	// The counters' conditions are Authenticate's checks: an owner, an
	// active project and an active owner (InactiveError).
	p, err := scanProject(s.pool.QueryRow(ctx, `
		WITH caller AS (
			SELECT a.id AS owner_id FROM projects p JOIN accounts a ON a.id = p.owner_id
			WHERE p.api_key_hash = $1 AND p.active AND a.status = $8::text
		), burst AS (
			INSERT INTO rate_limits (key, window_start, count) SELECT $2::text, $3::timestamptz, 1 FROM caller
			ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
			RETURNING count
		), daily AS (
			INSERT INTO daily_usage (account_id, day, kind, count)
			SELECT caller.owner_id, $4::date, $5::text, 1 FROM caller, burst WHERE $6::boolean AND burst.count <= $7::bigint
			ON CONFLICT (account_id, day, kind) DO UPDATE SET count = daily_usage.count + 1
			RETURNING count
		)
		SELECT `+projectColumns+`, (SELECT count FROM burst), (SELECT count FROM daily)`+projectFrom+`
		WHERE p.api_key_hash = $1`,
		h, c.RateKey, start, day, DailyAPICalls, c.CountDaily, c.Burst, AccountActive), &burst, &daily)
	if noRows(err) || (err == nil && !equalHash(p.apiKeyHash, h)) {
		return CountedCall{}, paywatch.Errorf(paywatch.EUNAUTHORIZED, paywatch.MsgInvalidAPIKey)
	}
	if err != nil {
		return CountedCall{}, fmt.Errorf("authenticate: %w", err)
	}
	if err := callerRefusal(p); err != nil {
		return CountedCall{}, err
	}
	if burst == nil {
		// callerRefusal and the statement's conditions disagree.
		return CountedCall{}, fmt.Errorf("authenticate: call of project %d not counted", p.ID)
	}
	out := CountedCall{Project: p, Burst: RateWindow{Count: *burst, Reset: start.Add(c.Window), Now: now}}
	if daily != nil {
		out.Daily = &RateWindow{Count: *daily, Reset: day.AddDate(0, 0, 1), Now: now}
	}
	return out, nil
}

// callerRefusal is the error of an API key whose project may not call: none
// without an owner (EUNAUTHORIZED, as an unknown key), EFORBIDDEN for a
// deactivated project or an inactive owner.
func callerRefusal(p *Project) error {
	if p.Owner == nil {
		return paywatch.Errorf(paywatch.EUNAUTHORIZED, paywatch.MsgInvalidAPIKey)
	}
	if !p.Active {
		return forbidden("Project is deactivated")
	}
	return InactiveError(p.Owner)
}
