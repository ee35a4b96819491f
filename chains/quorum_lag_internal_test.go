package chains

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// progress answers how long a head has been behind: from when the first
// head above it was shown, kept for heads below the trimmed marks, reset
// when the shown head goes back, and 0 for a head nothing is above.
func TestProgressBehindFor(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	p := &progress{limit: time.Minute}
	p.observe(10, t0)
	p.observe(11, t0.Add(10*time.Second))
	p.observe(11, t0.Add(20*time.Second)) // no news
	p.observe(15, t0.Add(30*time.Second))
	now := t0.Add(40 * time.Second)
	assert.Equal(t, time.Duration(0), p.behindFor(15, now), "nothing above the newest")
	assert.Equal(t, 10*time.Second, p.behindFor(11, now), "15 shown at 30 s")
	assert.Equal(t, 30*time.Second, p.behindFor(10, now), "11 shown at 10 s")
	assert.Equal(t, 40*time.Second, p.behindFor(3, now), "10, the first mark, shown at 0 s")
	assert.Equal(t, time.Duration(0), p.behindFor(math.MaxUint64, now))

	// Marks older than the limit go, but the newest of them stays: a head
	// below it has been behind for at least that long.
	p.observe(20, t0.Add(5*time.Minute))
	now = t0.Add(5*time.Minute + time.Second)
	assert.Len(t, p.marks, 2)
	assert.Equal(t, 5*time.Minute-29*time.Second, p.behindFor(11, now), "15, kept, shown at 30 s")
	assert.Greater(t, p.behindFor(3, now), p.limit)

	// The shown head going back (a reset chain) drops the marks above it:
	// a head below it is behind from now on.
	p.observe(12, now)
	assert.Equal(t, time.Duration(0), p.behindFor(12, now))
	assert.Equal(t, time.Duration(0), p.behindFor(11, now))
	assert.Equal(t, time.Second, p.behindFor(11, now.Add(time.Second)))
}

// Endpoints noting their heads at the same time never make a head look
// shown later than it was: each head's mark is no later than the moment
// the k-th endpoint (here the second of three) had given it, however the
// notes interleave. (A note that computed the shown head before another
// endpoint's newer head and recorded it after used to drop that newer
// mark, restarting the lag clock of the endpoints behind it.)
func TestQuorumNoteHeadConcurrently(t *testing.T) {
	const eps, top = 3, 3000
	qc := &quorumClient{q: 3, eps: make([]Client, eps), heads: make([]endpointHeads, eps),
		progress: &progress{limit: time.Hour}, seen: &progress{limit: time.Hour}}
	// done[ep][h] is when endpoint ep's note of head h returned.
	done := make([][]time.Time, eps)
	var wg sync.WaitGroup
	for ep := range eps {
		done[ep] = make([]time.Time, top+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := uint64(1); h <= top; h++ {
				qc.noteHead(ep, h)
				done[ep][h] = time.Now()
			}
		}()
	}
	wg.Wait()
	for h := uint64(1); h <= top; h++ {
		at := []time.Time{done[0][h], done[1][h], done[2][h]}
		slices.SortFunc(at, time.Time.Compare)
		shown := at[1] // two endpoints at h or above
		if d := qc.progress.behindFor(h-1, shown); d < 0 {
			t.Fatalf("head %d shown %s after two endpoints had given it", h, -d)
		}
	}
	assert.Equal(t, time.Duration(0), qc.progress.behindFor(top, time.Now()))
	assert.Positive(t, qc.progress.behindFor(top-1, time.Now()))
}

// Endpoints that all went back (a reset chain, a failover to older nodes)
// count with their higher heads for as long as the limit after they last
// gave them, and so are behind until then; after it, the lower heads are
// shown and nobody lags. One endpoint's momentary low head lowers nothing.
func TestQuorumEndpointsThatWentBackReanchor(t *testing.T) {
	const lag = 200 * time.Millisecond
	qc := &quorumClient{q: 2, eps: make([]Client, 3), heads: make([]endpointHeads, 3),
		progress: &progress{limit: lag}, seen: &progress{limit: lag}}
	noteAll := func(head uint64) {
		for ep := range 3 {
			qc.noteHead(ep, head)
		}
	}
	noteAll(100)
	qc.noteHead(0, 0)
	time.Sleep(lag + 50*time.Millisecond)
	qc.noteHead(0, 0)
	assert.ErrorIs(t, qc.lagErr(0), errLagging, "its momentary 0 did not restart the clock")
	noteAll(100)
	noteAll(10)
	for ep := range 3 {
		assert.ErrorIs(t, qc.lagErr(ep), errLagging, "100 was shown more than the limit ago, and given just now")
	}
	time.Sleep(lag + 50*time.Millisecond)
	noteAll(10)
	for ep := range 3 {
		assert.NoError(t, qc.lagErr(ep), "re-anchored at 10")
	}
}
