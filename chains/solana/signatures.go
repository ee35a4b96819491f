package solana

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gagliardetto/solana-go/rpc"

	"github.com/paywatch/paywatch"
)

// MaxSignaturesPage is getSignaturesForAddress's largest page.
const MaxSignaturesPage = 1000

// Cursor is how far a watched token account has been read: its newest
// signature that was read, and that signature's slot. The zero Cursor
// reads from FromSlot on.
type Cursor struct {
	Signature string
	Slot      uint64
}

// SignaturePage asks one page of an account's signatures, newest first:
// at most limit, older than before ("" from the newest), newer than until
// ("" for no bound). It is getSignaturesForAddress with those options.
type SignaturePage func(ctx context.Context, before, until string, limit int) ([]*rpc.TransactionSignature, error)

// ErrHistoryGap is returned when the pages an endpoint gave do not reach
// the cursor: its history is shallower than the cursor, or it did not know
// a page's "before" (a load balancer's lagging backend, a failover in the
// middle of the paging). The signatures read are not returned, so the
// cursor does not move past any it never listed.
var ErrHistoryGap = errors.New("solana: " + paywatch.MsgHistoryShallow)

// NewSignatures returns the signatures of an account newer than cur,
// oldest first, paging back through pages of limit (at most
// MaxSignaturesPage) until a page is short, reaches cur, or reaches a
// slot below fromSlot (when cur is zero: the account's history before its
// payment need not be read). However many arrived since the last poll, an
// outage included, none is skipped: when anything new was read, one more
// call checks that the signature just older than the oldest read is the
// cursor's (ErrHistoryGap otherwise). Failed transactions are listed too,
// with their Err, so that the newest signature can be the next cursor
// whatever it did; callers skip them (they moved nothing, and their
// getTransaction need not be paid for).
func NewSignatures(ctx context.Context, page SignaturePage, cur Cursor, fromSlot uint64, limit int) ([]*rpc.TransactionSignature, error) {
	if limit <= 0 || limit > MaxSignaturesPage {
		limit = MaxSignaturesPage
	}
	var out []*rpc.TransactionSignature
	before := ""
	reached := false // the cursor, or a slot below it, was listed
	for {
		got, err := page(ctx, before, cur.Signature, limit)
		if err != nil {
			return nil, err
		}
		done := len(got) < limit
		for _, s := range got {
			if s == nil {
				return nil, fmt.Errorf("solana: a null entry in getSignaturesForAddress")
			}
			if cur.Signature != "" && (s.Signature.String() == cur.Signature || s.Slot < cur.Slot) {
				done, reached = true, true // a node that ignores until stops here too
				break
			}
			if cur.Signature == "" && s.Slot < fromSlot {
				done = true
				break
			}
			out = append(out, s)
		}
		if len(got) > 0 {
			before = got[len(got)-1].Signature.String()
		}
		if done || len(got) == 0 {
			break
		}
	}
	if cur.Signature != "" && before != "" && !reached {
		// Anything new was read and the node stopped at until: the one
		// just older than the oldest read must be the cursor.
		next, err := page(ctx, before, "", 1)
		if err != nil {
			return nil, err
		}
		if len(next) == 0 || next[0] == nil || next[0].Signature.String() != cur.Signature {
			return nil, ErrHistoryGap
		}
	}
	slices.Reverse(out)
	return out, nil
}
