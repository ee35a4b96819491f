package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
)

// Check probes one dependency; a nil error means it is up.
type Check func(ctx context.Context) error

// ChainStatus is one network's scanner progress as /health reports it.
type ChainStatus struct {
	Network   string `json:"network"`
	Head      uint64 `json:"head"`
	Scanned   uint64 `json:"scanned"`
	LagBlocks uint64 `json:"lag_blocks"`
	// LagAllowance is the lag the scanner keeps by design (an idle EVM
	// scanner stays chains.RecentBlocks behind): allowed on top of
	// MaxLagBlocks. Not shown.
	LagAllowance uint64 `json:"-"`
	// Status is the scanner's verdict, set by /health: ChainOK,
	// ChainLagging or ChainFailing.
	Status string `json:"status"`
	// FailedPolls is how many of the scanner's polls failed in a row, up
	// to now; 0 while they work.
	FailedPolls int `json:"failed_polls,omitempty"`
	// FailingSince is when the first of those polls failed.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// ShallowHistory is set while the scanner fails because its RPC
	// endpoint's history does not reach the scanner's cursor (SOLANA:
	// getSignaturesForAddress stops short of it): only an endpoint with
	// more history lets it go on. Not shown; the problem line says it.
	ShallowHistory bool `json:"-"`
	// RPCRequestsToday is the requests made to the network's RPC
	// endpoints this UTC day, as its scanners recorded them (every 30 s);
	// RPCDailyBudget is PAYWATCH_<NETWORK>_DAILY_BUDGET, absent without one.
	RPCRequestsToday uint64 `json:"rpc_requests_today,omitempty"`
	RPCDailyBudget   uint64 `json:"rpc_daily_budget,omitempty"`
}

// HealthResponse is the body of GET /health (operations.md §3, §5).
type HealthResponse struct {
	Status        string            `json:"status"`
	UptimeSeconds int64             `json:"uptime_seconds"`
	Version       string            `json:"version"`
	Checks        map[string]string `json:"checks"`
	Chains        []ChainStatus     `json:"chains"`
	// Problems say, one line each, why Status is degraded: a check down,
	// a network's scanner lagging or failing (naming the network).
	Problems []string `json:"problems,omitempty"`
}

// Health values of HealthResponse.Status, of each check and of each
// chain's status.
const (
	HealthOK       = "ok"
	HealthDegraded = "degraded"
	HealthDraining = "draining"
	CheckUp        = "up"
	CheckDown      = "down"
	ChainOK        = "ok"
	// ChainLagging is a scanner more than MaxLagBlocks behind its head.
	ChainLagging = "lagging"
	// ChainFailing is a scanner whose last FailingPolls polls failed:
	// every RPC endpoint down or rate limiting, or its records not
	// written.
	ChainFailing = "failing"
)

// DefaultMaxLagBlocks is PAYWATCH_MAX_LAG_BLOCKS's default: a scanner
// more blocks than this behind its head makes /health degraded.
const DefaultMaxLagBlocks = 100

// FailingPolls is how many failed polls in a row make a scanner failing
// for /health (paywatch.FailingPolls; the scanner logs it at ERROR).
const FailingPolls = paywatch.FailingPolls

// healthCheckTimeout bounds each dependency probe so a hung database cannot
// hang the load balancer's health check.
const healthCheckTimeout = 2 * time.Second

// limitHealth counts /health toward the unauthenticated per-IP limit
// (UnauthenticatedLimit a minute, shared by both listeners): a probe every
// 2 seconds from one address stays within it. The limit lives in
// PostgreSQL, so when the database cannot count the request the probe goes
// through: /health must still answer, and report the database down.
func (s *Server) limitHealth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.deps.Store == nil {
			return next(c)
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), healthCheckTimeout)
		defer cancel()
		w, err := s.payments.HitRate(ctx, "ip:health:"+c.RealIP(), time.Minute)
		if err == nil && w.Count > UnauthenticatedLimit {
			setRetryAfter(c, w)
			return tooMany(paywatch.MsgTooManyRequests)
		}
		return next(c)
	}
}

func (s *Server) health(c echo.Context) error {
	resp := HealthResponse{
		UptimeSeconds: int64(s.clock().Sub(s.started).Seconds()),
		Version:       s.deps.Version,
		Checks:        map[string]string{},
		Chains:        []ChainStatus{},
	}
	if s.Draining() {
		resp.Status = HealthDraining
		return c.JSON(http.StatusServiceUnavailable, resp)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), healthCheckTimeout)
	defer cancel()

	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, check := range s.deps.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := CheckUp
			if err := check(ctx); err != nil {
				state = CheckDown
			}
			mu.Lock()
			defer mu.Unlock()
			resp.Checks[name] = state
		}()
	}
	wg.Wait()
	for _, name := range slices.Sorted(maps.Keys(resp.Checks)) {
		if resp.Checks[name] != CheckUp {
			resp.Problems = append(resp.Problems, name+" down")
		}
	}
	if s.deps.Chains != nil {
		chains, err := s.deps.Chains(ctx)
		if err != nil {
			resp.Problems = append(resp.Problems, "chain status unknown")
		}
		if chains != nil {
			resp.Chains = chains
		}
	}
	for i := range resp.Chains {
		if p := s.judgeChain(&resp.Chains[i]); p != "" {
			resp.Problems = append(resp.Problems, p)
		}
		if p := s.judgeBudget(resp.Chains[i]); p != "" {
			resp.Problems = append(resp.Problems, p)
		}
	}
	resp.Status = HealthOK
	if len(resp.Problems) > 0 {
		resp.Status = HealthDegraded
	}
	return c.JSON(http.StatusOK, resp)
}

// judgeChain sets ch.Status and returns the problem it makes, naming the
// network, or "" when it is ok. A failing scanner's head is the one it saw
// before the failures began, so its lag says nothing more.
func (s *Server) judgeChain(ch *ChainStatus) string {
	maxLag := s.deps.MaxLagBlocks
	if maxLag == 0 {
		maxLag = DefaultMaxLagBlocks
	}
	switch {
	case ch.FailedPolls >= FailingPolls:
		ch.Status = ChainFailing
		since := ""
		if ch.FailingSince != nil {
			since = " since " + ch.FailingSince.UTC().Format(time.RFC3339)
		}
		why := ""
		if ch.ShallowHistory {
			why = ": the RPC endpoint's history does not reach the scanner's cursor; give it an endpoint with full history"
		}
		return fmt.Sprintf("%s scanner failing: %d polls in a row failed%s%s", ch.Network, ch.FailedPolls, since, why)
	case ch.LagBlocks > maxLag+ch.LagAllowance:
		ch.Status = ChainLagging
		return fmt.Sprintf("%s scanner lagging: %d blocks behind the head (more than %d)", ch.Network, ch.LagBlocks, maxLag+ch.LagAllowance)
	default:
		ch.Status = ChainOK
		return ""
	}
}

// judgeBudget returns the problem of a network whose daily RPC budget is
// being spent faster than the day allows (its scanner waits for it, so
// payments on it are seen late), or "". The scanner's own rule
// (activities.BudgetWait) allows the day's share so far plus half an
// hour's; this says so once the recorded count is past it.
func (s *Server) judgeBudget(ch ChainStatus) string {
	if ch.RPCDailyBudget == 0 {
		return ""
	}
	now := s.clock().UTC()
	if over := ch.RPCRequestsToday - min(ch.RPCRequestsToday, ch.RPCDailyBudget); over > 0 {
		// Polled past the budget because payments wait on the network
		// (activities.OverBudgetPoll).
		return fmt.Sprintf("%s RPC budget overrun: %d requests past the day's %d, for payments waiting on it",
			ch.Network, over, ch.RPCDailyBudget)
	}
	share := min(1, now.Sub(now.Truncate(24*time.Hour)).Hours()/24+1.0/48)
	if float64(ch.RPCRequestsToday) <= share*float64(ch.RPCDailyBudget) {
		return ""
	}
	return fmt.Sprintf("%s RPC budget: %d of %d requests used by %s UTC, faster than the day allows; the scanner slows down to stay within it",
		ch.Network, ch.RPCRequestsToday, ch.RPCDailyBudget, now.Format("15:04"))
}
