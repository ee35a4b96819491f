package activities

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

// The close of a late window (FinalCheck with Until, issue 37): the last
// block mined before the window's end, and how long a scanner at work is
// waited for.

// scannerAlive is how recently a network's scanner must have moved its
// cursor for the check at a late window's end to wait for it rather than
// read the blocks after the cursor itself: longer than an idle TRC20
// scanner's poll (100 blocks, 5 minutes).
const scannerAlive = 10 * time.Minute

// lastBlockBefore returns the last block in [start−1, head] mined before
// until, by the blocks' timestamps (start−1: none of the window's blocks
// is). It fails while the head itself was mined before until: the chain
// may still add blocks before that moment, so the window cannot be read
// whole yet (a node behind, a chain halted). The search starts from an
// estimate at the network's block time, twice as far back as the head's
// age past until says, and bisects from there: about 8 block reads when
// until is a minute or so behind the head, log2(head − start) at most.
func (a *Activities) lastBlockBefore(ctx context.Context, c chains.Client, until time.Time, start, head uint64) (uint64, error) {
	bt, ok := c.(chains.BlockTimer)
	if !ok {
		return 0, fmt.Errorf("the %s client reads no block times", c.Network())
	}
	t, err := bt.BlockTime(ctx, head)
	if err != nil {
		return 0, err
	}
	if t.Before(until) {
		return 0, fmt.Errorf("%s: the newest block %d was mined at %s, before %s: the window is not over on chain yet",
			c.Network(), head, t.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	}
	// Invariant: block hi was mined at or after until; every block below
	// lo was mined before it.
	lo, hi := start, head
	info, _ := paywatch.LookupNetwork(c.Network())
	blockTime := cmp.Or(a.blockTimes[c.Network()], info.BlockTime)
	if back := uint64(2*t.Sub(until)/max(blockTime, time.Millisecond)) + 1; back < hi-lo {
		guess := hi - back
		gt, err := bt.BlockTime(ctx, guess)
		if err != nil {
			return 0, err
		}
		if gt.Before(until) {
			lo = guess + 1
		} else {
			hi = guess
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		t, err := bt.BlockTime(ctx, mid)
		if err != nil {
			return 0, err
		}
		if t.Before(until) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1, nil
}

// ErrTypeScannerBehind is the error type of a late window's check that
// waits for the network's scanner to read past the window's end: not
// retried by the activity (nothing changes within seconds), tried again
// by the workflow a minute later.
const ErrTypeScannerBehind = "ScannerBehind"

// scannerBehind is the error of a check that waits for the scanner.
func scannerBehind(n paywatch.Network, height uint64, until time.Time) error {
	msg := fmt.Sprintf("%s: the scanner has read up to block %d, not yet past the late window's end %s; checked again once it is",
		n, height, until.UTC().Format(time.RFC3339))
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeScannerBehind, nil)
}

// estimatedBlockAt is a block that was surely mined at or before until on
// network n, whose head is head now: twice as many blocks back from the
// head as the time since until holds at the network's block time (bt, or
// its nominal one), so a chain up to twice as fast as that is still
// placed no later than the truth. 0 when until is in the future.
func estimatedBlockAt(n paywatch.Network, bt time.Duration, until, now time.Time, head uint64) uint64 {
	info, _ := paywatch.LookupNetwork(n)
	bt = cmp.Or(bt, info.BlockTime)
	if !now.After(until) || bt <= 0 {
		return 0
	}
	back := uint64(2 * now.Sub(until) / bt)
	if back >= head {
		return 0
	}
	return head - back
}
