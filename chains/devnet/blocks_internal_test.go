package devnet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Jittered intervals stay within mean × [1 − jitter, 1 + jitter] and use
// the whole range; without jitter the pace is steady.
func TestNextIntervalJitter(t *testing.T) {
	mean := time.Second
	assert.Equal(t, mean, nextInterval(mean, 0))
	lo, hi := mean, mean
	for range 2000 {
		d := nextInterval(mean, 0.5)
		assert.GreaterOrEqual(t, d, mean/2)
		assert.LessOrEqual(t, d, mean*3/2)
		lo, hi = min(lo, d), max(hi, d)
	}
	assert.Less(t, lo, 600*time.Millisecond)
	assert.Greater(t, hi, 1400*time.Millisecond)
}
