package store_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A new devnet run clears its network's chain state and nothing else: not
// another network's, not the payments; the same run again clears nothing.
func TestStartDevnetRunClearsOnlyANewRunsNetwork(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	px, _ := twoPayments(t, s, paywatch.TRC20)
	state := func(n paywatch.Network) (rows int) {
		require.NoError(t, s.Pool().QueryRow(ctx, `
			SELECT (SELECT count(*) FROM chain_cursors WHERE network = $1)
			     + (SELECT count(*) FROM chain_transfers WHERE network = $1)
			     + (SELECT count(*) FROM transfer_claims WHERE network = $1)
			     + (SELECT count(*) FROM tx_claims WHERE network = $1)`, string(n)).Scan(&rows))
		return rows
	}
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.ERC20} {
		tr := paywatch.Transfer{Network: n, Token: paywatch.USDT, TxHash: strings.Repeat("ab", 32), LogIndex: 0,
			BlockNumber: 10, BlockHash: "0xa", From: "f", To: px.Address, Amount: big.NewInt(1)}
		_, err := s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 10, BlockHash: "0xa", Head: 10,
			Transfers: []paywatch.Transfer{tr}, Claims: []store.TransferClaim{{Transfer: tr, PaymentID: px.ID}}}, nil)
		require.NoError(t, err)
		require.NoError(t, s.ClaimTxHash(ctx, n, tr.TxHash, px.ID, nil))
		require.Equal(t, 4, state(n))
	}

	cleared, err := s.StartDevnetRun(ctx, paywatch.TRC20, "run-1")
	require.NoError(t, err)
	assert.True(t, cleared, "the first run on a database with chain state of unknown origin")
	assert.Zero(t, state(paywatch.TRC20))
	assert.Equal(t, 4, state(paywatch.ERC20), "a network that is not a devnet one keeps its state")

	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: 3, BlockHash: "0xb", Head: 3}, nil)
	require.NoError(t, err)
	cleared, err = s.StartDevnetRun(ctx, paywatch.TRC20, "run-1")
	require.NoError(t, err)
	assert.False(t, cleared, "the same run")
	assert.Equal(t, 1, state(paywatch.TRC20))

	cleared, err = s.StartDevnetRun(ctx, paywatch.TRC20, "run-2")
	require.NoError(t, err)
	assert.True(t, cleared)
	assert.Zero(t, state(paywatch.TRC20))
	p, err := s.PaymentByID(ctx, px.ID)
	require.NoError(t, err)
	assert.Equal(t, px.ID, p.ID, "payments stay")
}
