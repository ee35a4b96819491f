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
// nothing on it waits (no payment in progress, no transfer confirming): long
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
// payment in progress (pending, confirming, partial) or a counted transfer
// awaiting its confirmations. When the
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

// pollSteps is how finely a caught-up scanner looks for a block that has
// not come yet: every interval/pollSteps until it is there.
const pollSteps = 8

// phaseProbe: a poll that finds a new block at once schedules the next one
// a 1/phaseProbe of a block sooner than the blocks' pace, so the polls
// creep towards the moment blocks appear until one comes too soon and
// looks again a step later. Between two such misses lie about
// (step/2)/(period/phaseProbe) = phaseProbe/16 blocks: one miss per 8
// blocks, 1.125 polls per block, for a block seen at most one step (on
// average a quarter step) after the chain made it.
const phaseProbe = 128

// periodWindow is how many blocks the tip pace measures the blocks'
// period over: long enough that the measurement's error (up to a step
// over the whole window) stays well below a 1/phaseProbe of a block.
const periodWindow = 64

// tipPace locks a caught-up scanner's polls onto its network's blocks
// (issue 26: one request per block at the tip, where polling every step
// costs two): each poll that finds a new block anchors the next one a
// block's time after its own start, less a 1/phaseProbe of it.
//
// The pace is the poll interval, or the blocks' measured period when they
// come slower than that (a chain slower than its nominal block time would
// make every other poll a miss); a chain faster than the interval is
// polled at the interval, each poll reading what came since, so a block
// waits at most one interval.
type tipPace struct {
	// anchor is the start of the last poll that found a new block, and
	// head the head it saw.
	anchor time.Time
	head   uint64
	// since and sinceHead start the window the period is measured over;
	// period is the last measurement, 0 until there is one.
	since     time.Time
	sinceHead uint64
	period    time.Duration
}

// next returns when the poll after one that started at start and saw head
// should start; interval is the network's poll interval and now the time.
func (p *tipPace) next(start, now time.Time, head uint64, interval time.Duration) time.Time {
	step := max(interval/pollSteps, MinPollInterval)
	if head < p.head {
		// Another endpoint, behind the last: anchor anew on it.
		p.reset()
	}
	if !p.anchor.IsZero() && head == p.head {
		// Not there yet: look again a step later.
		return maxTime(start.Add(step), now.Add(MinPollInterval))
	}
	switch {
	case p.since.IsZero() || head < p.sinceHead:
		p.since, p.sinceHead = start, head
	case head-p.sinceHead >= periodWindow:
		// A window across a halt or a stalled provider says little of the
		// blocks' pace: at most twice the interval.
		p.period = min(start.Sub(p.since)/time.Duration(head-p.sinceHead), 2*interval)
		p.since, p.sinceHead = start, head
	}
	p.anchor, p.head = start, head
	pace := max(interval, p.period)
	return maxTime(start.Add(pace-pace/phaseProbe), now.Add(MinPollInterval))
}

// reset forgets the anchor and the measurement window: the next poll that
// finds a block anchors anew (after an idle spell or a failure, the old
// anchor says nothing, and the time between says nothing of the blocks).
func (p *tipPace) reset() { *p = tipPace{period: p.period} }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
