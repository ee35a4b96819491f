package ton

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// Reading one watched owner: its USDT jetton wallet's transactions,
// newest first, down to its cursor, checked link by link.

// emptyCursor is the cursor of an account read with no transactions:
// logical time 0, before any; its slot is the first block of the batch
// that read it so.
const emptyCursor = "0:"

// cursorOf reads an account cursor's signature, "<lt>:<hash>", TON's
// transaction id (emptyCursor: none yet).
func cursorOf(a chainapi.AccountCursor) (lt uint64, ok bool) {
	s, _, found := strings.Cut(a.Signature, ":")
	if !found {
		return 0, false
	}
	lt, err := strconv.ParseUint(s, 10, 64)
	return lt, err == nil
}

// firstPage and laterPage are how many transactions a read asks at a
// time: most reads find none or a few; a burst pages on.
const (
	firstPage = 64
	laterPage = MaxPage
)

// ownerRead is what one owner's read in [from, to] found.
type ownerRead struct {
	credits []Credit
	cursor  chainapi.AccountCursor
}

// readOwner reads the transactions of a's jetton wallet committed in
// masterchain blocks [from, to], newest first, page by page. Its cursor
// is followed when it was read through from-1 (the batch before this
// one): the read stops at the cursor, and a transaction after it
// committed below from (an indexer that stored a later block first)
// still counts. Otherwise the read stops at the first transaction
// committed below from. The new cursor is the newest transaction
// committed at or below to.
//
// Every transaction names the one before it on its account
// (prev_trans_lt), so the read checks that it has them all: each row
// must be the one the row above it names, and the oldest must name the
// cursor, or be the account's first, or stop the read. A row missing
// (an indexer, or one endpoint of several, that has not stored its
// block yet) makes the batch be read again (ErrIncompleteRead).
func (c *Chain) readOwner(ctx context.Context, a chainapi.AccountCursor, from, to uint64) (ownerRead, error) {
	w, err := c.wallet(ctx, a.Owner)
	if err != nil {
		return ownerRead{}, err
	}
	out := ownerRead{cursor: chainapi.AccountCursor{Account: a.Account, Owner: a.Owner, Through: to}}
	afterLT, follow := cursorOf(a)
	follow = follow && a.Through+1 == from
	if follow {
		out.cursor.Signature, out.cursor.Slot = a.Signature, a.Slot
	}
	q := TransactionQuery{Account: w.StringRaw(), Limit: firstPage}
	if follow {
		q.FromLT = afterLT + 1
	}
	gap := func(t Transaction, want uint64) error {
		return fmt.Errorf("ton: transactions of %s: %s at lt %d, where lt %d was named: %w", a.Owner, t.Hash, uint64(t.LT), want, chainapi.ErrIncompleteRead)
	}
	newest, seen := true, false
	var want, oldest uint64 // the lt the row read last named, and its own
	for {
		page, err := c.Transactions(ctx, q)
		if err != nil {
			return ownerRead{}, fmt.Errorf("ton: transactions of %s (%s): %w", a.Owner, w.StringRaw(), err)
		}
		for _, t := range page {
			if keyOf(t.Account) != rawKey(w) {
				return ownerRead{}, fmt.Errorf("ton: transactions of %s: the answer lists account %s", w.StringRaw(), t.Account)
			}
			if t.McBlockSeqno == nil {
				return ownerRead{}, fmt.Errorf("ton: transaction %s of %s without its masterchain block: %w", t.Hash, a.Owner, chainapi.ErrIncompleteRead)
			}
			mc, lt := *t.McBlockSeqno, uint64(t.LT)
			// After an account's first transaction (prev lt 0) come only
			// those of an earlier life of the account, one destroyed and
			// deployed again: no link joins them, so none is asked for.
			if seen && want != 0 && lt != want {
				return ownerRead{}, gap(t, want)
			}
			seen, want, oldest = true, uint64(t.PrevLT), lt
			if mc > to {
				continue // the next batch's
			}
			if newest {
				out.cursor.Signature, out.cursor.Slot, newest = txID(t), mc, false
			}
			if !follow && mc < from || follow && afterLT == 0 && mc < a.Slot {
				// Below the batch, or below the one that found the
				// account empty: read before.
				return done(out, from), nil
			}
			cr, err := creditOf(t)
			if errors.Is(err, errNotCredit) {
				continue
			}
			if err != nil {
				return ownerRead{}, err
			}
			out.credits = append(out.credits, cr)
		}
		if len(page) == q.Limit && len(page) > 0 && uint64(page[len(page)-1].LT) > 1 {
			q.ToLT, q.Limit = uint64(page[len(page)-1].LT)-1, laterPage
			continue
		}
		// The oldest row read names the one before it: the cursor, or
		// none (the account's first); anything else was not listed.
		switch {
		case !seen, want == 0, follow && want == afterLT:
			return done(out, from), nil
		case !follow || afterLT == 0:
			// A transaction older than the indexer's history is not
			// there to list: nothing of the batch's can be older.
			if _, first, err := c.Masterchain(ctx); err == nil && want < uint64(first.StartLT) {
				return done(out, from), nil
			}
		}
		return ownerRead{}, fmt.Errorf("ton: transactions of %s end at lt %d, which names lt %d: %w", a.Owner, oldest, want, chainapi.ErrIncompleteRead)
	}
}

// done gives a read's cursor emptyCursor when the owner has no
// transaction at or below the batch, with the batch's first block as its
// slot: the next batch then reads every transaction the owner gets from
// that block on, in whatever block the indexer stores it, and nothing
// older (an endpoint that wrongly listed none must not make the owner's
// history be read as new).
func done(r ownerRead, from uint64) ownerRead {
	if r.cursor.Signature == "" {
		r.cursor.Signature, r.cursor.Slot = emptyCursor, from
	}
	return r
}

// txID is a transaction's id as a cursor keeps it: "<lt>:<hash>".
func txID(t Transaction) string {
	h, _ := hashHex(t.Hash)
	return strconv.FormatUint(uint64(t.LT), 10) + ":" + h
}
