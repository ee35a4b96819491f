package chains

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// An endpoint of a quorum that lacks a block other endpoints have shown is
// behind, and the quorum waits for it: providers differ by a block or two
// all the time. But an endpoint that stays behind (a node that stopped
// syncing, a provider that answers every newer block with null) would make
// the quorum wait for ever, the payments' confirmations with it, and look
// like a quiet chain while it did. So the wait has a limit, Config.QuorumLag
// (default defaultQuorumLag):
//
//   - A head is "shown" once k endpoints have given it or a higher one,
//     k = min(Quorum, endpoints − 1): with two endpoints, one is enough to
//     show that the other is stuck; with more, a single endpoint that
//     claims a head far ahead (a liar, a node of a reset chain) shows
//     nothing, and so cannot make the honest ones look stuck.
//   - An endpoint counts with the highest head it gave within the last
//     limit (or its last head, when older), not only its last one: an
//     endpoint that now and then answers a low head (a load balancer that
//     sometimes picks a backend resyncing from scratch) would otherwise
//     lower the shown head with each low answer, and so restart the clock
//     of a stuck endpoint before it ever ran out. A head given by a liar
//     is forgotten a limit after the liar stops giving it, and endpoints
//     that all went back (a reset chain) show their lower heads, from
//     then on, a limit after they last gave the higher ones; until then
//     they count as behind.
//   - Block n is overdue once a head ≥ n was shown more than the limit ago.
//     An endpoint's "no block n" (BlockHash, ReadBatch, a range of
//     transfers, a transaction in block n) is then an error, not a block
//     to wait for.
//   - An endpoint whose own head is below a head shown more than the limit
//     ago counts as failing: Head leaves it out, and its tip read's "not
//     yet" is an error.
//   - Head asks Quorum endpoints, and one more for each of them that is
//     suspect: behind a head any one endpoint gave more than the limit ago.
//     So with a stuck endpoint among those asked, the spare endpoints
//     settle the head at once, and show the higher head that judges the
//     stuck one after another limit.
//
// Such an error is not ErrBlockNotFound: the quorum is made of the others,
// or, when too few are left, the read fails as unavailable, which the
// scanner backs off from and /health names.

// defaultQuorumLag is Config.QuorumLag's default.
const defaultQuorumLag = 2 * time.Minute

// errLagging is the error of an endpoint that has been behind for longer
// than the quorum's lag limit.
var errLagging = errors.New("behind the other endpoints for too long")

// progress records when each head was first shown by any endpoint of a
// quorum, as far back as the lag limit needs.
type progress struct {
	limit time.Duration

	mu sync.Mutex
	// marks are increasing heads, each with when it was first shown; the
	// first may be older than limit (the ones before it are dropped).
	marks []mark
}

type mark struct {
	head uint64
	at   time.Time
}

// observe records that head is shown at now. A shown head below the
// newest mark (the endpoints went back: a reset chain, a failover to older
// nodes) drops the marks above it, so that they no longer count.
func (p *progress) observe(head uint64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n := len(p.marks); n > 0 && p.marks[n-1].head > head; n-- {
		p.marks = p.marks[:n-1]
	}
	if n := len(p.marks); n == 0 || head > p.marks[n-1].head {
		p.marks = append(p.marks, mark{head, now})
	}
	// Keep the newest mark older than limit: a head below it has been
	// behind for at least that long.
	drop := 0
	for drop+1 < len(p.marks) && now.Sub(p.marks[drop+1].at) > p.limit {
		drop++
	}
	if drop > 0 {
		p.marks = slices.Delete(p.marks, 0, drop)
	}
}

// behindFor returns how long a head above head has been known (0 when
// none is).
func (p *progress) behindFor(head uint64, now time.Time) time.Duration {
	if head == math.MaxUint64 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The first mark above head: the first head above it that is known, or
	// (the first mark) one shown before the marks kept began.
	i, _ := slices.BinarySearchFunc(p.marks, head+1, func(m mark, h uint64) int { return cmp.Compare(m.head, h) })
	if i == len(p.marks) {
		return 0
	}
	return now.Sub(p.marks[i].at)
}

// maxRecent is how many heads an endpoint's recent list keeps at most:
// only an endpoint whose every answer is lower than the one before makes
// it grow, and then the highest is the one that matters.
const maxRecent = 32

// endpointHeads is the heads one endpoint of a quorum gave.
type endpointHeads struct {
	given bool
	last  uint64
	// recent are heads it gave within the last limit, each with when,
	// lower than the one before: each head until a head as high comes.
	// The first is the highest of the limit.
	recent []mark
}

// note records head, given at now.
func (e *endpointHeads) note(head uint64, now time.Time) {
	e.given, e.last = true, head
	n := len(e.recent)
	for n > 0 && e.recent[n-1].head <= head {
		n--
	}
	e.recent = append(e.recent[:n], mark{head, now})
	if len(e.recent) > maxRecent {
		e.recent = slices.Delete(e.recent, 1, 2)
	}
}

// counted returns the head the endpoint counts with at now: the highest
// it gave within the last limit, or its last when that is older; ok is
// false for an endpoint that gave none.
func (e *endpointHeads) counted(now time.Time, limit time.Duration) (head uint64, ok bool) {
	drop := 0
	for drop < len(e.recent) && now.Sub(e.recent[drop].at) > limit {
		drop++
	}
	e.recent = slices.Delete(e.recent, 0, drop)
	if len(e.recent) > 0 {
		return max(e.last, e.recent[0].head), e.given
	}
	return e.last, e.given
}

// noteHead records the head endpoint ep gave, the highest of the heads
// the endpoints count with (seen), and the head now shown (progress: the
// k-th highest). It holds headsMu throughout: a note that counted the
// heads before another endpoint's newer one and recorded after it would
// take the shown head back, and restart the clock of the endpoints
// behind it.
func (qc *quorumClient) noteHead(ep int, head uint64) {
	qc.headsMu.Lock()
	defer qc.headsMu.Unlock()
	now := time.Now()
	qc.heads[ep].note(head, now)
	heads := make([]uint64, 0, len(qc.heads))
	for i := range qc.heads {
		if h, ok := qc.heads[i].counted(now, qc.progress.limit); ok {
			heads = append(heads, h)
		}
	}
	slices.Sort(heads)
	qc.seen.observe(heads[len(heads)-1], now)
	if k := min(qc.q, len(qc.eps)-1); len(heads) >= k {
		qc.progress.observe(heads[len(heads)-k], now)
	}
}

// lastHead returns the last head endpoint ep gave; ok is false when it
// gave none yet.
func (qc *quorumClient) lastHead(ep int) (head uint64, ok bool) {
	qc.headsMu.Lock()
	defer qc.headsMu.Unlock()
	return qc.heads[ep].last, qc.heads[ep].given
}

// lagErr returns errLagging, with the endpoint's head and for how long a
// higher one has been shown, when endpoint ep's last head is below a head
// shown more than the lag limit ago, and nil otherwise (and for an
// endpoint that gave no head yet).
func (qc *quorumClient) lagErr(ep int) error {
	h, ok := qc.lastHead(ep)
	if !ok {
		return nil
	}
	if d := qc.progress.behindFor(h, time.Now()); d > qc.progress.limit {
		return fmt.Errorf("its head %d, a newer block shown %s ago: %w", h, d.Round(time.Second), errLagging)
	}
	return nil
}

// suspect reports whether endpoint ep's last head is below a head any
// one endpoint gave more than the lag limit ago.
func (qc *quorumClient) suspect(ep int) bool {
	h, ok := qc.lastHead(ep)
	return ok && qc.seen.behindFor(h, time.Now()) > qc.seen.limit
}

// overdue returns errLagging when block n is overdue: a head ≥ n was
// shown more than the lag limit ago.
func (qc *quorumClient) overdue(n uint64) error {
	if n == 0 {
		return nil
	}
	if d := qc.progress.behindFor(n-1, time.Now()); d > qc.progress.limit {
		return fmt.Errorf("block %d, shown %s ago, still missing: %w", n, d.Round(time.Second), errLagging)
	}
	return nil
}

// missing vets an endpoint's "no block n" (err wrapping ErrBlockNotFound,
// or notFound true): for an overdue block it is an error, which is not
// ErrBlockNotFound, so the read does not wait for it.
func (qc *quorumClient) missing(n uint64, notFound bool, err error) error {
	if !notFound && !errors.Is(err, ErrBlockNotFound) {
		return err
	}
	if lag := qc.overdue(n); lag != nil {
		return fmt.Errorf("%w (%s)", lag, errText(err))
	}
	return err
}

// errText is err's text, or "not found" for none.
func errText(err error) string {
	if err == nil {
		return "not found"
	}
	return err.Error()
}
