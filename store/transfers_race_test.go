package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// sighting is one reading of a transfer: its state and the payment that
// holds it, or "told" when the reconciler's DueUnmatched offered it.
type sighting struct {
	state     store.TransferState
	paymentID string
}

// sightings collects what concurrent readers saw of the race's transfers,
// judged once each transfer's owner is known.
type sightings struct {
	mu     sync.Mutex
	hashes []string
	seen   map[string]map[sighting]int
}

func (w *sightings) add(hash string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hashes = append(w.hashes, hash)
}

func (w *sightings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.hashes...)
}

func (w *sightings) see(hash string, s sighting) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[hash] == nil {
		w.seen[hash] = map[sighting]int{}
	}
	w.seen[hash][s]++
}

// countedState is the state in which payment p counts transfer x,
// confirmed: what its workflow saves once x has its confirmations.
func countedState(p *store.Payment, x paywatch.Transfer) paywatch.PaymentState {
	a := paywatch.NewAmount(x.Amount, p.Amount.Decimals())
	return paywatch.PaymentState{
		PaymentID: p.ID, Status: paywatch.StatusPaid, Network: p.Network, Token: p.Token, Address: p.Address,
		Amount: p.Amount, PaidAmount: a, TxHash: x.TxHash, ExpiresAt: p.ExpiresAt, Version: 1,
		Transactions: []paywatch.Transaction{{TxHash: x.TxHash, LogIndex: x.LogIndex, BlockNumber: x.BlockNumber,
			BlockHash: x.BlockHash, From: x.From, Amount: a, Confirmations: 40, Confirmed: true}},
	}
}

// scanLikeTheScanner records transfer x in a batch up to height as the
// scanner's batch path does (activities recordBatch): the payments watching
// its address are read first, outside the transaction, the owner is chosen
// by ClaimOwner, and RecordScan records the transfer and the claim and
// moves the cursor. It returns the payment the transfer counts for after
// the batch ("" if none).
func scanLikeTheScanner(ctx context.Context, s *store.Store, x paywatch.Transfer, height uint64) (string, error) {
	watched, err := s.WatchedAddresses(ctx, paywatch.TRC20, []string{x.To}, []string{x.TxHash}, nil)
	if err != nil {
		return "", err
	}
	b := store.ScanBatch{Network: paywatch.TRC20, Height: height, BlockHash: fmt.Sprintf("h%d", height), Head: height,
		Transfers: []paywatch.Transfer{x}}
	if owner, ok := store.ClaimOwner(watched[x.To], x); ok {
		b.Claims = []store.TransferClaim{{Transfer: x, PaymentID: owner}}
	}
	var got string
	_, err = s.RecordScan(ctx, b, func(_ context.Context, claimed []store.ClaimedTransfer) error {
		got = ownerOf(claimed, x)
		return nil
	})
	return got, err
}

// No transfer that a payment counted is ever listed as unmatched or told,
// under the claim races of issue 24 (TestTxHashClaimRacesScannerClaim): on
// a pool address that a pool + txid payment (expired, its late window open)
// and a pool + micro_amount payment share, each round's transfer is
// claimed at once by the txid payment's hash claim, the scanner's batch
// and, every other round, the micro payment's final check; then its owner
// counts it and the other payment ends. Readers classify the transfers and
// the reconciler tells unmatched ones all the while (issue 27, item 5).
//
// Each round: the transfer is pending while its claimant is open, matched
// with exactly the claimant's payment_id once counted, never listed under
// the losing payment; no reader ever saw it unmatched or held by another
// payment, and the reconciler told none of them, even after every late
// window closed.
func TestCountedTransferNeverUnmatchedUnderClaimRaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	addr := tronAddrs[2]
	prj := project(t, s, "pool", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", addr))
	height := uint64(100)
	_, err := s.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: height, BlockHash: "h100", Head: height}, nil)
	require.NoError(t, err)

	w := &sightings{seen: map[string]map[sighting]int{}}
	done := make(chan struct{})
	var readers sync.WaitGroup
	yes := true
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, h := range w.list() {
					tr, err := s.ProjectTransfer(ctx, prj.ID, paywatch.TRC20, h, nil)
					if paywatch.ErrorCode(err) == paywatch.ENOTFOUND {
						continue // not recorded yet
					}
					if !assert.NoError(t, err) {
						return
					}
					w.see(h, sighting{tr.State, tr.PaymentID})
				}
				list, _, err := s.ProjectTransfers(ctx, prj.ID, store.TransferFilter{Unmatched: &yes})
				if !assert.NoError(t, err) {
					return
				}
				for _, tr := range list {
					w.see(tr.TxHash, sighting{tr.State, tr.PaymentID})
				}
			}
		}()
	}
	// The reconciler, as payments.Reconciler.Unmatched runs it.
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			due, err := s.DueUnmatched(ctx, 100)
			if !assert.NoError(t, err) {
				return
			}
			for _, tr := range due {
				w.see(tr.TxHash, sighting{state: "told"})
				_, _, err := s.TellUnmatched(ctx, tr, store.UnmatchedNotice{EventID: uuidOf(tr.TxHash), Payload: []byte(`{}`)})
				assert.NoError(t, err)
			}
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(done)
			readers.Wait()
		}
	}
	defer stop()

	winners := map[string]string{}
	wins := map[string]int{}
	const rounds = 24
	for i := range rounds {
		// A txid payment, expired an hour ago (its late window open), and
		// a micro_amount payment on the same address: the state a mode
		// switch left before switches were refused.
		_, err := s.Pool().Exec(ctx, `UPDATE projects SET pool_matching = 'txid' WHERE id = $1`, prj.ID)
		require.NoError(t, err)
		txid, _, err := s.CreatePayment(ctx, newPayment(prj, fmt.Sprintf("old-%d", i), "10"))
		require.NoError(t, err)
		setStatus(t, s, txid.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-time.Hour)))
		_, err = s.Pool().Exec(ctx, `UPDATE projects SET pool_matching = 'micro_amount' WHERE id = $1`, prj.ID)
		require.NoError(t, err)
		micro, _, err := s.CreatePayment(ctx, newPayment(prj, fmt.Sprintf("new-%d", i), "10"))
		require.NoError(t, err)
		require.Equal(t, addr, txid.Address)
		require.Equal(t, addr, micro.Address)

		x := paywatch.Transfer{
			Network: paywatch.TRC20, Token: paywatch.USDT, TxHash: fmt.Sprintf("%064x", 0xc000+i), LogIndex: 3,
			BlockNumber: height + 1, BlockHash: fmt.Sprintf("b%d", height+1), From: tronAddrs[0], To: addr, Amount: micro.Amount.Units(),
		}
		// The batch reaches well past the transfer's confirmations, so that
		// only a claim keeps it from being unmatched.
		height += 40
		w.add(x.TxHash)

		var claimErr, scanErr, checkErr error
		var scanOwner string
		var checked []store.ClaimedTransfer
		// Every third round each path gets a few milliseconds' start, so
		// that both payments win some rounds however the machine schedules.
		late := func(j int) {
			if i%3 == j+1 {
				time.Sleep(3 * time.Millisecond)
			}
		}
		parallel(3, func(j int) {
			late(j)
			switch j {
			case 0:
				claimErr = s.ClaimTxHash(ctx, paywatch.TRC20, x.TxHash, txid.ID, []paywatch.Transfer{x})
			case 1:
				scanOwner, scanErr = scanLikeTheScanner(ctx, s, x, height)
			case 2:
				if i%2 == 1 {
					checked, checkErr = s.ClaimTransfers(ctx, paywatch.TRC20, []paywatch.Transfer{x})
				}
			}
		})
		require.NoError(t, scanErr, "round %d", i)
		require.NoError(t, checkErr, "round %d", i)
		owners, err := s.TransferOwners(ctx, paywatch.TRC20, []paywatch.TransferKey{x.Key()})
		require.NoError(t, err)
		winner, loser := owners[x.Key()], txid
		if claimErr == nil {
			require.Equal(t, txid.ID, winner, "round %d: the hash claim succeeded, so the transfer is the txid payment's", i)
			winner, loser = txid.ID, micro
		} else {
			requireCode(t, claimErr, paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
			require.Equal(t, micro.ID, winner, "round %d", i)
		}
		require.Equal(t, winner, scanOwner, "round %d: the scan signals the owner", i)
		if i%2 == 1 {
			require.Equal(t, winner, ownerOf(checked, x), "round %d: the final check agrees", i)
		}
		winners[x.TxHash] = winner
		claimant := txid
		if winner == micro.ID {
			claimant = micro
		}
		wins[claimant.ExternalRef[:3]]++

		notListedUnder := func(p *store.Payment, when string) {
			t.Helper()
			list, _, err := s.ProjectTransfers(ctx, prj.ID, store.TransferFilter{PaymentID: p.ID})
			require.NoError(t, err)
			for _, tr := range list {
				assert.NotEqual(t, x.TxHash, tr.TxHash, "round %d %s: listed under the losing payment (%s)", i, when, tr.State)
			}
		}
		got, err := s.ProjectTransfer(ctx, prj.ID, paywatch.TRC20, x.TxHash, nil)
		require.NoError(t, err)
		assert.Equal(t, store.TransferPending, got.State, "round %d: claimed by an open payment, not counted yet", i)
		assert.Empty(t, got.PaymentID, "round %d", i)
		notListedUnder(loser, "before it was counted")

		// The claimant's workflow counts it.
		_, err = s.SavePaymentState(ctx, countedState(claimant, x))
		require.NoError(t, err)
		got, err = s.ProjectTransfer(ctx, prj.ID, paywatch.TRC20, x.TxHash, nil)
		require.NoError(t, err)
		assert.Equal(t, store.TransferMatched, got.State, "round %d: counted", i)
		assert.Equal(t, winner, got.PaymentID, "round %d", i)
		notListedUnder(loser, "once counted")

		// The other payment ends: nothing watches the address any more.
		setStatus(t, s, loser.ID, paywatch.StatusCancelled, nil)
		got, err = s.ProjectTransfer(ctx, prj.ID, paywatch.TRC20, x.TxHash, nil)
		require.NoError(t, err)
		assert.Equal(t, store.TransferMatched, got.State, "round %d: the losing payment ended", i)
		assert.Equal(t, winner, got.PaymentID, "round %d", i)
		list, _, err := s.ProjectTransfers(ctx, prj.ID, store.TransferFilter{PaymentID: winner})
		require.NoError(t, err)
		require.Len(t, list, 1, "round %d: the payment's own transfer, under the payment", i)
		assert.Equal(t, x.TxHash, list[0].TxHash)
	}
	stop()
	t.Logf("owners: %v", wins)

	// Every late window closes: still matched, and the reconciler tells
	// none of them.
	clk.Add(paywatch.LateWindow + paywatch.ConfirmingGrace + time.Minute)
	due, err := s.DueUnmatched(ctx, 100)
	require.NoError(t, err)
	assert.Empty(t, due)
	all, total, err := s.ProjectTransfers(ctx, prj.ID, store.TransferFilter{Limit: 100})
	require.NoError(t, err)
	require.Equal(t, rounds, total)
	for _, tr := range all {
		assert.Equal(t, store.TransferMatched, tr.State, tr.TxHash)
		assert.Equal(t, winners[tr.TxHash], tr.PaymentID, tr.TxHash)
	}
	var events int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE event = 'transfer.unmatched'`).Scan(&events))
	assert.Zero(t, events, "no counted transfer is ever told as unmatched")
	n, err := s.CountUnmatched(ctx, prj.ID)
	require.NoError(t, err)
	assert.Zero(t, n)

	// What the readers saw while the claims raced.
	states := map[store.TransferState]int{}
	for h, seen := range w.seen {
		for sg, count := range seen {
			states[sg.state] += count
			switch {
			case sg.state == store.TransferPending && sg.paymentID == "":
			case sg.state == store.TransferMatched && sg.paymentID == winners[h]:
			default:
				t.Errorf("transfer %s, counted for %s, was seen %d times as %s (payment %q)", h, winners[h], count, sg.state, sg.paymentID)
			}
		}
	}
	t.Logf("readings: %v", states)
	assert.Positive(t, states[store.TransferPending], "the readers raced the claims")
	assert.Positive(t, states[store.TransferMatched], "the readers saw counted transfers")
}
