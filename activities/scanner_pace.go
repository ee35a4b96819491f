package activities

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

// The scanner's pace: how long it waits between polls at the head, after
// failures, and while nothing waits on its network (issue 26: polled at
// its idle interval over long ranges, and woken as soon as a payment comes
// to wait).

// IdlePollInterval returns how often the scanner of network n polls while
// nothing on it waits (no watched payment, none in its late window): long
// enough that a batch spans many blocks (one log range or block range and
// one head read per poll), never shorter than the poll interval. The
// default is DefaultIdlePolls polls' worth of blocks on TRC20 (one
// GetBlockByLimitNext of 100 blocks, and the one transaction-info read per
// busy block that TRON's APIs need anyway), and DefaultEVMIdlePoll on EVM
// networks.
func (s *Scanner) IdlePollInterval(n paywatch.Network) time.Duration {
	d, ok := s.idle[n]
	if !ok || d <= 0 {
		if n.Family() == paywatch.FamilyTron {
			d = time.Duration(s.BatchBlocks(n)) * s.PollInterval(n)
		} else {
			d = DefaultEVMIdlePoll
		}
	}
	return max(d, s.PollInterval(n))
}

// waiting reports whether anything waits on the scan's network: a watched
// payment (pending, confirming, partial, or in its late window). When the
// database can't tell, it says yes: polling at block pace costs requests,
// idling could cost a payment its latency.
func (s *Scanner) waiting(ctx context.Context, st *scan) bool {
	ctx, cancel := context.WithTimeout(ctx, waitingTimeout)
	defer cancel()
	ok, err := s.store.Waiting(ctx, st.network)
	return ok || err != nil
}

// sleepIdle waits up to d, asking every wakeCheck whether something now
// waits on the network, and returns as soon as it does.
func (s *Scanner) sleepIdle(ctx context.Context, st *scan, d time.Duration, beat func()) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if err := sleep(ctx, min(left, s.wakeCheck), beat); err != nil {
			return err
		}
		beat() // sleep beats only within waits longer than maxWait
		if s.waiting(ctx, st) {
			st.log.Debug("a payment waits on the network; the scanner wakes")
			st.idle, st.progress.Idle = false, false
			return nil
		}
	}
}

// pollSteps is how finely a caught-up scanner looks for the next block:
// after a poll that found a new block it waits the poll interval less one
// step, then polls every step until the next block is there. So it sees a
// block at most one step after the chain made it, whatever the phase
// between the chain's blocks and its polls, for about one extra head read
// per block.
const pollSteps = 8

// nextPoll returns how long a caught-up scanner of network n waits before
// its next poll: most of the poll interval after a poll that found a new
// block (foundNew), one step of it otherwise.
func (s *Scanner) nextPoll(n paywatch.Network, foundNew bool) time.Duration {
	interval := s.PollInterval(n)
	step := max(interval/pollSteps, MinPollInterval)
	if !foundNew {
		return step
	}
	return max(interval-step, MinPollInterval)
}

// backoff returns how long to wait after the fails-th failure in a row:
// doubling from backoffMin to backoffMax (rate limits: from
// rateLimitBackoffMin to rateLimitBackoffMax), with ±20% jitter so that
// replicas and networks do not retry in step.
func backoff(err error, fails int) time.Duration {
	lo, hi := backoffMin, backoffMax
	if errors.Is(err, chains.ErrRateLimited) {
		lo, hi = rateLimitBackoffMin, rateLimitBackoffMax
	}
	d := lo
	for i := 1; i < fails && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	if after, ok := chains.RetryAfterOf(err); ok {
		// Every endpoint asked to wait: no sooner than they asked.
		d = max(d, after)
	}
	return d
}

// capped returns d, or less if the deadline (when set) comes sooner.
func (s *Scanner) capped(d time.Duration, deadline time.Time) time.Duration {
	if deadline.IsZero() {
		return d
	}
	return max(min(d, deadline.Sub(s.now())), 0)
}

// sleep waits d, calling beat at least every maxWait; it returns early with
// ctx's error when ctx ends.
func sleep(ctx context.Context, d time.Duration, beat func()) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(min(left, maxWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if time.Until(end) > 0 {
			beat()
		}
	}
}
