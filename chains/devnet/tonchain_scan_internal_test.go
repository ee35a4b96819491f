package devnet

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
	"github.com/paywatch/paywatch/chains/ton"
)

// startTONChain starts a TON devnet and the scanner's client of it.
func startTONChain(t *testing.T) (*tonChain, *ton.Chain) {
	t.Helper()
	c := startTONT(t)
	client, err := ton.Dial([]string{c.url}, nil, nil)
	require.NoError(t, err)
	ch, err := ton.NewChain("TON", client, paywatch.USDT, TONUSDTMaster())
	require.NoError(t, err)
	return c, ch
}

// A scanner batch reads every USDT credit to the watched owners' jetton
// wallets in its masterchain blocks, once each, with the comment (inline
// or in a reference) as the memo, and hands back each owner's cursor;
// what is not a credit never counts: a bounced transfer, a forged
// transfer_notification sent to the owner, a look-alike jetton. The next
// batch from the cursors reads nothing again.
func TestTONBatchReadsWatchedOwnersFromTheirCursors(t *testing.T) {
	c, ch := startTONChain(t)
	ctx := context.Background()
	other := tonFriendly(tonAddr("another merchant"), false)
	accounts, err := ch.Accounts([]string{tonOwner, other})
	require.NoError(t, err)
	require.Len(t, accounts, 2, "one account per owner")

	start, err := c.mine(ctx, 1)
	require.NoError(t, err)
	_, err = c.transfer(ctx, []TransferRequest{
		{To: tonOwner, Token: paywatch.USDT, Amount: "25.5", Memo: "K7QX4MNB"},
		{To: tonOwner, Token: paywatch.USDT, Amount: "1", Memo: "w2e3r4t5"},
		{To: other, Token: paywatch.USDT, Amount: "2"},
	}, false)
	require.NoError(t, err)
	_, err = c.transfer(ctx, []TransferRequest{{To: tonOwner, Token: paywatch.USDT, Amount: "9", Memo: "K7QX4MNB"}}, true) // bounces
	require.NoError(t, err)
	var forged []string
	for _, kind := range []string{"forged_notification", "lookalike_jetton"} {
		res, err := c.transfer(ctx, []TransferRequest{{To: tonOwner, Token: paywatch.USDT, Amount: "50", Memo: "K7QX4MNB", Kind: kind}}, false)
		require.NoError(t, err, kind)
		forged = append(forged, res[0].TxHash)
	}
	unwatched := tonFriendly(tonAddr("a stranger"), false)
	_, err = c.transfer(ctx, []TransferRequest{{To: unwatched, Token: paywatch.USDT, Amount: "3"}}, false)
	require.NoError(t, err)
	head, err := ch.Head(ctx)
	require.NoError(t, err)

	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: start + 1, To: head, Head: head, Cursor: start, Accounts: accounts})
	require.NoError(t, err)
	type got struct {
		to, amount string
		memos      []string
	}
	var gots []got
	for _, tr := range read.Transfers {
		gots = append(gots, got{tr.To, tr.Amount.String(), tr.Memos})
		assert.Equal(t, paywatch.USDT, tr.Token)
		assert.Equal(t, TONFaucet(), tr.From, "the sending owner")
		assert.Len(t, tr.TxHash, 64)
		wantHash, err := ch.BlockHash(ctx, tr.BlockNumber)
		require.NoError(t, err)
		assert.Equal(t, wantHash, tr.BlockHash)
	}
	assert.ElementsMatch(t, []got{
		{tonOwner, "25500000", []string{"K7QX4MNB"}},
		{tonOwner, "1000000", []string{"W2E3R4T5"}},
		{other, "2000000", nil},
	}, gots, "the bounced, forged and look-alike transfers are no credits")
	require.Len(t, read.Accounts, 2)
	for _, a := range read.Accounts {
		assert.Equal(t, head, a.Through)
	}
	assert.NotEmpty(t, read.Accounts[0].Signature, "a cursor at the owner's newest transaction")
	hashStart, err := ch.BlockHash(ctx, start)
	require.NoError(t, err)
	assert.Equal(t, hashStart, read.CursorHash)

	// The next batch from the cursors reads only what is new.
	next, err := c.transfer(ctx, []TransferRequest{{To: other, Token: paywatch.USDT, Amount: "4", Memo: " k7qx4mnb "}}, false)
	require.NoError(t, err)
	read2, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: head + 1, To: next[0].BlockNumber, Head: next[0].BlockNumber, Cursor: head, Accounts: read.Accounts})
	require.NoError(t, err)
	require.Len(t, read2.Transfers, 1)
	assert.Equal(t, other, read2.Transfers[0].To)
	assert.Equal(t, []string{"K7QX4MNB"}, read2.Transfers[0].Memos, "a comment typed in lower case, with spaces, is the memo")
	assert.Equal(t, next[0].TxHash, read2.Transfers[0].TxHash, "the devnet names the credit's transaction")

	// The credit is found by its hash (pool + txid), in hex or base64.
	ts, found, err := ch.TransactionTransfers(ctx, next[0].TxHash)
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, ts, 1)
	assert.Equal(t, read2.Transfers[0], ts[0])

	// A forgery's transaction, named to pool + txid, is on chain and pays
	// nothing: a notification to the owner, a look-alike's wallet.
	for _, h := range forged {
		ts, found, err := ch.TransactionTransfers(ctx, h)
		require.NoError(t, err)
		assert.True(t, found, h)
		assert.Empty(t, ts, h)
	}

	// And the final check reads an owner's range whole.
	all, err := ch.AddressTransfersIn(ctx, tonOwner, start, next[0].BlockNumber)
	require.NoError(t, err)
	assert.Len(t, all, 2)
}

// A burst of more credits than a page between two polls: every one is
// read, across pages, once, and the cursor moves to the newest.
func TestTONBatchPagesThroughABurst(t *testing.T) {
	c, ch := startTONChain(t)
	ctx := context.Background()
	accounts, err := ch.Accounts([]string{tonOwner})
	require.NoError(t, err)
	start, err := c.mine(ctx, 1)
	require.NoError(t, err)
	var reqs []TransferRequest
	for range 150 {
		reqs = append(reqs, TransferRequest{To: tonOwner, Token: paywatch.USDT, Amount: "0.01"})
	}
	_, err = c.transfer(ctx, reqs, false)
	require.NoError(t, err)
	_, err = c.transfer(ctx, reqs[:30], false)
	require.NoError(t, err)
	head, err := ch.Head(ctx)
	require.NoError(t, err)
	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: start + 1, To: head, Head: head, Cursor: start, Accounts: accounts})
	require.NoError(t, err)
	assert.Len(t, read.Transfers, 180)
	seen := map[string]bool{}
	for _, tr := range read.Transfers {
		assert.False(t, seen[tr.TxHash], "read twice: %s", tr.TxHash)
		seen[tr.TxHash] = true
	}
	// A batch that starts where this one ended, from its cursors, finds
	// nothing; one that starts there without them reads the blocks anew
	// and finds nothing either.
	more, err := c.mine(ctx, 2)
	require.NoError(t, err)
	again, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: head + 1, To: more, Head: more, Cursor: head, Accounts: read.Accounts})
	require.NoError(t, err)
	assert.Empty(t, again.Transfers)
	fresh, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: head + 1, To: more, Head: more, Cursor: head, Accounts: accounts})
	require.NoError(t, err)
	assert.Empty(t, fresh.Transfers)
	assert.Equal(t, read.Accounts[0].Signature, fresh.Accounts[0].Signature, "the newest transaction at or below the batch")
}

// A transaction the indexer lists late (its block stored after a later
// one, or an endpoint behind the one that listed the blocks) is never
// skipped: the account's transactions name each their predecessor, so a
// read that lacks one is read again; once listed it counts, whether the
// owner had a cursor or not.
func TestTONBatchRereadsATransactionListedLate(t *testing.T) {
	c, ch := startTONChain(t)
	ctx := context.Background()
	accounts, err := ch.Accounts([]string{tonOwner})
	require.NoError(t, err)
	start, err := c.mine(ctx, 1)
	require.NoError(t, err)
	first, err := c.transfer(ctx, []TransferRequest{{To: tonOwner, Token: paywatch.USDT, Amount: "1"}}, false)
	require.NoError(t, err)
	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: start + 1, To: first[0].BlockNumber, Head: first[0].BlockNumber, Cursor: start, Accounts: accounts})
	require.NoError(t, err)
	require.Len(t, read.Transfers, 1)

	late, err := c.transfer(ctx, []TransferRequest{{To: tonOwner, Token: paywatch.USDT, Amount: "2", Memo: "K7QX4MNB"}}, false)
	require.NoError(t, err)
	after, err := c.transfer(ctx, []TransferRequest{{To: tonOwner, Token: paywatch.USDT, Amount: "3"}}, false)
	require.NoError(t, err)
	head := after[0].BlockNumber
	from := first[0].BlockNumber + 1
	for name, cursors := range map[string][]chainapi.AccountCursor{"from the cursor": read.Accounts, "without one": accounts} {
		c.mu.Lock()
		c.unstored = map[uint64]bool{late[0].BlockNumber: true}
		c.mu.Unlock()
		_, err = ch.ReadBatch(ctx, chainapi.BatchQuery{From: from, To: head, Head: head, Cursor: from - 1, Accounts: cursors})
		assert.ErrorIs(t, err, chainapi.ErrIncompleteRead, "%s: a transaction named but not listed", name)

		c.mu.Lock()
		c.unstored = nil
		c.mu.Unlock()
		again, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: from, To: head, Head: head, Cursor: from - 1, Accounts: cursors})
		require.NoError(t, err, name)
		var amounts []string
		for _, tr := range again.Transfers {
			amounts = append(amounts, tr.Amount.String())
		}
		assert.Equal(t, []string{"2000000", "3000000"}, amounts, "%s: both, once each", name)
	}
}

// A new owner's first credit, stored by the indexer only after the batch
// that covered its block was read, still counts: an owner read with no
// transactions keeps a cursor that says so, and the next batch reads
// every transaction after it, whatever its block.
func TestTONBatchReadsANewOwnersCreditListedLate(t *testing.T) {
	c, ch := startTONChain(t)
	ctx := context.Background()
	owner := tonFriendly(tonAddr("a new merchant"), false)
	accounts, err := ch.Accounts([]string{owner})
	require.NoError(t, err)
	start, err := c.mine(ctx, 1)
	require.NoError(t, err)
	late, err := c.transfer(ctx, []TransferRequest{{To: owner, Token: paywatch.USDT, Amount: "7", Memo: "K7QX4MNB"}}, false)
	require.NoError(t, err)
	head, err := c.mine(ctx, 2)
	require.NoError(t, err)
	c.mu.Lock()
	c.unstored = map[uint64]bool{late[0].BlockNumber: true}
	c.mu.Unlock()
	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: start + 1, To: head, Head: head, Cursor: start, Accounts: accounts})
	require.NoError(t, err)
	assert.Empty(t, read.Transfers, "not stored yet")

	c.mu.Lock()
	c.unstored = nil
	c.mu.Unlock()
	next, err := c.mine(ctx, 1)
	require.NoError(t, err)
	again, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: head + 1, To: next, Head: next, Cursor: head, Accounts: read.Accounts})
	require.NoError(t, err)
	require.Len(t, again.Transfers, 1, "read in the batch after, though its block is before it")
	assert.Equal(t, late[0].TxHash, again.Transfers[0].TxHash)
	assert.Equal(t, late[0].BlockNumber, again.Transfers[0].BlockNumber)
}

// TON never reorganises a committed block: the devnet refuses a reorg
// with operations.md §9's message, and a block the indexer has not
// stored is not found.
func TestTONDevnetHasNoReorgs(t *testing.T) {
	c, ch := startTONChain(t)
	ctx := context.Background()
	_, _, err := c.reorg(ctx, 1, false)
	assert.EqualError(t, err, "Reorgs are not supported on TON")
	head, err := ch.Head(ctx)
	require.NoError(t, err)
	_, err = ch.BlockHash(ctx, head+5)
	assert.ErrorIs(t, err, chainapi.ErrBlockNotFound)
	_, err = ch.ReadBatch(ctx, chainapi.BatchQuery{From: head, To: head + 1, Head: head + 1, Cursor: head - 1})
	assert.ErrorIs(t, err, chainapi.ErrBlockNotFound)
}

// A batch over many blocks (after an outage) reads its credits, and the
// last block's hash.
func TestTONBatchOverManyBlocks(t *testing.T) {
	c, ch := startTONChain(t)
	ctx := context.Background()
	accounts, err := ch.Accounts([]string{tonOwner})
	require.NoError(t, err)
	start, err := c.mine(ctx, 1)
	require.NoError(t, err)
	_, err = c.mine(ctx, 1500)
	require.NoError(t, err)
	sent, err := c.transfer(ctx, []TransferRequest{{To: tonOwner, Token: paywatch.USDT, Amount: "5"}}, false)
	require.NoError(t, err)
	head := sent[0].BlockNumber
	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: start + 1, To: head, Head: head, Cursor: start, Accounts: accounts})
	require.NoError(t, err)
	require.Len(t, read.Transfers, 1)
	want, err := ch.BlockHash(ctx, head)
	require.NoError(t, err)
	assert.Equal(t, want, read.Hash)
}
