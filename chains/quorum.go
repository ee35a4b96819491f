package chains

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// A quorum client (Config.Quorum ≥ 2) reads a network from several
// providers that each may be wrong, and takes an answer only when Quorum
// of them gave it, field for field: the same block hashes, the same
// transfers (transaction, log index, block number and hash, token and
// contract, sender, recipient, amount). A head is the Quorum-th highest
// of the endpoints' heads, the slowest of the agreeing ones, so a
// transfer's confirmations are counted as the slower provider sees them.
//
// Each endpoint is a client of its own, without failover. A read asks
// Quorum endpoints side by side; an endpoint that fails, or answers
// otherwise than the others, is replaced by one not asked yet (when the
// configuration has more endpoints than the quorum), and endpoints that
// failed or dissented in the last minute are asked last. Endpoints that
// disagree with no Quorum of them agreeing give ErrIncompleteRead, which
// the scanner treats like a batch read in part: nothing is recorded, the
// cursor stays, and the next poll reads again. An endpoint that has not
// reached a block yet makes the block wait for it: ReadBatch gives
// ErrBlockNotFound, ReadTip Found = false with the lower head, and
// TransactionTransfers found = false; for Config.QuorumLag at most, after
// which it counts as failing (quorum_lag.go).
//
// It costs about Quorum times the requests of one endpoint.

// restAfterFailure is how long an endpoint that failed or dissented is
// asked after the others.
const restAfterFailure = time.Minute

// quorumClient is the Client of a Config with Quorum ≥ 2.
type quorumClient struct {
	network paywatch.Network
	q       int
	eps     []Client
	names   []string
	// failedAt is, per endpoint, when it last failed or dissented (unix
	// nanoseconds; 0: never).
	failedAt []atomic.Int64
	// headsMu guards heads: per endpoint, the last head it gave and its
	// highest of the last lag limit. progress is when each head was first
	// shown by k endpoints, seen when first given by any (quorum_lag.go).
	headsMu        sync.Mutex
	heads          []endpointHeads
	progress, seen *progress
}

var (
	_ Client             = (*quorumClient)(nil)
	_ BatchReader        = (*quorumClient)(nil)
	_ TipReader          = (*quorumClient)(nil)
	_ CallCounter        = (*quorumClient)(nil)
	_ AddressRangeReader = (*quorumClient)(nil)
	_ BlockTimer         = (*quorumClient)(nil)
	_ chainapi.Checker   = (*quorumClient)(nil)
)

// dialQuorum dials one single-endpoint client per URL of cfg and returns
// the quorum client over them.
func dialQuorum(ctx context.Context, cfg Config) (Client, error) {
	lag := cfg.QuorumLag
	if lag <= 0 {
		lag = defaultQuorumLag
	}
	qc := &quorumClient{network: cfg.Network, q: cfg.Quorum, failedAt: make([]atomic.Int64, len(cfg.URLs)),
		heads: make([]endpointHeads, len(cfg.URLs)), progress: &progress{limit: lag}, seen: &progress{limit: lag}}
	for i := range cfg.URLs {
		c, err := Dial(ctx, one(cfg, i))
		if err != nil {
			qc.Close()
			return nil, err
		}
		qc.eps = append(qc.eps, c)
		qc.names = append(qc.names, chainapi.NewRedactor(cfg.URLs[i], cfg.HeadersOf(i)).Name())
	}
	if aq, perAccount, err := accountQuorumOf(qc); perAccount {
		if err != nil {
			qc.Close()
			return nil, err
		}
		return aq, nil
	}
	for _, c := range qc.eps {
		_, tip := c.(TipReader)
		_, rr := c.(AddressRangeReader)
		_, ck := c.(chainapi.Checker)
		if !tip || !rr || !ck {
			qc.Close()
			return nil, fmt.Errorf("chains: %s: a quorum needs clients that read the tip and address ranges", cfg.Network)
		}
	}
	return qc, nil
}

// Network returns the network the client reads.
func (qc *quorumClient) Network() paywatch.Network { return qc.network }

// Calls returns the requests of every endpoint.
func (qc *quorumClient) Calls() uint64 {
	var n uint64
	for _, c := range qc.eps {
		n += Calls(c)
	}
	return n
}

// Close closes every endpoint's client.
func (qc *quorumClient) Close() {
	for _, c := range qc.eps {
		c.Close()
	}
}

// answer is one endpoint's answer.
type answer[T any] struct {
	ep int
	v  T
}

// order returns the endpoints in the order to ask them: configuration
// order, those that failed or dissented lately last (the longest ago
// first).
func (qc *quorumClient) order() []int {
	now := time.Now().UnixNano()
	out := make([]int, len(qc.eps))
	for i := range out {
		out[i] = i
	}
	resting := func(i int) int64 {
		if at := qc.failedAt[i].Load(); at > now-int64(restAfterFailure) {
			return at
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b int) int {
		ra, rb := resting(a), resting(b)
		switch {
		case ra == rb:
			return 0
		case ra < rb:
			return -1
		}
		return 1
	})
	return out
}

// gather asks endpoints for read, Quorum of them side by side, then as
// many more as more says its answers still lack, until more says none or
// every endpoint was asked. It returns the answers and the endpoints'
// errors, each naming its endpoint.
func gather[T any](ctx context.Context, qc *quorumClient, more func([]answer[T]) int, read func(ctx context.Context, ep int) (T, error)) ([]answer[T], []error) {
	order := qc.order()
	var answers []answer[T]
	var errs []error
	next := 0
	for n := qc.q; n > 0 && next < len(order) && ctx.Err() == nil; n = more(answers) {
		round := order[next:min(next+n, len(order))]
		next += len(round)
		vals := make([]T, len(round))
		es := make([]error, len(round))
		var wg sync.WaitGroup
		for i, ep := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				vals[i], es[i] = read(ctx, ep)
			}()
		}
		wg.Wait()
		for i, ep := range round {
			if es[i] != nil {
				if ctx.Err() == nil { // a cancelled read says nothing of the endpoint
					qc.failedAt[ep].Store(time.Now().UnixNano())
				}
				errs = append(errs, fmt.Errorf("%s: %w", qc.names[ep], es[i]))
				continue
			}
			answers = append(answers, answer[T]{ep: ep, v: vals[i]})
		}
	}
	return answers, errs
}

// agreeing is gather's more for reads that need Quorum equal answers.
func agreeing[T any](qc *quorumClient, key func(T) string) func([]answer[T]) int {
	return func(as []answer[T]) int { return qc.q - len(largest(as, key)) }
}

// largest returns the largest group of answers with equal keys (the
// first-answered group of a tie).
func largest[T any](as []answer[T], key func(T) string) []answer[T] {
	groups := map[string][]answer[T]{}
	var best []answer[T]
	for _, a := range as {
		k := key(a.v)
		groups[k] = append(groups[k], a)
		if len(groups[k]) > len(best) {
			best = groups[k]
		}
	}
	return best
}

// decide returns the Quorum (or more) equal answers among as, and marks
// the endpoints that answered otherwise as dissenters. Without them it
// returns ErrIncompleteRead naming what two endpoints disagreed on, or,
// when too few endpoints answered, short's error.
func decide[T any](qc *quorumClient, what string, as []answer[T], errs []error, key func(T) string, diff func(a, b T) string) ([]answer[T], error) {
	group := largest(as, key)
	if len(group) >= qc.q {
		k := key(group[0].v)
		for _, a := range as {
			if key(a.v) != k {
				qc.failedAt[a.ep].Store(time.Now().UnixNano())
			}
		}
		return group, nil
	}
	for i := 1; i < len(as); i++ {
		if a := as[i]; key(a.v) != key(as[0].v) {
			return nil, qc.disagree(what, as[0].ep, a.ep, diff(as[0].v, a.v))
		}
	}
	return nil, qc.short(what, len(as), errs)
}

// disagree is the error of two endpoints' different answers.
func (qc *quorumClient) disagree(what string, a, b int, diff string) error {
	return fmt.Errorf("chains: %s %s: endpoints %s and %s disagree (quorum %d): %s: %w",
		qc.network, what, qc.names[a], qc.names[b], qc.q, diff, ErrIncompleteRead)
}

// short is the error of a read that fewer than Quorum endpoints answered:
// the endpoints' errors, joined, so that errors.Is finds what they wrapped
// (ErrBlockNotFound when every endpoint that failed lacks the block: one
// behind the others; ErrIncompleteRead, ErrRateLimited), under
// ErrUnavailable unless every endpoint asked was rate limited.
func (qc *quorumClient) short(what string, answered int, errs []error) error {
	msg := fmt.Sprintf("chains: %s %s: %d of the %d endpoints asked answered, quorum %d", qc.network, what, answered, answered+len(errs), qc.q)
	if len(errs) == 0 {
		return fmt.Errorf("%s: %w", msg, ErrUnavailable)
	}
	limited, missing := answered == 0, true
	for _, err := range errs {
		limited = limited && errors.Is(err, ErrRateLimited)
		missing = missing && errors.Is(err, ErrBlockNotFound)
	}
	if !missing {
		// One endpoint's "no such block" beside another's failure is a
		// failure (backoff, /health), not a block to wait for.
		for i, err := range errs {
			if errors.Is(err, ErrBlockNotFound) {
				errs[i] = errors.New(err.Error())
			}
		}
	}
	if limited {
		return fmt.Errorf("%s: %w", msg, errors.Join(errs...))
	}
	return fmt.Errorf("%s: %w: %w", msg, ErrUnavailable, errors.Join(errs...))
}

// qth returns the Quorum-th highest of heads (len(heads) ≥ Quorum).
func (qc *quorumClient) qth(heads []uint64) uint64 {
	s := slices.Clone(heads)
	slices.Sort(s)
	return s[len(s)-qc.q]
}

// Head returns the Quorum-th highest head of the endpoints asked: the
// slowest of Quorum endpoints, leaving out those behind for longer than
// the lag limit (quorum_lag.go).
func (qc *quorumClient) Head(ctx context.Context) (uint64, error) {
	// One more endpoint for each answer that is lagging or suspect.
	more := func(as []answer[uint64]) int {
		n := qc.q
		for _, a := range as {
			if qc.lagErr(a.ep) == nil {
				n--
			}
			if qc.suspect(a.ep) {
				n++
			}
		}
		return n
	}
	as, errs := gather(ctx, qc, more,
		func(ctx context.Context, ep int) (uint64, error) {
			h, err := qc.eps[ep].Head(ctx)
			if err == nil {
				qc.noteHead(ep, h)
			}
			return h, err
		})
	// Each answer judged once.
	var heads []uint64
	for _, a := range as {
		if err := qc.lagErr(a.ep); err != nil {
			qc.failedAt[a.ep].Store(time.Now().UnixNano())
			errs = append(errs, fmt.Errorf("%s: %w", qc.names[a.ep], err))
			continue
		}
		heads = append(heads, a.v)
	}
	if len(heads) < qc.q {
		return 0, qc.short("head", len(heads), errs)
	}
	return qc.qth(heads), nil
}

// BlockHash returns the hash of block n that Quorum endpoints gave.
func (qc *quorumClient) BlockHash(ctx context.Context, n uint64) (string, error) {
	key := strings.ToLower
	as, errs := gather(ctx, qc, agreeing(qc, key), func(ctx context.Context, ep int) (string, error) {
		h, err := qc.eps[ep].BlockHash(ctx, n)
		return h, qc.missing(n, false, err)
	})
	group, err := decide(qc, fmt.Sprintf("block %d", n), as, errs, key, func(a, b string) string { return fmt.Sprintf("hash %s ≠ %s", a, b) })
	if err != nil {
		return "", err
	}
	return group[0].v, nil
}

// BlockTime returns the timestamp of block n that Quorum endpoints gave.
func (qc *quorumClient) BlockTime(ctx context.Context, n uint64) (time.Time, error) {
	key := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	as, errs := gather(ctx, qc, agreeing(qc, key), func(ctx context.Context, ep int) (time.Time, error) {
		bt, ok := qc.eps[ep].(BlockTimer)
		if !ok {
			return time.Time{}, fmt.Errorf("block %d: the endpoint's client reads no block times", n)
		}
		t, err := bt.BlockTime(ctx, n)
		return t, qc.missing(n, false, err)
	})
	group, err := decide(qc, fmt.Sprintf("block %d time", n), as, errs, key, func(a, b time.Time) string { return fmt.Sprintf("time %s ≠ %s", a, b) })
	if err != nil {
		return time.Time{}, err
	}
	return group[0].v, nil
}

// Identity asks the first endpoint that answers which chain it serves
// (paywatch check and the start-up guard check each endpoint alone).
func (qc *quorumClient) Identity(ctx context.Context) (Identity, error) {
	var errs []error
	for _, i := range qc.order() {
		id, err := qc.eps[i].(chainapi.Checker).Identity(ctx)
		if err == nil {
			return id, nil
		}
		errs = append(errs, err)
	}
	return Identity{}, errors.Join(errs...)
}

// Check checks the first endpoint (chains.Check checks each alone).
func (qc *quorumClient) Check(ctx context.Context) EndpointCheck {
	return qc.eps[0].(chainapi.Checker).Check(ctx)
}
