package activities_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// fakeChain is an in-memory chains.Client.
type fakeChain struct {
	network   paywatch.Network
	head      uint64
	hashes    map[uint64]string
	transfers []chains.Transfer
	// blockReads counts Transfers calls; addressFroms lists the from
	// blocks of AddressTransfers calls: the calls that read ranges of
	// blocks, one RPC per block on Tron.
	blockReads   int
	addressFroms []uint64
}

func (c *fakeChain) Network() paywatch.Network            { return c.network }
func (c *fakeChain) Head(context.Context) (uint64, error) { return c.head, nil }
func (c *fakeChain) Close()                               {}
func (c *fakeChain) Transfers(context.Context, uint64, uint64) ([]chains.Transfer, error) {
	c.blockReads++
	return c.transfers, nil
}
func (c *fakeChain) BlockHash(_ context.Context, n uint64) (string, error) {
	if n > c.head {
		return "", chains.ErrBlockNotFound
	}
	return c.hashes[n], nil
}
func (c *fakeChain) TransactionTransfers(_ context.Context, h string) ([]chains.Transfer, bool, error) {
	var out []chains.Transfer
	for _, t := range c.transfers {
		if t.TxHash == h {
			out = append(out, t)
		}
	}
	return out, len(out) > 0, nil
}
func (c *fakeChain) AddressTransfers(_ context.Context, addr string, from uint64) ([]chains.Transfer, error) {
	c.addressFroms = append(c.addressFroms, from)
	var out []chains.Transfer
	for _, t := range c.transfers {
		if t.To == addr && t.BlockNumber >= from {
			out = append(out, t)
		}
	}
	return out, nil
}

// fakeChains serves one fake chain per network.
type fakeChains map[paywatch.Network]chains.Client

func (f fakeChains) Client(n paywatch.Network) (chains.Client, error) {
	c, ok := f[n]
	if !ok {
		return nil, errors.New("no chain")
	}
	return c, nil
}

const payTo = "0x1111111111111111111111111111111111111111"

func chainFixture() (*fakeChain, *activities.Activities) {
	c := &fakeChain{network: paywatch.BEP20, head: 120, hashes: map[uint64]string{100: "0xAA", 110: "0xbb"}}
	units, _ := new(big.Int).SetString("25000000000000000000", 10) // 25 at 18 decimals
	c.transfers = []chains.Transfer{
		{Network: paywatch.BEP20, Token: paywatch.USDT, TxHash: "0xt1", LogIndex: 3, BlockNumber: 100, BlockHash: "0xaa", From: "0xf", To: payTo, Amount: units},
		{Network: paywatch.BEP20, Token: paywatch.USDC, TxHash: "0xt2", BlockNumber: 110, BlockHash: "0xbb", From: "0xf", To: payTo, Amount: units},
		{Network: paywatch.BEP20, Token: paywatch.USDT, TxHash: "0xt3", BlockNumber: 110, BlockHash: "0xbb", From: "0xf", To: "0x2222222222222222222222222222222222222222", Amount: units},
		{Network: paywatch.BEP20, Token: paywatch.USDT, TxHash: "0xold", BlockNumber: 50, BlockHash: "0xcc", From: "0xf", To: payTo, Amount: units},
	}
	return c, activities.New(activities.Deps{Store: &fakeStore{}, Chains: fakeChains{paywatch.BEP20: c}})
}

func TestCheckTransfersConfirmationsAndCanonicity(t *testing.T) {
	_, acts := chainFixture()
	res, err := acts.CheckTransfers(context.Background(), workflows.CheckTransfersInput{Network: paywatch.BEP20, Transfers: []workflows.TransferRef{
		{TxHash: "0xt1", LogIndex: 3, BlockNumber: 100, BlockHash: "0xaa"}, // same block, hash case differs
		{TxHash: "0xgone", BlockNumber: 110, BlockHash: "0xother"},         // replaced block
		{TxHash: "0xnew", BlockNumber: 125, BlockHash: "0xdd"},             // above a lagging head
	}})
	require.NoError(t, err)
	assert.EqualValues(t, 120, res.Head)
	assert.Equal(t, []workflows.TransferCheck{
		{TxHash: "0xt1", LogIndex: 3, Confirmations: 21, Canonical: true},
		{TxHash: "0xgone", Confirmations: 11, Canonical: false},
		{TxHash: "0xnew", Confirmations: 0, Canonical: true},
	}, res.Transfers)
}

func TestFinalCheckFiltersTokenAddressAndStartBlock(t *testing.T) {
	c, acts := chainFixture()
	res, err := acts.FinalCheck(context.Background(), workflows.FinalCheckInput{Network: paywatch.BEP20, Token: paywatch.USDT, Address: payTo, StartBlock: 60})
	require.NoError(t, err)
	require.Len(t, res.Transfers, 1)
	assert.Equal(t, "0xt1", res.Transfers[0].TxHash)
	assert.Equal(t, "25.00", res.Transfers[0].Amount.String())
	assert.Equal(t, 18, res.Transfers[0].Amount.Decimals())
	assert.Equal(t, []uint64{60}, c.addressFroms, "a network never scanned: the chain from the start block")
}

// recorded is a recorded transfer fixture on BEP20 (25 at 18 decimals).
func recorded(hash string, block uint64, tok paywatch.Token, to string) paywatch.Transfer {
	units, _ := new(big.Int).SetString("25000000000000000000", 10)
	return paywatch.Transfer{TxHash: hash, LogIndex: 2, BlockNumber: block, BlockHash: fmt.Sprintf("0xh%d", block),
		Token: tok, From: "0xf", To: to, Amount: units}
}

// On EVM networks the final check asks the chain about the payment's
// address over its whole window (one eth_getLogs per MaxBlockRange blocks,
// filtered by recipient), whatever the scanner's cursor, and adds what the
// scanner recorded there: the records may lack a transfer (a provider whose
// log index lagged), and the chain's answer is the canonical one for a
// transfer in both.
func TestFinalCheckOnEVMAsksTheChainOverTheWholeWindow(t *testing.T) {
	ctx := context.Background()
	n := paywatch.BEP20
	db := newScanDB(t)
	c, _ := chainFixture() // head 120: 0xt1 at 100, USDC and other-address transfers
	units, _ := new(big.Int).SetString("4000000000000000000", 10)
	c.transfers = append(c.transfers,
		chains.Transfer{Network: n, Token: paywatch.USDT, TxHash: "0xtail", LogIndex: 1, BlockNumber: 115, BlockHash: "0xee", From: "0xf", To: payTo, Amount: units},
		chains.Transfer{Network: n, Token: paywatch.USDC, TxHash: "0xtailc", BlockNumber: 116, BlockHash: "0xef", From: "0xf", To: payTo, Amount: units},
	)
	acts := activities.New(activities.Deps{Store: db.store, Chains: fakeChains{n: c}})
	in := workflows.FinalCheckInput{Network: n, Token: paywatch.USDT, Address: payTo, StartBlock: 60}
	check := func() []string {
		t.Helper()
		c.addressFroms = nil
		res, err := acts.FinalCheck(ctx, in)
		require.NoError(t, err)
		assert.EqualValues(t, 120, res.Head)
		assert.Zero(t, c.blockReads, "never a scan of every block")
		var got []string
		for _, ts := range res.Transfers {
			got = append(got, ts.TxHash)
		}
		return got
	}
	cursor := func(height uint64, ts ...paywatch.Transfer) {
		t.Helper()
		_, err := db.store.RecordScan(ctx, store.ScanBatch{Network: n, Height: height, BlockHash: "0xc", Head: 120, Transfers: ts}, nil)
		require.NoError(t, err)
	}

	// The scanner is behind the start block: the chain from the start block.
	cursor(30)
	assert.Equal(t, []string{"0xt1", "0xtail"}, check())
	assert.Equal(t, []uint64{60}, c.addressFroms)

	// The scanner has read up to 110. 0xt1 is on chain but was not recorded
	// in its block: the chain still has it. 0xr1 was recorded only: it stays.
	removed := recorded("0xgone", 105, paywatch.USDT, payTo)
	stale := recorded("0xt1", 99, paywatch.USDT, payTo) // recorded in a block a reorg replaced
	stale.LogIndex = 3
	cursor(110,
		recorded("0xr1", 100, paywatch.USDT, payTo),
		recorded("0xusdc", 102, paywatch.USDC, payTo),
		recorded("0xother", 103, paywatch.USDT, "0x2222222222222222222222222222222222222222"),
		recorded("0xearly", 50, paywatch.USDT, payTo),
		recorded("0xabove", 111, paywatch.USDT, payTo), // above the cursor: not the records' part
		stale, removed)
	require.NoError(t, db.store.MarkTransfersRemoved(ctx, n, []paywatch.TransferKey{removed.Key()}))
	assert.Equal(t, []string{"0xr1", "0xt1", "0xtail"}, check())
	assert.Equal(t, []uint64{60}, c.addressFroms, "the whole window, not only the blocks after the cursor")
	res, err := acts.FinalCheck(ctx, in)
	require.NoError(t, err)
	require.Len(t, res.Transfers, 3)
	assert.Equal(t, paywatch.Transaction{TxHash: "0xr1", LogIndex: 2, BlockNumber: 100, BlockHash: "0xh100", From: "0xf",
		Amount: paywatch.MustParseAmount("25", 18)}, res.Transfers[0], "as the scanner signals it: the amount at the token's decimals")
	assert.Equal(t, uint64(100), res.Transfers[1].BlockNumber, "the chain's block for a transfer in both")
	assert.Equal(t, "0xaa", res.Transfers[1].BlockHash)
	assert.Equal(t, "4.00", res.Transfers[2].Amount.String())

	// The scanner is at this node's head: the chain is asked all the same.
	cursor(125)
	assert.Equal(t, []string{"0xr1", "0xt1", "0xabove", "0xtail"}, check())
	assert.Equal(t, []uint64{60}, c.addressFroms)

	// Another network's records are not this one's.
	in.Network = paywatch.ERC20
	c.network = paywatch.ERC20
	acts = activities.New(activities.Deps{Store: db.store, Chains: fakeChains{paywatch.ERC20: c}})
	assert.Equal(t, []string{"0xt1", "0xtail"}, check())
	assert.Equal(t, []uint64{60}, c.addressFroms)
}

// Against the devnet Tron node: the final check of a payment whose window
// the scanner has read costs the RPC calls of the few blocks after its
// cursor, where reading the window from the chain costs one per block with
// transactions.
func TestFinalCheckOnTronReadsOnlyBlocksAfterTheCursor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.TRC20
	d, set := devnetChain(ctx, t, n)
	c, err := set.Client(n)
	require.NoError(t, err)
	db := newScanDB(t)

	start, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	addr := randomAddress(t, n)
	db.watch(t, n, paywatch.USDT, addr, start)
	first, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "3"})
	require.NoError(t, err)
	for range 30 { // a busy chain: transactions in every block
		_, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: randomAddress(t, n), Amount: "1"})
		require.NoError(t, err)
	}
	scanned, _ := d.Network(n)
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: &signalLog{}})
	_, err = s.ScanRange(ctx, n, start+1, scanned.Head)
	require.NoError(t, err)
	// After the scanner's cursor: one more transfer to the payment.
	second, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "4"})
	require.NoError(t, err)
	head, err := d.Mine(ctx, n, 2)
	require.NoError(t, err)

	acts := activities.New(activities.Deps{Store: db.store, Chains: set})
	before := chains.Calls(c)
	res, err := acts.FinalCheck(ctx, workflows.FinalCheckInput{Network: n, Token: paywatch.USDT, Address: addr, StartBlock: start})
	require.NoError(t, err)
	calls := chains.Calls(c) - before
	assert.Equal(t, head, res.Head)
	require.Len(t, res.Transfers, 2)
	assert.Equal(t, first.TxHash, res.Transfers[0].TxHash, "recorded by the scanner")
	assert.Equal(t, "3.00", res.Transfers[0].Amount.String())
	assert.Equal(t, 6, res.Transfers[0].Amount.Decimals())
	assert.Equal(t, second.TxHash, res.Transfers[1].TxHash, "read from the chain")
	assert.Equal(t, "4.00", res.Transfers[1].Amount.String())
	// One head, one GetBlockByLimitNext for the three blocks after the
	// cursor, and the infos of the one of them with a transaction.
	assert.Equal(t, uint64(3), calls)

	before = chains.Calls(c)
	all, err := c.AddressTransfers(ctx, addr, start)
	require.NoError(t, err)
	assert.Len(t, all, 2)
	assert.Greater(t, chains.Calls(c)-before, uint64(30), "the whole window from the chain: a call per block")
}

func TestVerifyTxHash(t *testing.T) {
	_, acts := chainFixture()
	ctx := context.Background()
	in := workflows.VerifyTxHashInput{Network: paywatch.BEP20, Token: paywatch.USDT, Address: payTo, StartBlock: 60}

	in.TxHash = "0xmissing"
	res, err := acts.VerifyTxHash(ctx, in)
	require.NoError(t, err, "not found is a normal answer")
	assert.False(t, res.Found)

	in.TxHash = "0xt1"
	res, err = acts.VerifyTxHash(ctx, in)
	require.NoError(t, err)
	assert.True(t, res.Found)
	require.Len(t, res.Transfers, 1)
	assert.EqualValues(t, 3, res.Transfers[0].LogIndex)

	in.TxHash = "0xt3" // to another address
	res, err = acts.VerifyTxHash(ctx, in)
	require.NoError(t, err)
	assert.True(t, res.Found)
	assert.Empty(t, res.Transfers)
	assert.Equal(t, "Transaction does not transfer USDT to this payment's address on BEP20", res.Reason)

	in.TxHash = "0xold" // before the address was assigned
	res, err = acts.VerifyTxHash(ctx, in)
	require.NoError(t, err)
	assert.Empty(t, res.Transfers)
	assert.Equal(t, "Transaction was sent before this payment's address was assigned", res.Reason)
}

// fakeStore implements the address methods another package owns, and a
// store the scanner has never written to.
type fakeStore struct {
	activities.Store
	assignErr error
	released  []paywatch.Status
}

func (f *fakeStore) RecordedTransfersTo(context.Context, paywatch.Network, paywatch.Token, string, uint64) (store.RecordedTransfers, error) {
	return store.RecordedTransfers{}, nil
}

// IdentifyTransfers is what an empty store answers: transfers never
// recorded keep the chain's log indexes as their keys.
func (f *fakeStore) IdentifyTransfers(_ context.Context, _ paywatch.Network, ts []paywatch.Transfer) ([]paywatch.Transfer, error) {
	return ts, nil
}

func (f *fakeStore) AssignAddress(context.Context, string, paywatch.Network, paywatch.Token) (paywatch.Assignment, error) {
	return paywatch.Assignment{Address: payTo}, f.assignErr
}

func (f *fakeStore) ReleaseAddress(_ context.Context, _ string, outcome paywatch.Status) error {
	f.released = append(f.released, outcome)
	return nil
}

// Domain refusals become non-retryable errors whose type is their
// paywatch.Error code, with the exact API message; other errors stay
// retryable.
func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		typ  string
		msg  string
		keep bool
	}{
		{paywatch.Errorf(paywatch.EINVALID, "No addresses available for this network"), paywatch.EINVALID, "No addresses available for this network", false},
		{paywatch.Errorf(paywatch.EFORBIDDEN, "This merchant is currently not accepting payments"), paywatch.EFORBIDDEN, "This merchant is currently not accepting payments", false},
		{paywatch.Errorf(paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later."), paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later.", false},
		{paywatch.Errorf(paywatch.ECONFLICT, "Network already selected for this payment"), paywatch.ECONFLICT, "Network already selected for this payment", false},
		{errors.New("connection reset"), "", "", true},
	} {
		fs := &fakeStore{assignErr: tc.err}
		acts := activities.New(activities.Deps{Store: fs})
		_, err := acts.SelectNetwork(ctx, workflows.SelectNetworkInput{PaymentID: "p", Network: paywatch.TRC20, Token: paywatch.USDT})
		if tc.keep {
			assert.Equal(t, tc.err, err)
			continue
		}
		var app *temporal.ApplicationError
		require.True(t, errors.As(err, &app))
		assert.Equal(t, tc.typ, app.Type())
		assert.Equal(t, tc.msg, app.Message())
		assert.True(t, app.NonRetryable())
	}
	fs := &fakeStore{}
	require.NoError(t, activities.New(activities.Deps{Store: fs}).ReleaseAddress(ctx, workflows.ReleaseAddressInput{PaymentID: "p", Outcome: paywatch.StatusExpired}))
	assert.Equal(t, []paywatch.Status{paywatch.StatusExpired}, fs.released)
}

// A transaction met twice in one window read (mined again in a later range
// by a reorg during the read) keeps only its copy in the higher block, so
// its transfer is identified once, under one key.
func TestLatestCopiesKeepsOneBlockPerTransaction(t *testing.T) {
	ts := []chains.Transfer{
		{TxHash: "0xa", LogIndex: 5, BlockNumber: 100, To: "x"},
		{TxHash: "0xa", LogIndex: 6, BlockNumber: 100, To: "y"},
		{TxHash: "0xb", LogIndex: 1, BlockNumber: 101, To: "x"},
		{TxHash: "0xa", LogIndex: 3, BlockNumber: 140, To: "x"},
		{TxHash: "0xa", LogIndex: 4, BlockNumber: 140, To: "y"},
	}
	got := activities.LatestCopies(ts)
	require.Len(t, got, 3)
	assert.Equal(t, []chains.Transfer{ts[2], ts[3], ts[4]}, got)
	assert.Len(t, ts, 5, "the input is left as it was")
}
