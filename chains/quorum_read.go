package chains

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The quorum client's reads of transfers and blocks (quorum.go).

// Transfers returns the transfers of blocks [from, to] that Quorum
// endpoints gave.
func (qc *quorumClient) Transfers(ctx context.Context, from, to uint64) ([]Transfer, error) {
	return qc.transfers(ctx, fmt.Sprintf("transfers of blocks %d-%d", from, to), to, func(ctx context.Context, c Client) ([]Transfer, error) {
		return c.Transfers(ctx, from, to)
	})
}

// AddressTransfers returns the transfers to addr in blocks [from, head],
// head being the quorum's (Head), that Quorum endpoints gave.
func (qc *quorumClient) AddressTransfers(ctx context.Context, addr string, from uint64) ([]Transfer, error) {
	head, err := qc.Head(ctx)
	if err != nil {
		return nil, err
	}
	if from > head {
		return nil, nil
	}
	return qc.AddressTransfersIn(ctx, addr, from, head)
}

// AddressTransfersIn returns the transfers to addr in blocks [from, to]
// that Quorum endpoints gave.
func (qc *quorumClient) AddressTransfersIn(ctx context.Context, addr string, from, to uint64) ([]Transfer, error) {
	return qc.transfers(ctx, fmt.Sprintf("transfers to %s in blocks %d-%d", addr, from, to), to, func(ctx context.Context, c Client) ([]Transfer, error) {
		return c.(AddressRangeReader).AddressTransfersIn(ctx, addr, from, to)
	})
}

// rangeRead is one endpoint's list of transfers up to a block, with that
// block's hash.
type rangeRead struct {
	hash string
	ts   []Transfer
}

// transfers reads a list of transfers of blocks up to block to from
// Quorum endpoints that agree on it and on block to's hash. Each endpoint
// is asked block to's hash first, so that one that has not reached it
// makes the list wait (ErrBlockNotFound) rather than give it short: an
// eth_getLogs range past a node's head answers what the node has.
func (qc *quorumClient) transfers(ctx context.Context, what string, to uint64, read func(context.Context, Client) ([]Transfer, error)) ([]Transfer, error) {
	key := func(r rangeRead) string { return strings.ToLower(r.hash) + "|" + transfersKey(r.ts) }
	as, errs := gather(ctx, qc, agreeing(qc, key), func(ctx context.Context, ep int) (rangeRead, error) {
		hash, err := qc.eps[ep].BlockHash(ctx, to)
		if err != nil {
			return rangeRead{}, qc.missing(to, false, err)
		}
		ts, err := read(ctx, qc.eps[ep])
		return rangeRead{hash, ts}, qc.missing(to, false, err)
	})
	group, err := decide(qc, what, as, errs, key, func(a, b rangeRead) string {
		if !strings.EqualFold(a.hash, b.hash) {
			return fmt.Sprintf("hash of block %d %s ≠ %s", to, a.hash, b.hash)
		}
		return transfersDiff(a.ts, b.ts)
	})
	if err != nil {
		return nil, err
	}
	return group[0].v.ts, nil
}

// txRead is one endpoint's TransactionTransfers answer.
type txRead struct {
	ts    []Transfer
	found bool
}

// TransactionTransfers returns the transfers of a transaction that Quorum
// endpoints gave. When some endpoints have the transaction and the others
// not yet (and those that have it agree), it is not found: it waits for the
// slower ones.
func (qc *quorumClient) TransactionTransfers(ctx context.Context, txHash string) ([]Transfer, bool, error) {
	key := func(r txRead) string {
		if !r.found {
			return "-"
		}
		return "+" + transfersKey(r.ts)
	}
	as, errs := gather(ctx, qc, agreeing(qc, key), func(ctx context.Context, ep int) (txRead, error) {
		ts, found, err := qc.eps[ep].TransactionTransfers(ctx, txHash)
		return txRead{ts, found}, err
	})
	if lagging(qc, as, key) {
		// Found by some, not yet by the others: waited for, unless that
		// is overdue (quorum_lag.go).
		if err := qc.txOverdue(as); err != nil {
			return nil, false, fmt.Errorf("chains: %s transaction %s: endpoints without it: %w: %w", qc.network, txHash, err, ErrUnavailable)
		}
		return nil, false, nil
	}
	group, err := decide(qc, "transaction "+txHash, as, errs, key, func(a, b txRead) string {
		if a.found != b.found {
			return fmt.Sprintf("found %t ≠ %t", a.found, b.found)
		}
		return transfersDiff(a.ts, b.ts)
	})
	if err != nil {
		return nil, false, err
	}
	return group[0].v.ts, group[0].v.found, nil
}

// txOverdue returns why a transaction that some endpoints found (as,
// agreeing on it) and the others not yet should no longer be waited for:
// an endpoint without it has been behind for longer than the lag limit,
// as ReadTip judges its "not yet" (its head, as last given, which covers
// a transaction of no configured token: it names no block), or the
// transaction's block is overdue (the answers that found it agree on its
// block, so the first transfer names it). Nil while it is waited for.
func (qc *quorumClient) txOverdue(as []answer[txRead]) error {
	var errs []error
	for _, a := range as {
		if !a.v.found {
			if err := qc.lagErr(a.ep); err != nil {
				qc.failedAt[a.ep].Store(time.Now().UnixNano())
				errs = append(errs, fmt.Errorf("%s: %w", qc.names[a.ep], err))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, a := range as {
		if a.v.found && len(a.v.ts) > 0 {
			return qc.overdue(a.v.ts[0].BlockNumber)
		}
	}
	return nil
}

// lagging reports whether Quorum endpoints answered without Quorum of
// them agreeing only because some lack what the others found ("-" keys),
// the others agreeing among themselves: what was found waits for the
// slower endpoints.
func lagging[T any](qc *quorumClient, as []answer[T], key func(T) string) bool {
	if len(as) < qc.q || len(largest(as, key)) >= qc.q {
		return false
	}
	found, missing := "", false
	for _, a := range as {
		switch k := key(a.v); {
		case k == "-":
			missing = true
		case found == "":
			found = k
		case k != found:
			return false
		}
	}
	return missing
}

// ReadBatch reads a scanner batch (chains.ReadBatch) from Quorum
// endpoints that agree on its hashes and transfers. An endpoint without
// the batch's blocks yet makes it ErrBlockNotFound.
func (qc *quorumClient) ReadBatch(ctx context.Context, q BatchQuery) (BatchRead, error) {
	key := func(b BatchRead) string {
		return strings.ToLower(b.Hash) + "|" + strings.ToLower(b.CursorHash) + "|" + transfersKey(b.Transfers)
	}
	as, errs := gather(ctx, qc, agreeing(qc, key), func(ctx context.Context, ep int) (BatchRead, error) {
		b, err := ReadBatch(ctx, qc.eps[ep], q)
		return b, qc.missing(q.To, false, err)
	})
	group, err := decide(qc, fmt.Sprintf("batch %d-%d", q.From, q.To), as, errs, key, func(a, b BatchRead) string {
		switch {
		case !strings.EqualFold(a.Hash, b.Hash):
			return fmt.Sprintf("hash of block %d %s ≠ %s", q.To, a.Hash, b.Hash)
		case !strings.EqualFold(a.CursorHash, b.CursorHash):
			return fmt.Sprintf("hash of block %d %s ≠ %s", q.Cursor, a.CursorHash, b.CursorHash)
		}
		return transfersDiff(a.Transfers, b.Transfers)
	})
	if err != nil {
		return BatchRead{}, err
	}
	return group[0].v, nil
}

// ReadTip reads block next at the tip from Quorum endpoints that agree on
// it, with the Quorum-th highest of their heads. When some endpoints have
// the block and the others not yet, it is not found, with the head of the
// slower ones: the block waits for them.
func (qc *quorumClient) ReadTip(ctx context.Context, next uint64) (TipRead, error) {
	key := func(t TipRead) string {
		if !t.Found {
			return "-"
		}
		return strings.ToLower(t.Hash) + "|" + strings.ToLower(t.ParentHash) + "|" + transfersKey(t.Transfers)
	}
	as, errs := gather(ctx, qc, agreeing(qc, key), func(ctx context.Context, ep int) (TipRead, error) {
		t, err := qc.eps[ep].(TipReader).ReadTip(ctx, next)
		if err != nil {
			return t, err
		}
		qc.noteHead(ep, t.Head)
		if !t.Found {
			// Judged by its head, which this answer just gave: a node
			// ahead of next does not have it at the tip either.
			if lag := qc.lagErr(ep); lag != nil {
				err = lag
			}
		}
		return t, err
	})
	heads := func(as []answer[TipRead]) uint64 {
		hs := make([]uint64, len(as))
		for i, a := range as {
			hs[i] = a.v.Head
		}
		return qc.qth(hs)
	}
	if lagging(qc, as, key) {
		return TipRead{Head: heads(as)}, nil
	}
	group, err := decide(qc, fmt.Sprintf("block %d at the tip", next), as, errs, key, func(a, b TipRead) string {
		switch {
		case !strings.EqualFold(a.Hash, b.Hash):
			return fmt.Sprintf("hash %s ≠ %s", a.Hash, b.Hash)
		case !strings.EqualFold(a.ParentHash, b.ParentHash):
			return fmt.Sprintf("parent hash %s ≠ %s", a.ParentHash, b.ParentHash)
		}
		return transfersDiff(a.Transfers, b.Transfers)
	})
	if err != nil {
		return TipRead{}, err
	}
	out := group[0].v
	out.Head = heads(group)
	return out, nil
}
