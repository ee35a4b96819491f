package activities_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// After an outage longer than a page of masterchain blocks, with a burst
// of credits to the merchant's TON wallet, the scanner reads every one
// once and takes only the one whose comment is a payment's memo (typed
// in lower case, with spaces, it still is); the rest are recorded for
// the unmatched funds, and a forged notification and a look-alike
// jetton carrying the other payment's memo are never read at all.
func TestTONScannerReadsEveryCreditAfterAnOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := paywatch.TON
	d, set := devnetChain(ctx, t, n)
	db := newScanDB(t)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond}})
	scan := func() {
		t.Helper()
		_, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 300 * time.Millisecond}, nil)
		require.NoError(t, err)
	}
	wallet := db.ownWallet(t, n)
	_, err := d.Mine(ctx, n, 1)
	require.NoError(t, err)
	scan() // the cursor starts at the head
	st, _ := d.Network(n)
	memoA, memoB := paywatch.NewTONComment(), paywatch.NewTONComment()
	a := db.watchMemo(t, n, paywatch.USDT, wallet, memoA, st.Head+1)
	b := db.watchMemo(t, n, paywatch.USDT, wallet, memoB, st.Head+1)

	// The outage: 1,500 blocks, the payment among 120 other credits.
	_, err = d.Mine(ctx, n, 700)
	require.NoError(t, err)
	var noise []devnet.TransferRequest
	for range 120 {
		noise = append(noise, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: wallet, Amount: "0.5"})
	}
	_, err = d.TransferBatch(ctx, noise)
	require.NoError(t, err)
	paid, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: wallet, Amount: "10", Memo: " " + strings.ToLower(memoA) + " "})
	require.NoError(t, err)
	for _, kind := range []string{"forged_notification", "lookalike_jetton"} {
		_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: wallet, Amount: "10", Memo: memoB, Kind: kind})
		require.NoError(t, err, kind)
	}
	head, err := d.Mine(ctx, n, 800)
	require.NoError(t, err)
	for range 20 {
		scan()
		var height uint64
		require.NoError(t, db.pool.QueryRow(ctx, `SELECT height FROM chain_cursors WHERE network = $1`, string(n)).Scan(&height))
		if height >= head {
			break
		}
	}

	var seen []sentSignal
	for _, g := range sig.signals() {
		if g.Name == workflows.SignalTransferSeen {
			seen = append(seen, g)
		}
	}
	require.Len(t, seen, 1, "only the credit carrying a payment's memo")
	assert.Equal(t, workflows.PaymentWorkflowID(a), seen[0].WorkflowID)
	assert.NotEqual(t, workflows.PaymentWorkflowID(b), seen[0].WorkflowID)
	var recorded, distinct int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT tx_hash) FROM chain_transfers WHERE network = $1`, string(n)).Scan(&recorded, &distinct))
	assert.Equal(t, 121, recorded, "the 120 credits without a memo, and the paid one; no forgery")
	assert.Equal(t, recorded, distinct, "each once")
	var memos []string
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT memos FROM chain_transfers WHERE tx_hash = $1`, paid.TxHash).Scan(&memos))
	assert.Equal(t, []string{memoA}, memos, "the comment read as the memo")
}
