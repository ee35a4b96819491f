package solana_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/chains/solana"
)

// history serves a recorded getSignaturesForAddress answer as a node
// does: newest first, before and until exclusive, at most limit.
type history struct {
	all   []*rpc.TransactionSignature
	calls int
}

func recordedHistory(t *testing.T) *history {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "mainnet", "getSignaturesForAddress_312_err_memo.json"))
	require.NoError(t, err)
	var answer struct {
		Result []*rpc.TransactionSignature `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &answer))
	require.Len(t, answer.Result, 312)
	return &history{all: answer.Result}
}

func (h *history) page(_ context.Context, before, until string, limit int) ([]*rpc.TransactionSignature, error) {
	h.calls++
	start := 0
	if before != "" {
		for i, s := range h.all {
			if s.Signature.String() == before {
				start = i + 1
			}
		}
	}
	var out []*rpc.TransactionSignature
	for _, s := range h.all[start:] {
		if s.Signature.String() == until || len(out) == limit {
			break
		}
		out = append(out, s)
	}
	return out, nil
}

// Every signature newer than the cursor is read, oldest first, across as
// many pages as it takes; failed ones come with their error.
func TestNewSignaturesPagesBackToTheCursor(t *testing.T) {
	h := recordedHistory(t)
	failed := 0
	for _, s := range h.all[:300] {
		if s.Err != nil {
			failed++
		}
	}
	require.NotZero(t, failed, "the recorded history holds failed transactions")
	cur := solana.Cursor{Signature: h.all[300].Signature.String(), Slot: h.all[300].Slot}
	got, err := solana.NewSignatures(context.Background(), h.page, solana.SignatureQuery{Cursor: cur}, 100, fullHistory)
	require.NoError(t, err)
	assert.Len(t, got, 300, "the 300 newer than the cursor")
	assert.Equal(t, 5, h.calls, "three full pages, a short one, and one call to see the cursor comes next")
	for i := 1; i < len(got); i++ {
		assert.LessOrEqual(t, got[i-1].Slot, got[i].Slot, "oldest first")
	}
	assert.Equal(t, h.all[0].Signature, got[len(got)-1].Signature, "up to the newest")
	gotFailed := 0
	for _, s := range got {
		if s.Err != nil {
			gotFailed++
		}
	}
	assert.Equal(t, failed, gotFailed, "failed ones are listed with their error")

	// Nothing new: one call, nothing read.
	h.calls = 0
	got, err = solana.NewSignatures(context.Background(), h.page, solana.SignatureQuery{Cursor: solana.Cursor{Signature: h.all[0].Signature.String(), Slot: h.all[0].Slot}}, 1000, fullHistory)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, 1, h.calls)

	// No cursor yet: from the slot the account started to matter.
	from := h.all[50].Slot
	got, err = solana.NewSignatures(context.Background(), h.page, solana.SignatureQuery{FromSlot: from}, 1000, fullHistory)
	require.NoError(t, err)
	for _, s := range got {
		assert.GreaterOrEqual(t, s.Slot, from)
	}
	assert.NotEmpty(t, got)
}

// An endpoint whose pages stop short of the cursor (a shallow history, or
// a "before" it does not know) is caught, never taken as the end.
func TestNewSignaturesRefusesAGapBeforeTheCursor(t *testing.T) {
	h := recordedHistory(t)
	cur := solana.Cursor{Signature: h.all[300].Signature.String(), Slot: h.all[300].Slot}
	shallow := &history{all: h.all[:250]} // it lost the 50 oldest, the cursor among them
	_, err := solana.NewSignatures(context.Background(), shallow.page, solana.SignatureQuery{Cursor: cur, Through: cur.Slot}, 100, historyFrom(h.all[249].Slot))
	assert.ErrorIs(t, err, solana.ErrHistoryGap)

	// A node that forgets a page's "before" answers []: a gap too.
	forgetful := &history{all: h.all}
	page := func(ctx context.Context, before, until string, limit int) ([]*rpc.TransactionSignature, error) {
		if before != "" {
			return nil, nil
		}
		return forgetful.page(ctx, before, until, limit)
	}
	_, err = solana.NewSignatures(context.Background(), page, solana.SignatureQuery{Cursor: cur, Through: cur.Slot}, 100, fullHistory)
	assert.ErrorIs(t, err, solana.ErrHistoryGap, "the cursor is inside the endpoint's history: it would have been listed")

	// Exactly a page of new signatures, then an empty page: complete.
	cur = solana.Cursor{Signature: h.all[100].Signature.String(), Slot: h.all[100].Slot}
	got, err := solana.NewSignatures(context.Background(), h.page, solana.SignatureQuery{Cursor: cur, Through: cur.Slot}, 100, fullHistory)
	require.NoError(t, err)
	assert.NotEmpty(t, got)
}

// fullHistory is an endpoint that keeps every slot.
func fullHistory(context.Context) (uint64, error) { return 0, nil }

// historyFrom is an endpoint that keeps slots from first on.
func historyFrom(first uint64) solana.HistoryStart {
	return func(context.Context) (uint64, error) { return first, nil }
}

// A quiet account's cursor may be older than what a provider keeps: its
// new signatures are complete when the provider keeps every slot after
// the one the account was read through, though it cannot list the cursor;
// not when it keeps less. Without a cursor, the listing of an account is
// complete down to the batch's first slot only if the provider keeps it.
func TestNewSignaturesOfAQuietAccountOnAShallowProvider(t *testing.T) {
	h := recordedHistory(t)
	i := 300 // the cursor: a signature whose slot the next one's is above
	for h.all[i].Slot == h.all[i-1].Slot {
		i++
	}
	cur := solana.Cursor{Signature: h.all[i].Signature.String(), Slot: h.all[i].Slot}
	through := h.all[i-1].Slot - 1   // read through the slot before the next signature
	kept := &history{all: h.all[:i]} // the provider lost the cursor and everything older
	first := h.all[i-1].Slot

	got, err := solana.NewSignatures(context.Background(), kept.page, solana.SignatureQuery{Cursor: cur, Through: through}, 100, historyFrom(first))
	require.NoError(t, err, "every slot after Through is kept: nothing was missed")
	assert.Len(t, got, i)

	_, err = solana.NewSignatures(context.Background(), kept.page, solana.SignatureQuery{Cursor: cur, Through: through}, 100, historyFrom(through+2))
	assert.ErrorIs(t, err, solana.ErrHistoryGap, "slots after Through are lost")

	// Nothing new after a cursor: taken only from a provider that keeps
	// the slots after Through.
	_, err = solana.NewSignatures(context.Background(), (&history{}).page, solana.SignatureQuery{Cursor: cur, Through: through}, 100, historyFrom(through+1))
	require.NoError(t, err)
	_, err = solana.NewSignatures(context.Background(), (&history{}).page, solana.SignatureQuery{Cursor: cur, Through: through}, 100, historyFrom(through+2))
	assert.ErrorIs(t, err, solana.ErrHistoryGap)

	// No cursor: the listing is the account's history from FromSlot only
	// if the provider keeps FromSlot.
	_, err = solana.NewSignatures(context.Background(), (&history{}).page, solana.SignatureQuery{FromSlot: 1000}, 100, historyFrom(1000))
	require.NoError(t, err)
	_, err = solana.NewSignatures(context.Background(), (&history{}).page, solana.SignatureQuery{FromSlot: 1000}, 100, historyFrom(1001))
	assert.ErrorIs(t, err, solana.ErrHistoryGap)
}
