package activities

import (
	"context"
	"sync"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

// A daily RPC budget per network (PAYWATCH_<NETWORK>_DAILY_BUDGET, issue
// 26): the scanner spends it evenly over the UTC day. At any moment it may
// have used the day's share so far plus budgetSlack of the day's budget,
// and never the whole budget; past that it waits until the share has
// caught up. Requests saved while nothing waits (idle polling) are there to
// spend later in the day.
//
// What counts is every HTTP request of the network's chain client in the
// scanner's process (chains.Calls; a JSON-RPC batch is one): the scanner's
// own, and the head reads of payment creations and the transfer checks
// made there. The Scanner adds them to the day's count in PostgreSQL
// (store.AddRPCUsage) every budgetSync and when a run ends, and reads the
// total back, so a scanner that takes over a network goes on from what the
// day has used.

// budgetSync is how often a scanner adds its requests to the day's count.
const budgetSync = 30 * time.Second

// budgetSlack is the part of the day's budget a scanner may be ahead of
// the even pace: half an hour's share.
const budgetSlack = 1.0 / 48

// maxBudgetWait bounds one wait for the budget, so the scanner heartbeats
// and looks again at least that often.
const maxBudgetWait = 10 * time.Second

// OverBudgetPoll is the slowest the scanner of a network polls while a
// payment waits on it, whatever its daily budget says (issue 37): the
// budget paces an idle network and may slow a busy one down to this, but
// never stops it, so a waiting payment's transfer is read within this
// (and the batch's read) of its block. A day of it costs about 2,880
// polls of a few requests each; what that takes beyond the budget shows
// on /health (degraded) and in paywatch_rpc_budget_overrun_requests.
const OverBudgetPoll = 30 * time.Second

// netUsage is the Scanner's count of one network's RPC requests, shared by
// all its runs (a run ends every few minutes; two can overlap when a retry
// races the attempt it replaces), so each request is added to the day's
// count once.
type netUsage struct {
	mu sync.Mutex
	// base is the client's call count already added (or pending).
	base uint64
	// pending is requests not yet added: a failed write keeps them here.
	pending uint64
	// total is the day's count in PostgreSQL after the last write, day
	// that day (UTC midnight), synced when it was written.
	total  uint64
	day    time.Time
	synced time.Time
}

// DailyBudget returns network n's daily request budget; 0 means none.
func (s *Scanner) DailyBudget(n paywatch.Network) uint64 { return s.budget[n] }

// BudgetWait returns how long a scanner that has used used requests of a
// daily budget of limit at time at must wait before its next request: 0
// within the day's share so far plus budgetSlack (at most the whole
// budget), else until the share reaches used, or until the day ends when
// the whole budget is used.
func BudgetWait(limit, used uint64, at time.Time) time.Duration {
	if limit == 0 {
		return 0
	}
	day := at.UTC().Truncate(24 * time.Hour)
	elapsed := at.Sub(day)
	if used >= limit {
		return 24*time.Hour - elapsed
	}
	share := float64(used)/float64(limit) - budgetSlack // of the day, when used is allowed
	due := time.Duration(share * float64(24*time.Hour))
	if due <= elapsed {
		return 0
	}
	return due - elapsed
}

// usageOf returns the Scanner's count of network n.
func (s *Scanner) usageOf(n paywatch.Network) *netUsage {
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	u, ok := s.usage[n]
	if !ok {
		u = &netUsage{}
		s.usage[n] = u
	}
	return u
}

// syncUsage adds the requests the network's client made since the last
// sync to the day's count, at most every budgetSync unless force. A failed
// write keeps them for the next sync.
func (s *Scanner) syncUsage(ctx context.Context, st *scan, force bool) {
	if st.client == nil {
		return
	}
	u := s.usageOf(st.network)
	u.mu.Lock()
	defer u.mu.Unlock()
	now := s.now()
	if !force && now.Sub(u.synced) < budgetSync {
		return
	}
	calls := chains.Calls(st.client)
	if calls > u.base {
		u.pending += calls - u.base
	}
	u.base = calls
	if u.pending == 0 && !force && sameDay(u.day, now) {
		u.synced = now
		return
	}
	ctx, cancel := context.WithTimeout(ctx, waitingTimeout)
	defer cancel()
	total, err := s.store.AddRPCUsage(ctx, st.network, now, u.pending, s.budget[st.network])
	if err != nil {
		st.log.Debug("recording RPC usage failed; the next sync adds it", "error", err)
		return
	}
	u.pending, u.total, u.synced = 0, total, now
	u.day = now.UTC().Truncate(24 * time.Hour)
}

// budgetWait returns how long the scan must wait to stay within its
// network's daily budget (BudgetWait), logging when it starts and stops
// waiting.
func (s *Scanner) budgetWait(st *scan) time.Duration {
	limit := s.budget[st.network]
	if limit == 0 || st.client == nil {
		return 0
	}
	u := s.usageOf(st.network)
	u.mu.Lock()
	now := s.now()
	calls := chains.Calls(st.client)
	used := u.pending + calls - min(calls, u.base)
	if sameDay(u.day, now) {
		used += u.total
	}
	u.mu.Unlock()
	w := BudgetWait(limit, used, now)
	switch {
	case w > 0 && !st.overBudget:
		st.log.Warn("the network's daily RPC budget is being spent faster than the day allows; the scanner slows down to stay within it",
			"used", used, "budget", limit, "wait", w.Round(time.Second))
	case w == 0 && st.overBudget:
		st.log.Info("the scanner is back within its daily RPC budget", "used", used, "budget", limit)
		st.overrun = false
	}
	st.overBudget = w > 0
	st.progress.OverBudget = w > 0
	return w
}

// overBudgetWait returns how long the scan waits before its next poll
// for its daily budget (budgetWait), at most maxBudgetWait at a time:
// while nothing waits on the network, as long as the budget asks; while a
// payment waits, not at all while the scan is more than a batch behind
// the head it saw (a cursor left hours behind by a day over budget is read
// back to back, not one batch per OverBudgetPoll), then no longer than
// OverBudgetPoll after the last poll began: the next poll reads in one
// batch whatever came meanwhile.
func (s *Scanner) overBudgetWait(ctx context.Context, st *scan) time.Duration {
	w := s.budgetWait(st)
	if w == 0 {
		return 0
	}
	if s.waiting(ctx, st) {
		left := s.overPoll - time.Since(st.polled)
		if st.head > st.height+s.BatchBlocks(st.network) {
			left = 0 // more behind than one batch reads: catch up first
		}
		if left <= 0 {
			if !st.overrun {
				st.log.Warn("a payment waits on the network: the scanner polls past its daily RPC budget, every "+s.overPoll.String(),
					"budget", s.budget[st.network])
			}
			st.overrun = true
			return 0
		}
		w = min(w, left)
	}
	return min(w, maxBudgetWait)
}

func sameDay(a, b time.Time) bool {
	return !a.IsZero() && a.Equal(b.UTC().Truncate(24*time.Hour))
}
