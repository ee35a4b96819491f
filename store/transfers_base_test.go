package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// BASE shares the evm family's derived addresses (issue 39): a USDC on
// BASE payment's address receives DAI on BASE (the other token, at 18
// decimals) and USDC on ERC20 (the same address on another network of the
// family). Neither pays it; each is unmatched with its reason, its
// amount kept to the base unit.
func TestBaseAddressReceivesTheOtherTokenAndNetwork(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.ERC20, paywatch.BASE}))
	ctx := context.Background()
	prj := project(t, s, "base", mode(paywatch.ModePerPayment), hdWallet())
	np := newPayment(prj, "alice", "10")
	np.Network, np.Token, np.Amount = paywatch.BASE, paywatch.USDC, amount("10", paywatch.BASE, paywatch.USDC)
	p, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)

	dai := paywatch.Transfer{TxHash: "0x" + hashOf('d'), BlockNumber: 5, BlockHash: "0xb", Token: paywatch.DAI, From: evmAddrs[0], To: p.Address,
		Amount: amount("10.000000000000000001", paywatch.BASE, paywatch.DAI).Units()}
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.BASE, Height: 500, BlockHash: "0xh", Head: 500, Transfers: []paywatch.Transfer{dai}}, nil)
	require.NoError(t, err)
	got, err := s.ProjectTransfer(ctx, prj.ID, paywatch.BASE, dai.TxHash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonOtherToken, got.Reason)
	assert.Equal(t, p.ID, got.RelatedPaymentID)
	assert.Equal(t, "10.000000000000000001", got.Amount.String(), "DAI to the wei")

	usdc := paywatch.Transfer{TxHash: "0x" + hashOf('e'), BlockNumber: 6, BlockHash: "0xc", Token: paywatch.USDC, From: evmAddrs[0], To: p.Address,
		Amount: amount("10", paywatch.ERC20, paywatch.USDC).Units()}
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.ERC20, Height: 600, BlockHash: "0xi", Head: 600, Transfers: []paywatch.Transfer{usdc}}, nil)
	require.NoError(t, err)
	got, err = s.ProjectTransfer(ctx, prj.ID, paywatch.ERC20, usdc.TxHash, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TransferUnmatched, got.State)
	assert.Equal(t, store.ReasonOtherNetwork, got.Reason)
	assert.Equal(t, p.ID, got.RelatedPaymentID)
}
