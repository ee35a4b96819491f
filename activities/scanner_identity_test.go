package activities_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// One transaction pays two watched addresses; a reorg drops it and it is
// mined again one log later. The scanner tells each payment of its own
// transfer only, under the key the payment already knows, with its own
// amount: X's money never reaches Y's payment.
func TestScannerSignalsATransactionMinedAgainOneLogLaterToTheRightPayments(t *testing.T) {
	ctx := context.Background()
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.BEP20} {
		t.Run(string(n), func(t *testing.T) {
			db := newScanDB(t)
			x, y := randomAddress(t, n), randomAddress(t, n)
			px := db.watch(t, n, paywatch.USDT, x, 1)
			py := db.watch(t, n, paywatch.USDT, y, 1)
			sig := &signalLog{}
			sc := activities.NewScanner(activities.ScannerDeps{Store: db.store, Signaler: sig})
			hash := strings.Repeat("ab", 32)
			if n.Family() == paywatch.FamilyEVM {
				hash = "0x" + hash
			}
			d := paywatch.Decimals(n, paywatch.USDT)
			units := func(v string) *big.Int { return paywatch.MustParseAmount(v, d).Units() }
			pay := func(to string, logIndex uint32, block uint64, blockHash, v string) paywatch.Transfer {
				return paywatch.Transfer{Network: n, Token: paywatch.USDT, TxHash: hash, LogIndex: logIndex,
					BlockNumber: block, BlockHash: blockHash, From: randomAddress(t, n), To: to, Amount: units(v)}
			}
			batch := func(ts ...paywatch.Transfer) {
				b := ts[0].BlockNumber
				_, err := sc.RecordBatch(ctx, n, ts, store.ScanBatch{Network: n, Height: b, BlockHash: ts[0].BlockHash, Head: b})
				require.NoError(t, err)
			}
			x1, y1 := pay(x, 5, 100, "0x100a", "10"), pay(y, 6, 100, "0x100a", "3")
			batch(x1, y1)
			require.NoError(t, db.store.MarkTransfersRemoved(ctx, n, []paywatch.TransferKey{x1.Key(), y1.Key()}))
			batch(pay(x, 6, 101, "0x101b", "10"), pay(y, 7, 101, "0x101b", "3"))

			want := map[string]string{workflows.PaymentWorkflowID(px): "10.00", workflows.PaymentWorkflowID(py): "3.00"}
			keys := map[string]map[uint32]bool{}
			blocks := map[string][]uint64{}
			for _, s := range sig.signals() {
				require.Equal(t, workflows.SignalTransferSeen, s.Name)
				tx := s.Arg.(paywatch.Transaction)
				assert.Equal(t, want[s.WorkflowID], tx.Amount.String(), "%s is told of its own transfer only", s.WorkflowID)
				if keys[s.WorkflowID] == nil {
					keys[s.WorkflowID] = map[uint32]bool{}
				}
				keys[s.WorkflowID][tx.LogIndex] = true
				blocks[s.WorkflowID] = append(blocks[s.WorkflowID], tx.BlockNumber)
			}
			for id := range want {
				assert.Len(t, keys[id], 1, "%s hears of one transfer under one key", id)
				assert.Equal(t, []uint64{100, 101}, blocks[id], "%s hears of its transfer in both blocks", id)
			}
		})
	}
}
