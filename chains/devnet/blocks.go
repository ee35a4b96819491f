package devnet

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/paywatch/paywatch"
)

// blocksKept is how many of each chain's newest blocks MinedAt remembers.
const blocksKept = 16_384

// blockLog remembers when the newest blocks of each chain were mined, for
// MinedAt: benchmarks time what happens after a given block against it.
type blockLog struct {
	mu    sync.Mutex
	at    map[paywatch.Network]map[uint64]time.Time
	order map[paywatch.Network][]uint64
}

// record notes that blocks from..to of network n were mined at t; a height
// mined again (a reorg's new branch) takes the new time.
func (l *blockLog) record(n paywatch.Network, from, to uint64, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at = map[paywatch.Network]map[uint64]time.Time{}
		l.order = map[paywatch.Network][]uint64{}
	}
	at := l.at[n]
	if at == nil {
		at = map[uint64]time.Time{}
		l.at[n] = at
	}
	for h := from; h <= to && h >= from; h++ {
		if _, ok := at[h]; !ok {
			l.order[n] = append(l.order[n], h)
		}
		at[h] = t
	}
	if drop := len(l.order[n]) - blocksKept; drop > 0 {
		for _, h := range l.order[n][:drop] {
			delete(at, h)
		}
		l.order[n] = append([]uint64(nil), l.order[n][drop:]...)
	}
}

// MinedAt returns when block height of network n was mined (made
// available to the chain's RPC), for the newest 16,384 blocks of each chain;
// ok is false for an older or unknown block.
func (d *Devnet) MinedAt(n paywatch.Network, height uint64) (t time.Time, ok bool) {
	d.blocks.mu.Lock()
	defer d.blocks.mu.Unlock()
	t, ok = d.blocks.at[n][height]
	return t, ok
}

// interval returns the block interval of network n: Config.BlockIntervals,
// or Config.BlockInterval.
func (c Config) interval(n paywatch.Network) time.Duration {
	if d, ok := c.BlockIntervals[n]; ok {
		return d
	}
	return c.BlockInterval
}

// nextInterval returns the wait before the next block: mean, or with
// jitter a uniform draw from mean × [1 − jitter, 1 + jitter].
func nextInterval(mean time.Duration, jitter float64) time.Duration {
	if jitter <= 0 {
		return mean
	}
	return time.Duration(float64(mean) * (1 + jitter*(2*rand.Float64()-1)))
}

// finalizer is implemented by the chains whose blocks become final at a
// point the chain names (SOLANA) rather than at a depth.
type finalizer interface {
	// finalizingBlock returns the block whose making finalized block
	// height; ok is false while none has yet.
	finalizingBlock(height uint64) (uint64, bool)
}

// ConfirmingBlock returns the block of network n that gave block height
// its network's confirmations: height + confirmations − 1, or on a chain
// that names its final block (SOLANA) the one whose making finalized it
// (32 blocks above, skipped slots not counted). ok is false for an
// unknown network, or while no block has finalized height yet.
func (d *Devnet) ConfirmingBlock(n paywatch.Network, height uint64) (uint64, bool) {
	c, ok := d.chains[n]
	if !ok {
		return 0, false
	}
	if f, ok := c.(finalizer); ok {
		return f.finalizingBlock(height)
	}
	info, _ := paywatch.LookupNetwork(n)
	return height + uint64(max(info.Confirmations, 1)) - 1, true
}
