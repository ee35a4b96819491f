package activities_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// watchMicro inserts a pending pool + micro_amount payment expecting amount
// at addr, created ago before now, and returns its id.
func (db *scanDB) watchMicro(t testing.TB, n paywatch.Network, tok paywatch.Token, addr, amount string, ago time.Duration) string {
	t.Helper()
	var id string
	d := paywatch.Decimals(n, tok)
	require.NoError(t, db.pool.QueryRow(context.Background(), `
		INSERT INTO payments (id, project_id, address_mode, pool_matching, network, token, address, amount, decimals,
		                      external_ref, expires_at, start_block, workflow_started, created_at)
		VALUES (gen_random_uuid(), $1, 'pool', 'micro_amount', $2, $3, $4, $5::numeric, $6, 'cust',
		        now() + interval '1 hour', 0, true, now() - $7::interval)
		RETURNING id::text`, db.projectID, string(n), string(tok), addr, paywatch.MustParseAmount(amount, d).Units().String(), d,
		ago.String()).Scan(&id))
	return id
}

// The bug reproduced on the devnet: in pool + micro_amount mode with 4
// micro decimals, two open payments on one address expected 10.6629 and
// 10.6630, and one transfer of 10.662950 paid one and made the other
// partial. Now the transfer goes to exactly one payment: the nearest, and
// on this tie the oldest; the nearer amount wins over age.
func TestOneTransferCountsForOnePoolPayment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, set := devnetChain(ctx, t, n)
	st, _ := d.Network(n)
	db := newScanDB(t)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig})

	addr := randomAddress(t, n)
	older := db.watchMicro(t, n, paywatch.USDT, addr, "10.6629", 2*time.Minute)
	newer := db.watchMicro(t, n, paywatch.USDT, addr, "10.6630", time.Minute)
	tie, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10.662950"})
	require.NoError(t, err)
	near, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10.662990"})
	require.NoError(t, err)
	none, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10.6632"})
	require.NoError(t, err)
	last, _ := d.Network(n)

	b, err := s.ScanRange(ctx, n, st.Head+1, last.Head)
	require.NoError(t, err)
	assert.Equal(t, activities.ScanStats{Transfers: 3, Matched: 2, Signals: 2}, b)
	to := map[string]string{}
	for _, sg := range sig.signals() {
		to[sg.Arg.(paywatch.Transaction).TxHash] = sg.WorkflowID
	}
	assert.Equal(t, map[string]string{
		tie.TxHash:  workflows.PaymentWorkflowID(older),
		near.TxHash: workflows.PaymentWorkflowID(newer),
	}, to, "each transfer is signalled to one payment; %s matches neither", none.TxHash)

	// The claims are durable: a re-scan (after a crash, or a reorg check)
	// signals the same payments, even once a newer payment would be
	// nearer.
	nearer := db.watchMicro(t, n, paywatch.USDT, addr, "10.66295", 0)
	_, err = s.ScanRange(ctx, n, st.Head+1, last.Head)
	require.NoError(t, err)
	got := sig.signals()[2:]
	require.Len(t, got, 2)
	for _, sg := range got {
		assert.Equal(t, to[sg.Arg.(paywatch.Transaction).TxHash], sg.WorkflowID, "not %s", nearer)
	}
	var claims int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM transfer_claims`).Scan(&claims))
	assert.Equal(t, 2, claims)
}

// A payment's final check and the scanner may claim one transfer at the
// same moment, each with its own view of the payments on the address: the
// primary key of transfer_claims lets exactly one claim win, and every
// caller learns the same owner.
func TestConcurrentClaimsAgreeOnOneOwner(t *testing.T) {
	ctx := context.Background()
	n := paywatch.BEP20
	db := newScanDB(t)
	addr := randomAddress(t, n)
	var ids []string
	for i, amount := range []string{"10.6629", "10.6630", "10.6631"} {
		ids = append(ids, db.watchMicro(t, n, paywatch.USDT, addr, amount, time.Duration(3-i)*time.Minute))
	}
	for round := range 20 {
		tr := paywatch.Transfer{
			TxHash: "0x" + hexN(round), LogIndex: 0, BlockNumber: 10, BlockHash: "0xb", Token: paywatch.USDT,
			From: randomAddress(t, n), To: addr, Amount: paywatch.MustParseAmount("10.66300", 18).Units(),
		}
		var wg sync.WaitGroup
		owners := make([]string, 16)
		for g := range owners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if g%2 == 0 {
					got, err := db.store.ClaimTransfers(ctx, n, []paywatch.Transfer{tr})
					assert.NoError(t, err)
					if assert.Len(t, got, 1) {
						owners[g] = got[0].PaymentID
					}
					return
				}
				// The scanner's path proposes a payment of its own choosing:
				// whoever commits first decides.
				_, err := db.store.RecordScan(ctx, store.ScanBatch{Network: n, Height: 10, BlockHash: "0xb", Head: 10,
					Transfers: []paywatch.Transfer{tr}, Claims: []store.TransferClaim{{Transfer: tr, PaymentID: ids[g%3]}}},
					func(_ context.Context, c []store.ClaimedTransfer) error {
						if assert.Len(t, c, 1) {
							owners[g] = c[0].PaymentID
						}
						return nil
					})
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		var rows int
		var owner string
		require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*), min(payment_id::text) FROM transfer_claims WHERE tx_hash = $1`, tr.TxHash).Scan(&rows, &owner))
		require.Equal(t, 1, rows)
		for g, o := range owners {
			assert.Equal(t, owner, o, "round %d caller %d", round, g)
		}
	}
}

// hexN is a 64-digit hex string for n.
func hexN(n int) string {
	const digits = "0123456789abcdef"
	b := []byte("0000000000000000000000000000000000000000000000000000000000000000")
	for i := len(b) - 1; n > 0; i-- {
		b[i] = digits[n%16]
		n /= 16
	}
	return string(b)
}

// A payment's final check finds transfers on chain that the scanner may
// not have recorded; on a shared pool address it returns only those that
// count for the payment checked, claiming them by the scanner's rule, so
// the payment checked first cannot take a transfer nearer another's amount.
func TestFinalCheckReturnsOnlyTheCheckedPaymentsTransfers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, set := devnetChain(ctx, t, n)
	db := newScanDB(t)
	acts := activities.New(activities.Deps{Store: db.store, Chains: set})

	addr := randomAddress(t, n)
	older := db.watchMicro(t, n, paywatch.USDT, addr, "10.6629", 2*time.Minute)
	newer := db.watchMicro(t, n, paywatch.USDT, addr, "10.6630", time.Minute)
	tr, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10.662990"})
	require.NoError(t, err)

	check := func(id string) []string {
		res, err := acts.FinalCheck(ctx, workflows.FinalCheckInput{PaymentID: id, Network: n, Token: paywatch.USDT, Address: addr, StartBlock: 1})
		require.NoError(t, err)
		var hashes []string
		for _, t := range res.Transfers {
			hashes = append(hashes, t.TxHash)
		}
		return hashes
	}
	assert.Empty(t, check(older), "10.662990 is nearer the other payment's 10.6630")
	assert.Equal(t, []string{tr.TxHash}, check(newer))
	assert.Equal(t, []string{tr.TxHash}, check(newer), "asking again gives the same answer")
}
