package store

import (
	"context"
	"fmt"
	"time"

	"github.com/paywatch/paywatch"
)

// AddRPCUsage adds requests to network n's count for the UTC day of at,
// records the daily budget the scanner runs under (0: none), and returns
// the day's total (issue 26: budgets).
func (s *Store) AddRPCUsage(ctx context.Context, n paywatch.Network, at time.Time, requests, budget uint64) (uint64, error) {
	var total int64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO rpc_usage (network, day, requests, budget, updated_at)
		VALUES ($1, $2::date, $3, $4, $5)
		ON CONFLICT (network, day) DO UPDATE SET
			requests = rpc_usage.requests + EXCLUDED.requests,
			budget = EXCLUDED.budget, updated_at = EXCLUDED.updated_at
		RETURNING requests`,
		string(n), utcDay(at), int64(requests), int64(budget), s.clock()).Scan(&total)
	if err != nil {
		return 0, fmt.Errorf("record %s RPC usage: %w", n, err)
	}
	return uint64(total), nil
}

// addRPCUsage fills in today's RPC requests and budget (the store's
// clock's UTC day) of the networks in byNetwork, adding those that have
// usage but no cursor yet.
func (s *Store) addRPCUsage(ctx context.Context, byNetwork map[paywatch.Network]ChainStatus) error {
	rows, err := s.pool.Query(ctx, `SELECT network, requests, budget FROM rpc_usage WHERE day = $1::date`, utcDay(s.clock()))
	if err != nil {
		return fmt.Errorf("chain status: RPC usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var requests, budget int64
		if err := rows.Scan(&n, &requests, &budget); err != nil {
			return fmt.Errorf("chain status: RPC usage: %w", err)
		}
		st, ok := byNetwork[paywatch.Network(n)]
		if !ok {
			st = ChainStatus{Network: paywatch.Network(n)}
		}
		st.RPCRequestsToday, st.RPCDailyBudget = uint64(requests), uint64(budget)
		byNetwork[st.Network] = st
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("chain status: RPC usage: %w", err)
	}
	return nil
}

// utcDay is the UTC date of t, as PostgreSQL reads a date.
func utcDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }
