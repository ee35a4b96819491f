package api

import (
	"context"
	"net/http"
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
}

// HealthResponse is the body of GET /health (operations.md §3).
type HealthResponse struct {
	Status        string            `json:"status"`
	UptimeSeconds int64             `json:"uptime_seconds"`
	Version       string            `json:"version"`
	Checks        map[string]string `json:"checks"`
	Chains        []ChainStatus     `json:"chains"`
}

// Health values of HealthResponse.Status and of each check.
const (
	HealthOK       = "ok"
	HealthDegraded = "degraded"
	HealthDraining = "draining"
	CheckUp        = "up"
	CheckDown      = "down"
)

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
		w, err := s.deps.Store.HitRate(ctx, "ip:health:"+c.RealIP(), time.Minute)
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
	resp.Status = HealthOK
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
			if state != CheckUp {
				resp.Status = HealthDegraded
			}
		}()
	}
	wg.Wait()
	if s.deps.Chains != nil {
		chains, err := s.deps.Chains(ctx)
		if err != nil {
			resp.Status = HealthDegraded
		}
		if chains != nil {
			resp.Chains = chains
		}
	}
	return c.JSON(http.StatusOK, resp)
}
