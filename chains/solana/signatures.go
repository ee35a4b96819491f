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
// what the account was read through: its history is shallower than that,
// or it did not know a page's "before" (a load balancer's lagging backend,
// a failover in the middle of the paging). The signatures read are not
// returned, so the cursor does not move past any it never listed.
var ErrHistoryGap = errors.New("solana: " + paywatch.MsgHistoryShallow)

// SignatureQuery asks NewSignatures for one account's new signatures.
type SignatureQuery struct {
	// Cursor is the newest signature read; the zero Cursor reads from
	// FromSlot on.
	Cursor Cursor
	// FromSlot is the first slot read when there is no Cursor.
	FromSlot uint64
	// Through is the slot the account was read through with Cursor (the
	// last slot of the batch that read it): everything up to it is read.
	Through uint64
	// MinContextSlot is the slot a node must have reached to answer (the
	// batch's last): a backend behind it is refused, not taken at its
	// shorter word.
	MinContextSlot uint64
}

// HistoryStart returns the oldest slot an endpoint keeps (minimumLedgerSlot).
type HistoryStart func(ctx context.Context) (uint64, error)

// NewSignatures returns the signatures of an account newer than q.Cursor
// (or, without one, from q.FromSlot on), oldest first, paging back
// through pages of limit (at most MaxSignaturesPage) until a page is
// short, reaches the cursor, or reaches a slot below FromSlot. However
// many arrived since the last poll, an outage included, none is skipped:
//   - with a cursor, when anything new was read, one more call checks that
//     the signature just older than the oldest read is the cursor's, or
//     one at or below Through (read before); an endpoint that lists
//     nothing older must keep history back to Through (start), else
//     ErrHistoryGap: a quiet account's cursor may be months old, and only
//     the slots after Through need reading again;
//   - with a cursor and nothing new, and without a cursor when the listing
//     stops short of FromSlot (a short page), the endpoint's word is taken
//     only if it keeps history back to the first slot not read (Through +
//     1, or FromSlot), else ErrHistoryGap.
//
// Failed transactions are listed too, with their Err, so that the newest
// signature can be the next cursor whatever it did; callers skip them
// (they moved nothing, and their getTransaction need not be paid for).
func NewSignatures(ctx context.Context, page SignaturePage, q SignatureQuery, limit int, start HistoryStart) ([]*rpc.TransactionSignature, error) {
	if limit <= 0 || limit > MaxSignaturesPage {
		limit = MaxSignaturesPage
	}
	cur := q.Cursor
	var out []*rpc.TransactionSignature
	before := ""
	reached := false // the cursor, or a slot below FromSlot or the cursor, was listed
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
			if cur.Signature == "" && s.Slot < q.FromSlot {
				done, reached = true, true
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
	switch {
	case reached:
	case cur.Signature != "" && before != "":
		// Anything new was read and the node stopped at until: the one
		// just older than the oldest read must be the cursor, or one
		// read before.
		next, err := page(ctx, before, "", 1)
		if err != nil {
			return nil, err
		}
		switch {
		case len(next) > 0 && next[0] != nil:
			if next[0].Signature.String() != cur.Signature && next[0].Slot > q.Through {
				return nil, ErrHistoryGap
			}
		default:
			// Nothing older listed: true only of a cursor older than the
			// endpoint's history (a quiet account's), when that history
			// still holds every slot after Through; a cursor inside it
			// would have been listed (a backend that did not know
			// "before" answers [] too).
			if err := historyReaches(ctx, start, q.Through+1); err != nil {
				return nil, err
			}
			if first, _ := start(ctx); first <= cur.Slot {
				return nil, ErrHistoryGap
			}
		}
	case cur.Signature == "":
		// The listing ended before FromSlot: the account's whole history,
		// if the endpoint keeps that much.
		if err := historyReaches(ctx, start, q.FromSlot); err != nil {
			return nil, err
		}
	default:
		// Nothing new after the cursor: so the endpoint says, if it keeps
		// history back to the first slot not read yet.
		if err := historyReaches(ctx, start, q.Through+1); err != nil {
			return nil, err
		}
	}
	slices.Reverse(out)
	return out, nil
}

// historyReaches checks that an endpoint keeps history back to slot.
func historyReaches(ctx context.Context, start HistoryStart, slot uint64) error {
	if start == nil {
		return ErrHistoryGap
	}
	first, err := start(ctx)
	if err != nil {
		return err
	}
	if first > slot {
		return fmt.Errorf("%w (it keeps slots from %d, the account is read from %d)", ErrHistoryGap, first, slot)
	}
	return nil
}
