package activities

import (
	"cmp"
	"context"
	"fmt"
	"time"

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
