package devnet

import (
	"context"
	"math/big"
	"strings"
	"testing"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
	"github.com/paywatch/paywatch/chains/solana"
)

// startSolanaChain is the devnet with the scanners' view of it.
func startSolanaChain(t *testing.T) (*solanaChain, *solana.Chain) {
	t.Helper()
	c, client := startSolanaT(t)
	var mints []solana.Mint
	for _, m := range c.mints {
		mints = append(mints, solana.Mint{Token: m.Token, Mint: m.Mint, Program: m.Program})
	}
	ch, err := solana.NewChain("SOLANA", client, mints)
	require.NoError(t, err)
	return c, ch
}

// A scanner batch reads every transfer to the watched wallets' token
// accounts in its slots, once each, with the references that tell memo
// payments apart, and hands back each account's cursor; the next batch
// from those cursors costs one call per account and reads nothing again.
func TestSolanaBatchReadsWatchedAccountsFromTheirCursors(t *testing.T) {
	c, ch := startSolanaChain(t)
	ctx := context.Background()
	other := "7T8ckKtdc5DH7ACS5AnCny7rVXYJPEsaAbdBri1FhPxY"
	accounts, err := ch.Accounts([]string{solanaWallet, other})
	require.NoError(t, err)
	require.Len(t, accounts, 6, "three mints for each of two wallets")

	start, err := c.mine(ctx, 1)
	require.NoError(t, err)
	ref := paywatch.NewSolanaReference()
	_, err = c.transfer(ctx, []TransferRequest{
		{To: solanaWallet, Token: paywatch.USDC, Amount: "25.5", Memo: ref},
		{To: solanaWallet, Token: paywatch.PYUSD, Amount: "1"},
		{To: other, Token: paywatch.USDT, Amount: "2"},
	}, false)
	require.NoError(t, err)
	_, err = c.transfer(ctx, []TransferRequest{{To: solanaWallet, Token: paywatch.USDC, Amount: "9"}}, true) // fails
	require.NoError(t, err)
	unwatched := sol.NewWallet().PublicKey().String()
	_, err = c.transfer(ctx, []TransferRequest{{To: unwatched, Token: paywatch.USDC, Amount: "3"}}, false)
	require.NoError(t, err)
	head, err := ch.Head(ctx)
	require.NoError(t, err)

	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: start + 1, To: head, Head: head, Cursor: start, Accounts: accounts})
	require.NoError(t, err)
	require.Len(t, read.Transfers, 3, "the two wallets' three credits; not the failed one, not the unwatched wallet's")
	byTo := map[string][]paywatch.Transfer{}
	for _, tr := range read.Transfers {
		byTo[tr.To] = append(byTo[tr.To], tr)
		assert.Equal(t, paywatch.Network("SOLANA"), tr.Network)
		hash, err := ch.BlockHash(ctx, tr.BlockNumber)
		require.NoError(t, err)
		assert.Equal(t, hash, tr.BlockHash, "the block's hash, as BlockHash reads it")
		assert.Equal(t, c.faucet.PublicKey().String(), tr.From, "from: the sending owner")
	}
	require.Len(t, byTo[solanaWallet], 2)
	usdc := byTo[solanaWallet][0]
	if usdc.Token != paywatch.USDC {
		usdc = byTo[solanaWallet][1]
	}
	assert.Equal(t, "25500000", usdc.Amount.String())
	assert.Equal(t, []string{ref}, usdc.Memos)
	assert.Equal(t, paywatch.USDT, byTo[other][0].Token)
	assert.Empty(t, byTo[other][0].Memos)
	hashTo, err := ch.BlockHash(ctx, head)
	require.NoError(t, err)
	assert.Equal(t, hashTo, read.Hash)
	hashStart, err := ch.BlockHash(ctx, start)
	require.NoError(t, err)
	assert.Equal(t, hashStart, read.CursorHash)
	moved := 0
	for i, a := range read.Accounts {
		assert.Equal(t, accounts[i].Account, a.Account)
		assert.Equal(t, head, a.Through)
		if a.Signature != "" {
			moved++
			assert.LessOrEqual(t, a.Slot, head)
		}
	}
	assert.Equal(t, 3, moved, "USDC (its newest signature the failed one), PYUSD and the other's USDT")

	// Nothing new: one call per account, no transaction read again.
	_, err = c.mine(ctx, 1)
	require.NoError(t, err)
	head2, err := ch.Head(ctx)
	require.NoError(t, err)
	before := ch.Calls()
	read2, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: head + 1, To: head2, Head: head2, Cursor: head, Accounts: read.Accounts})
	require.NoError(t, err)
	assert.Empty(t, read2.Transfers)
	for i, a := range read2.Accounts {
		assert.Equal(t, head2, a.Through, "read through the batch's last slot")
		a.Through = read.Accounts[i].Through
		assert.Equal(t, read.Accounts[i], a, "the same cursor")
	}
	assert.Equal(t, uint64(len(accounts)+2), ch.Calls()-before, "a getSignaturesForAddress per account and two block hashes")

	// Gone back for a reorg (from below the cursors): read again.
	read3, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: start + 1, To: head2, Head: head2, Accounts: read2.Accounts})
	require.NoError(t, err)
	assert.Len(t, read3.Transfers, 3)

	// The owner's window, as the final check reads it.
	ts, err := ch.AddressTransfersIn(ctx, solanaWallet, start+1, head2)
	require.NoError(t, err)
	assert.Len(t, ts, 2)
	ts, _, err = ch.TransactionTransfers(ctx, usdc.TxHash)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, usdc.Amount, ts[0].Amount)
}

// More than a page of signatures between two batches (an outage): every
// one is read, across getSignaturesForAddress's pages of 1,000.
func TestSolanaBatchPagesPastAThousandSignatures(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 1,005 transfers")
	}
	c, ch := startSolanaChain(t)
	ctx := context.Background()
	accounts, err := ch.Accounts([]string{solanaWallet})
	require.NoError(t, err)
	head, err := ch.Head(ctx)
	require.NoError(t, err)
	first, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: 1, To: head, Head: head, Accounts: accounts})
	require.NoError(t, err)
	const n = 1005
	for range n {
		_, err := c.send(solanaWallet, paywatch.USDT, big.NewInt(1), "", false)
		require.NoError(t, err)
	}
	head2, err := ch.Head(ctx)
	require.NoError(t, err)
	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: head + 1, To: head2, Head: head2, Cursor: head, Accounts: first.Accounts})
	require.NoError(t, err)
	assert.Len(t, read.Transfers, n)
}

// Finality, forks and skipped slots: a block the cluster left has a hash
// no transfer recorded in it matches; a slot without a block has a time
// (the block's before it); the finalized slot trails the head by 32
// blocks.
func TestSolanaChainFinalityForksAndSkippedSlots(t *testing.T) {
	c, ch := startSolanaChain(t)
	ctx := context.Background()
	res, err := c.transfer(ctx, []TransferRequest{{To: solanaWallet, Token: paywatch.USDC, Amount: "1"}}, false)
	require.NoError(t, err)
	slot := res[0].BlockNumber
	hash, err := ch.BlockHash(ctx, slot)
	require.NoError(t, err)
	fin, err := ch.Finalized(ctx)
	require.NoError(t, err)
	assert.Less(t, fin, slot, "not finalized yet")
	_, _, err = c.reorg(ctx, 1, true)
	require.NoError(t, err)
	gone, err := ch.BlockHash(ctx, slot)
	require.NoError(t, err)
	assert.NotEqual(t, hash, gone)
	assert.True(t, strings.HasPrefix(gone, "skipped:"), gone)
	ts, found, err := ch.TransactionTransfers(ctx, res[0].TxHash)
	require.NoError(t, err)
	require.True(t, found, "included again")
	require.Len(t, ts, 1)
	assert.Greater(t, ts[0].BlockNumber, slot)

	_, err = c.mine(ctx, solanaFinality+1)
	require.NoError(t, err)
	fin, err = ch.Finalized(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, fin, ts[0].BlockNumber)
	at, err := ch.BlockTime(ctx, slot)
	require.NoError(t, err, "a slot without a block has its predecessor's time")
	assert.False(t, at.IsZero())
	head, err := ch.Head(ctx)
	require.NoError(t, err)
	_, err = ch.BlockHash(ctx, head+10)
	assert.ErrorIs(t, err, chainapi.ErrBlockNotFound)
}

// A cursor is followed only by the batch right after the one that read
// it: an account left unread for a while (a wallet dropped and registered
// again) is read from the batch's first slot, not from its old cursor, so
// it neither needs the history back there nor reports what came while it
// was not watched.
func TestSolanaBatchReadsAStaleCursorFromTheBatch(t *testing.T) {
	c, ch := startSolanaChain(t)
	ctx := context.Background()
	accounts, err := ch.Accounts([]string{solanaWallet})
	require.NoError(t, err)
	_, err = c.transfer(ctx, []TransferRequest{{To: solanaWallet, Token: paywatch.USDC, Amount: "1"}}, false)
	require.NoError(t, err)
	head, err := ch.Head(ctx)
	require.NoError(t, err)
	first, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: 1, To: head, Head: head, Accounts: accounts})
	require.NoError(t, err)
	require.Len(t, first.Transfers, 1)

	// Not watched while one more came; watched again afterwards.
	_, err = c.transfer(ctx, []TransferRequest{{To: solanaWallet, Token: paywatch.USDC, Amount: "2"}}, false)
	require.NoError(t, err)
	unwatched, err := ch.Head(ctx)
	require.NoError(t, err)
	sent, err := c.transfer(ctx, []TransferRequest{{To: solanaWallet, Token: paywatch.USDC, Amount: "3"}}, false)
	require.NoError(t, err)
	head2, err := ch.Head(ctx)
	require.NoError(t, err)
	read, err := ch.ReadBatch(ctx, chainapi.BatchQuery{From: unwatched + 1, To: head2, Head: head2, Accounts: first.Accounts})
	require.NoError(t, err)
	require.Len(t, read.Transfers, 1, "only what came in the batch's slots")
	assert.Equal(t, sent[0].TxHash, read.Transfers[0].TxHash)
}

// A node that has not reached the batch's last slot refuses to list an
// account's signatures for it (minContextSlot), rather than answer for
// slots it has not seen: the batch is read again, nothing is skipped.
func TestSolanaListingRefusesANodeBehindTheBatch(t *testing.T) {
	c, client := startSolanaT(t)
	ctx := context.Background()
	usdc, _ := c.mintOf(paywatch.USDC)
	ata, err := solana.AssociatedTokenAccount(solanaWallet, usdc.Mint, usdc.Program)
	require.NoError(t, err)
	head, err := client.Slot(ctx, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	_, err = client.Signatures(ctx, ata, solana.SignatureQuery{MinContextSlot: head + 5}, rpc.CommitmentConfirmed)
	require.ErrorContains(t, err, "JSON-RPC error -32016: Minimum context slot has not been reached")
	_, err = client.Signatures(ctx, ata, solana.SignatureQuery{MinContextSlot: head}, rpc.CommitmentConfirmed)
	require.NoError(t, err)
}
