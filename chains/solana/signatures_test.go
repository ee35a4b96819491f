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
	got, err := solana.NewSignatures(context.Background(), h.page, cur, 0, 100)
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
	got, err = solana.NewSignatures(context.Background(), h.page, solana.Cursor{Signature: h.all[0].Signature.String(), Slot: h.all[0].Slot}, 0, 1000)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, 1, h.calls)

	// No cursor yet: from the slot the account started to matter.
	from := h.all[50].Slot
	got, err = solana.NewSignatures(context.Background(), h.page, solana.Cursor{}, from, 1000)
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
	_, err := solana.NewSignatures(context.Background(), shallow.page, cur, 0, 100)
	assert.ErrorIs(t, err, solana.ErrHistoryGap)

	// A node that forgets a page's "before" answers []: a gap too.
	forgetful := &history{all: h.all}
	page := func(ctx context.Context, before, until string, limit int) ([]*rpc.TransactionSignature, error) {
		if before != "" {
			return nil, nil
		}
		return forgetful.page(ctx, before, until, limit)
	}
	_, err = solana.NewSignatures(context.Background(), page, cur, 0, 100)
	assert.ErrorIs(t, err, solana.ErrHistoryGap)

	// Exactly a page of new signatures, then an empty page: complete.
	cur = solana.Cursor{Signature: h.all[100].Signature.String(), Slot: h.all[100].Slot}
	got, err := solana.NewSignatures(context.Background(), h.page, cur, 0, 100)
	require.NoError(t, err)
	assert.NotEmpty(t, got)
}
