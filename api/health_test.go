package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/api"
)

// getHealthOf asks s's API listener for /health.
func getHealthOf(t *testing.T, s *api.Server) (int, api.HealthResponse, map[string]any) {
	t.Helper()
	rec := serve(t, s.API(), apiListener, httptest.NewRequest(http.MethodGet, "/health", nil))
	var h api.HealthResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &h), rec.Body.String())
	var raw map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw))
	return rec.Code, h, raw
}

// /health is degraded (still 200), naming the network, when a scanner is
// more than MaxLagBlocks behind its head or its polls keep failing; ok
// otherwise, with the fields it always had.
func TestHealthJudgesEveryScanner(t *testing.T) {
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	up := map[string]api.Check{"database": func(context.Context) error { return nil }}
	for _, tc := range []struct {
		name     string
		maxLag   uint64
		chains   []api.ChainStatus
		checks   map[string]api.Check
		status   string
		verdicts []string
		problems []string
	}{
		{
			name:   "all caught up",
			chains: []api.ChainStatus{{Network: "ERC20", Head: 500, Scanned: 500}, {Network: "TRC20", Head: 900, Scanned: 800, LagBlocks: 100}},
			status: "ok", verdicts: []string{"ok", "ok"},
		},
		{
			name:   "one block over the default",
			chains: []api.ChainStatus{{Network: "ERC20", Head: 500, Scanned: 500}, {Network: "TRC20", Head: 901, Scanned: 800, LagBlocks: 101}},
			status: "degraded", verdicts: []string{"ok", "lagging"},
			problems: []string{"TRC20 scanner lagging: 101 blocks behind the head (more than 100)"},
		},
		{
			name:   "PAYWATCH_MAX_LAG_BLOCKS",
			maxLag: 1000,
			chains: []api.ChainStatus{{Network: "TRC20", Head: 901, Scanned: 800, LagBlocks: 101}},
			status: "ok", verdicts: []string{"ok"},
		},
		{
			name: "an idle scanner keeps its designed lag, not more",
			chains: []api.ChainStatus{
				{Network: "ARBITRUM", Head: 1228, Scanned: 1000, LagBlocks: 228, LagAllowance: 128},
				{Network: "POLYGON", Head: 1229, Scanned: 1000, LagBlocks: 229, LagAllowance: 128},
			},
			status: "degraded", verdicts: []string{"ok", "lagging"},
			problems: []string{"POLYGON scanner lagging: 229 blocks behind the head (more than 228)"},
		},
		{
			name:   "a poll or two failed: a hiccup",
			chains: []api.ChainStatus{{Network: "BEP20", FailedPolls: api.FailingPolls - 1, FailingSince: &since}},
			status: "ok", verdicts: []string{"ok"},
		},
		{
			name: "every endpoint failing",
			chains: []api.ChainStatus{
				{Network: "BEP20", Head: 10, Scanned: 10, FailedPolls: 7, FailingSince: &since},
				{Network: "ERC20", Head: 700, Scanned: 100, LagBlocks: 600},
			},
			status: "degraded", verdicts: []string{"failing", "lagging"},
			problems: []string{
				"BEP20 scanner failing: 7 polls in a row failed since 2025-03-01T12:00:00Z",
				"ERC20 scanner lagging: 600 blocks behind the head (more than 100)",
			},
		},
		{
			name:   "a provider whose history stops short of the cursor",
			chains: []api.ChainStatus{{Network: "SOLANA", FailedPolls: 4, FailingSince: &since, ShallowHistory: true}},
			status: "degraded", verdicts: []string{"failing"},
			problems: []string{"SOLANA scanner failing: 4 polls in a row failed since 2025-03-01T12:00:00Z: " +
				"the RPC endpoint's history does not reach the scanner's cursor; give it an endpoint with full history"},
		},
		{
			name:   "a check down",
			checks: map[string]api.Check{"database": func(context.Context) error { return errors.New("refused") }},
			chains: []api.ChainStatus{{Network: "ERC20"}},
			status: "degraded", verdicts: []string{"ok"},
			problems: []string{"database down"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := tc.checks
			if checks == nil {
				checks = up
			}
			s := api.New(api.Deps{
				Version: "test", Checks: checks, MaxLagBlocks: tc.maxLag,
				Chains: func(context.Context) ([]api.ChainStatus, error) {
					return append([]api.ChainStatus(nil), tc.chains...), nil
				},
			})
			code, h, raw := getHealthOf(t, s)
			assert.Equal(t, http.StatusOK, code, "degraded is still 200")
			assert.Equal(t, tc.status, h.Status)
			var verdicts []string
			for _, ch := range h.Chains {
				verdicts = append(verdicts, ch.Status)
			}
			assert.Equal(t, tc.verdicts, verdicts)
			assert.Equal(t, tc.problems, h.Problems)
			for _, field := range []string{"status", "uptime_seconds", "version", "checks", "chains"} {
				assert.Contains(t, raw, field)
			}
			if tc.problems == nil {
				assert.NotContains(t, raw, "problems", "an ok answer has the fields it always had")
			}
		})
	}
}

// A network whose daily RPC budget is being spent faster than the day
// allows (more than the day's share so far plus half an hour's) makes
// /health degraded, naming it: its scanner slows down to stay within the
// budget, so payments on it are seen late. The day's count and budget are
// in the answer whenever there is a budget.
func TestHealthNamesANetworkOverItsBudget(t *testing.T) {
	noon := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		used     uint64
		problems []string
	}{
		{name: "on the even pace", used: 43_200},
		{name: "within half an hour's slack", used: 45_000},
		{name: "faster than the day allows", used: 50_000, problems: []string{
			"BEP20 RPC budget: 50000 of 86400 requests used by 12:00 UTC, faster than the day allows; the scanner slows down to stay within it"}},
		// Issue 37: payments waiting on a network are read past its budget.
		{name: "past the budget", used: 90_000, problems: []string{
			"BEP20 RPC budget overrun: 3600 requests past the day's 86400, for payments waiting on it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := api.New(api.Deps{
				Version: "test", Now: func() time.Time { return noon },
				Chains: func(context.Context) ([]api.ChainStatus, error) {
					return []api.ChainStatus{
						{Network: "BEP20", Head: 10, Scanned: 10, RPCRequestsToday: tc.used, RPCDailyBudget: 86_400},
						{Network: "ERC20", Head: 10, Scanned: 10, RPCRequestsToday: 900_000},
					}, nil
				},
			})
			_, h, raw := getHealthOf(t, s)
			assert.Equal(t, tc.problems, h.Problems)
			assert.Equal(t, map[bool]string{true: "degraded", false: "ok"}[tc.problems != nil], h.Status)
			chains := raw["chains"].([]any)
			bep := chains[0].(map[string]any)
			assert.EqualValues(t, 86_400, bep["rpc_daily_budget"])
			assert.EqualValues(t, tc.used, bep["rpc_requests_today"])
			assert.NotContains(t, chains[1].(map[string]any), "rpc_daily_budget", "no budget, no limit")
		})
	}
}
