package solana

import (
	"context"
	"fmt"
	"slices"

	"github.com/gagliardetto/solana-go/rpc"
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

// NewSignatures returns the signatures of an account newer than cur,
// oldest first, paging back through pages of limit (at most
// MaxSignaturesPage) until a page is short, reaches cur, or reaches a
// slot below fromSlot (when cur is zero: the account's history before its
// payment need not be read). However many arrived since the last poll, an
// outage included, none is skipped. Failed transactions are left out: they
// moved nothing, and their getTransaction need not be paid for.
func NewSignatures(ctx context.Context, page SignaturePage, cur Cursor, fromSlot uint64, limit int) ([]*rpc.TransactionSignature, error) {
	if limit <= 0 || limit > MaxSignaturesPage {
		limit = MaxSignaturesPage
	}
	var out []*rpc.TransactionSignature
	before := ""
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
			if cur.Signature != "" && s.Signature.String() == cur.Signature {
				done = true // a node that ignores until still stops here
				break
			}
			if cur.Signature != "" && s.Slot < cur.Slot || cur.Signature == "" && s.Slot < fromSlot {
				done = true
				break
			}
			if s.Err == nil {
				out = append(out, s)
			}
		}
		if done || len(got) == 0 {
			break
		}
		before = got[len(got)-1].Signature.String()
	}
	slices.Reverse(out)
	return out, nil
}
