package chains

import (
	"math"
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
