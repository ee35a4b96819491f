package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// devRun is one run of `paywatch dev` on a database: a fresh devnet chain,
// the dev start's reset of the devnet network's chain state, and the
// scanner's batch path over the block of one transfer of amount to addr.
func devRun(t *testing.T, db *scanDB, n paywatch.Network, addr, amount string) (devnet.TransferResult, []sentSignal) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	defer d.Close()
	_, err = db.store.StartDevnetRun(ctx, n, d.RunID())
	require.NoError(t, err)
	st, _ := d.Network(n)
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{st.RPCURL}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer set.Close()
	sig := &signalLog{}
	sc := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig})
	res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: amount})
	require.NoError(t, err)
	_, err = sc.ScanRange(ctx, n, res.BlockNumber, res.BlockNumber)
	require.NoError(t, err)
	return res, sig.signals()
}

// `paywatch dev` restarted on the same database runs a new devnet from
// genesis, whose transaction hashes repeat those of the run before: the
// same sender, nonce, recipient and amount make the same hash. A transfer
// of the new run whose hash the first run saw still counts for the new
// run's payment; the first run's records and claims do not take it.
func TestSecondDevRunCountsATransferWhoseHashTheFirstRunSaw(t *testing.T) {
	n := paywatch.BEP20
	db := newScanDB(t)
	addr := randomAddress(t, n) // a pool address, the same in both runs
	first := db.watch(t, n, paywatch.USDT, addr, 1)
	a, got := devRun(t, db, n, addr, "10")
	require.Len(t, got, 1)
	require.Equal(t, workflows.PaymentWorkflowID(first), got[0].WorkflowID)
	_, err := db.pool.Exec(context.Background(), `UPDATE payments SET status = 'paid' WHERE id = $1`, first)
	require.NoError(t, err)

	second := db.watch(t, n, paywatch.USDT, addr, 1)
	b, got := devRun(t, db, n, addr, "10")
	require.Equal(t, a.TxHash, b.TxHash, "the devnet's hashes repeat across runs")
	require.Len(t, got, 1, "the new run's transfer is signalled")
	assert.Equal(t, workflows.PaymentWorkflowID(second), got[0].WorkflowID, "it counts for the new run's payment")
	assert.Equal(t, workflows.SignalTransferSeen, got[0].Name)
	assert.Equal(t, "10.00", got[0].Arg.(paywatch.Transaction).Amount.String())
}
