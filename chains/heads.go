package chains

import (
	"context"
	"sync"
	"time"

	"github.com/paywatch/paywatch"
)

// headTimeout bounds one head lookup made for an address assignment, which
// runs while a payment's creation waits.
const headTimeout = 3 * time.Second

// Heads reads the chain head of each network of a Set for address
// assignments: a payment's start block is the head when its address is
// assigned, so that a transfer mined before then to a reused address (pool,
// per_user, dedicated) never counts for it, however far a scanner lags. A
// head read within one poll interval is reused, so a burst of creations
// costs one RPC call per network and block; concurrent callers share one
// call. It is safe for concurrent use.
type Heads struct {
	set    *Set
	maxAge func(paywatch.Network) time.Duration
	now    func() time.Time

	mu    sync.Mutex
	locks map[paywatch.Network]*sync.Mutex
	last  map[paywatch.Network]cachedHead
}

// cachedHead is a head, or the error of reading it, and when it was read.
// An error is kept as long as a head, so that while a chain cannot be read
// one creation per interval waits for the timeout, not every creation.
type cachedHead struct {
	head uint64
	err  error
	at   time.Time
}

// NewHeads returns Heads over set; maxAge gives how long a network's head
// may be reused (its block or poll interval).
func NewHeads(set *Set, maxAge func(paywatch.Network) time.Duration) *Heads {
	return &Heads{set: set, maxAge: maxAge, now: time.Now,
		locks: map[paywatch.Network]*sync.Mutex{}, last: map[paywatch.Network]cachedHead{}}
}

// Head returns network n's current head, read from its client or reused,
// like the error of a failed read, from a read less than the network's max
// age ago.
func (h *Heads) Head(ctx context.Context, n paywatch.Network) (uint64, error) {
	h.mu.Lock()
	l, ok := h.locks[n]
	if !ok {
		l = &sync.Mutex{}
		h.locks[n] = l
	}
	h.mu.Unlock()

	l.Lock()
	defer l.Unlock()
	h.mu.Lock()
	c, ok := h.last[n]
	h.mu.Unlock()
	if ok && h.now().Sub(c.at) < h.maxAge(n) {
		return c.head, c.err
	}
	client, err := h.set.Client(n)
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, headTimeout)
	defer cancel()
	at := h.now()
	head, err := client.Head(rctx)
	if err != nil && ctx.Err() != nil {
		return 0, err // the caller gave up: says nothing of the chain
	}
	h.mu.Lock()
	h.last[n] = cachedHead{head: head, err: err, at: at}
	h.mu.Unlock()
	return head, err
}
