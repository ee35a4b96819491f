package activities_test

import (
	"context"
	"errors"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/workflows"
)

// fakeChain is an in-memory chains.Client.
type fakeChain struct {
	network   paywatch.Network
	head      uint64
	hashes    map[uint64]string
	transfers []chains.Transfer
}

func (c *fakeChain) Network() paywatch.Network            { return c.network }
func (c *fakeChain) Head(context.Context) (uint64, error) { return c.head, nil }
func (c *fakeChain) Close()                               {}
func (c *fakeChain) Transfers(context.Context, uint64, uint64) ([]chains.Transfer, error) {
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
	return c, activities.New(activities.Deps{Chains: fakeChains{paywatch.BEP20: c}})
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
	_, acts := chainFixture()
	res, err := acts.FinalCheck(context.Background(), workflows.FinalCheckInput{Network: paywatch.BEP20, Token: paywatch.USDT, Address: payTo, StartBlock: 60})
	require.NoError(t, err)
	require.Len(t, res.Transfers, 1)
	assert.Equal(t, "0xt1", res.Transfers[0].TxHash)
	assert.Equal(t, "25.00", res.Transfers[0].Amount.String())
	assert.Equal(t, 18, res.Transfers[0].Amount.Decimals())
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

// fakeStore implements the address methods another package owns.
type fakeStore struct {
	activities.Store
	assignErr error
	released  []paywatch.Status
}

func (f *fakeStore) AssignAddress(context.Context, string, paywatch.Network, paywatch.Token) (workflows.Assignment, error) {
	return workflows.Assignment{Address: payTo}, f.assignErr
}

func (f *fakeStore) ReleaseAddress(_ context.Context, _ string, outcome paywatch.Status) error {
	f.released = append(f.released, outcome)
	return nil
}

// Domain refusals become non-retryable errors of the workflows.ErrType*
// types with the exact API message; other errors stay retryable.
func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		typ  string
		msg  string
		keep bool
	}{
		{paywatch.Errorf(paywatch.EINVALID, "No addresses available for this network"), workflows.ErrTypeInvalid, "No addresses available for this network", false},
		{paywatch.Errorf(paywatch.EFORBIDDEN, "This merchant is currently not accepting payments"), workflows.ErrTypeInvalid, "This merchant is currently not accepting payments", false},
		{paywatch.Errorf(paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later."), workflows.ErrTypeCapacity, "Payment capacity exceeded. Please try again later.", false},
		{paywatch.Errorf(paywatch.ECONFLICT, "Network already selected for this payment"), workflows.ErrTypeConflict, "Network already selected for this payment", false},
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
