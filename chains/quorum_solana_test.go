package chains_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
)

// dropReference is a faultproxy.Rewrite of a Solana endpoint that drops
// the last account of every instruction of getTransaction's answer: a
// memo payment's Solana Pay reference, so that the transfer would count
// for no payment (or another).
func dropReference(method string, _ []json.RawMessage, result json.RawMessage) json.RawMessage {
	if method != "getTransaction" {
		return nil
	}
	var tx map[string]any
	if json.Unmarshal(result, &tx) != nil || tx == nil {
		return nil
	}
	msg := tx["transaction"].(map[string]any)["message"].(map[string]any)
	for _, ix := range msg["instructions"].([]any) {
		m := ix.(map[string]any)
		if accts, ok := m["accounts"].([]any); ok && len(accts) > 4 {
			m["accounts"] = accts[:len(accts)-1]
		}
	}
	out, _ := json.Marshal(tx)
	return out
}

// A quorum of SOLANA endpoints reads a batch, accounts and all, as one
// honest endpoint does; one that drops a memo payment's reference is
// believed alone, refused against an honest one, and outvoted by two; a
// transfer is final only once Quorum endpoints say its slot is.
func TestSolanaQuorum(t *testing.T) {
	n := paywatch.SOLANA
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	liar := proxy(t, d, n, faultproxy.Config{Rewrite: dropReference})
	honest := proxy(t, d, n, faultproxy.Config{})
	honest2 := proxy(t, d, n, faultproxy.Config{})
	to := newAddress(t, n)
	cursor, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	ref := paywatch.NewSolanaReference()
	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: to, Amount: "7", Memo: ref})
	require.NoError(t, err)
	head, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)

	read := func(c chains.Client) (chains.BatchRead, error) {
		accounts, err := c.(chains.AccountReader).Accounts([]string{to})
		require.NoError(t, err)
		return chains.ReadBatch(ctx, c, chains.BatchQuery{From: cursor + 1, To: head, Head: head, Cursor: cursor, Accounts: accounts})
	}
	single, err := read(dialURLs(t, d, n, 1, honest.URL))
	require.NoError(t, err)
	require.Len(t, single.Transfers, 1)
	assert.Equal(t, []string{ref}, single.Transfers[0].Memos)
	assert.Equal(t, sent.TxHash, single.Transfers[0].TxHash)

	both := dialURLs(t, d, n, 2, honest.URL, honest2.URL)
	_, tip := both.(chains.TipReader)
	assert.False(t, tip, "read per account: no tip")
	got, err := read(both)
	require.NoError(t, err)
	assert.Equal(t, single, got, "two honest endpoints: what one reads, cursors included")
	fin, err := both.(chains.FinalityReader).Finalized(ctx)
	require.NoError(t, err)
	assert.Less(t, fin, sent.BlockNumber)

	alone, err := read(dialURLs(t, d, n, 1, liar.URL))
	require.NoError(t, err)
	require.Len(t, alone.Transfers, 1)
	assert.Empty(t, alone.Transfers[0].Memos, "alone, the liar is believed")

	_, err = read(dialURLs(t, d, n, 2, honest.URL, liar.URL))
	require.ErrorIs(t, err, chains.ErrIncompleteRead)
	assert.Contains(t, err.Error(), "memos")

	got, err = read(dialURLs(t, d, n, 2, liar.URL, honest.URL, honest2.URL))
	require.NoError(t, err)
	require.Len(t, got.Transfers, 1)
	assert.Equal(t, []string{ref}, got.Transfers[0].Memos, "the two honest endpoints make the quorum")
	assert.Positive(t, liar.Rewritten())

	// An endpoint that claims a later final slot than the others: final
	// is what Quorum of them say, the slower one's.
	ahead := proxy(t, d, n, faultproxy.Config{Rewrite: func(method string, params []json.RawMessage, result json.RawMessage) json.RawMessage {
		if method != "getSlot" || len(params) == 0 || !strings.Contains(string(params[0]), "finalized") {
			return nil
		}
		var slot uint64
		if json.Unmarshal(result, &slot) != nil {
			return nil
		}
		out, _ := json.Marshal(slot + 1000)
		return out
	}})
	truth, err := dialURLs(t, d, n, 1, honest.URL).(chains.FinalityReader).Finalized(ctx)
	require.NoError(t, err)
	claimed, err := dialURLs(t, d, n, 1, ahead.URL).(chains.FinalityReader).Finalized(ctx)
	require.NoError(t, err)
	require.Equal(t, truth+1000, claimed, "alone, believed")
	fin, err = dialURLs(t, d, n, 2, ahead.URL, honest.URL).(chains.FinalityReader).Finalized(ctx)
	require.NoError(t, err)
	assert.Equal(t, truth, fin, "in a quorum of 2, the slower one's")
}
