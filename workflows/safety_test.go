package workflows_test

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
)

// The money-safety scenarios of issue 24, in the time-skipping
// environment. Each failed on the code before it.

// mined is a transfer of amount mined in the block made at start + at.
func (s *PaymentSuite) mined(hash, amount string, at time.Duration) paywatch.Transaction {
	b := uint64(int64(s.baseHead) + int64(at/s.every()))
	return paywatch.Transaction{TxHash: hash, BlockNumber: b, BlockHash: fmt.Sprintf("0xblock%d", b), From: "0xf", Amount: amt(amount)}
}

// Every RPC endpoint is down from before the deadline until 34 minutes
// after the deadline check was due, while the customer had paid on time.
// The payment waits for the chain rather than expire, and is paid on time
// once the check answers.
func (s *PaymentSuite) TestChainDownPastHalfAnHourStillPaysOnTime() {
	in := s.input()
	in.Mode = paywatch.ModePerUser // no late window: an expiry would lose the money
	deadline := in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter)
	s.final = []paywatch.Transaction{s.mined("0xpaid", "50.00", 58*time.Minute)}
	s.finalFails = 1 << 30
	s.at(deadline.Sub(s.start)+34*time.Minute, func() {
		s.Equal(paywatch.StatusPending, s.query().Status, "still waiting for the chain")
		s.mu.Lock()
		s.finalFails = 0
		s.mu.Unlock()
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	st := s.last()
	s.False(st.LatePayment)
	s.Equal("0xpaid", st.TxHash)
	s.Nil(st.CheckFailingSince, "the patience is over once the chain answers")
}

// The workers (or Temporal) were down from before the deadline until 40
// minutes after it: the first check after the restart fails, and the next
// one, a minute later, finds the on-time transfer.
func (s *PaymentSuite) TestWorkersDownPastTheDeadlineThenOneFailedCheck() {
	in := s.input()
	in.ExpiresAt = s.start.Add(-40 * time.Minute) // the timer fires 40 min late
	s.final = []paywatch.Transaction{s.mined("0xpaid", "50.00", -45*time.Minute)}
	s.finalFails = 4 // the first run of the check, all its attempts
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	st := s.last()
	s.False(st.LatePayment, "paid on time, not late")
	s.Equal(5, s.finalRuns, "4 failed attempts, then the check a minute later")
}

// A transfer the scanner signals while the check after the deadline runs
// (and finds nothing yet) is read before the payment expires: it counts as
// on time, and the payment is paid.
func (s *PaymentSuite) TestTransferSignalledDuringTheFinalCheckCounts() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	deadline := in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter)
	s.finalIn = 10 * time.Second
	s.at(deadline.Sub(s.start)+5*time.Second, func() {
		s.env.SignalWorkflow(workflows.SignalTransferSeen, s.mined("0xcaught", "50.00", 59*time.Minute))
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.False(s.last().LatePayment)
}

// A check that never answers ends the payment after a day of patience,
// counted from its first failure, with checks backing off to 5 minutes.
func (s *PaymentSuite) TestFinalCheckFailingForADayExpires() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	deadline := in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter)
	s.finalFails = 1 << 30
	firstFailure := deadline.Add(14 * time.Second)
	s.at(firstFailure.Sub(s.start)+paywatch.LateWindow-time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusPending, st.Status)
		s.Require().NotNil(st.CheckFailingSince)
		s.Equal(firstFailure, st.CheckFailingSince.UTC())
	})
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
	giveUp := firstFailure.Add(paywatch.LateWindow)
	s.Equal(giveUp.Add(14*time.Second), s.hooks[0].at, "the last try starts at the limit and fails 14 s later")
	// 30 tries a minute apart (74 s with the failing activity's own
	// retries), then one every 5 minutes (5 min 14 s).
	runs := s.finalRuns / 4 // each run fails all its 4 attempts
	s.Less(runs, 30+int((paywatch.LateWindow-30*time.Minute)/(5*time.Minute))+2)
	s.Greater(runs, 250)
}

// A reorg re-mines a confirming transfer with the same hash in another
// block: the scanner sends transfer-removed for the old block, then
// transfer-seen for the new one. Both reach the workflow in one task
// (they arrive while it saves its state), where transfer-seen signals are
// read first: the removal of the old block must not delete the transfer
// that is canonical again.
func (s *PaymentSuite) TestRemovalAndReinclusionInOneTaskKeepTheTransfer() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.saveIn = 5 * time.Second
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.at(time.Minute+2*time.Second, func() {
		old := s.transfer("0xa", "50.00")
		again := old
		again.BlockNumber, again.BlockHash = old.BlockNumber+1, "0xreorged"
		s.env.SignalWorkflow(workflows.SignalTransferRemoved, workflows.TransferRemoved{
			TxHash: "0xa", BlockNumber: old.BlockNumber, BlockHash: old.BlockHash,
		})
		s.env.SignalWorkflow(workflows.SignalTransferSeen, again)
	})
	s.at(3*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusConfirming, st.Status)
		s.Require().Len(st.Transactions, 1)
		s.Equal("0xreorged", st.Transactions[0].BlockHash)
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.Equal("0xreorged", s.last().Transactions[0].BlockHash)
}

// A late transfer mined a minute before the late window closes, still
// short of its confirmations then, gets the confirming grace: the payment
// is paid late once they come.
func (s *PaymentSuite) TestLateTransferConfirmingAtTheWindowsEndCounts() {
	in := s.input() // per_payment: 24 h late window
	lateEnd := in.ExpiresAt.Add(paywatch.LateWindow)
	s.at(lateEnd.Sub(s.start)-time.Minute, func() { s.signal("0xlate", "50.00") })
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventExpired, paywatch.EventCompleted}, s.events())
	st := s.last()
	s.True(st.LatePayment)
	s.True(s.now().After(lateEnd), "confirmed after the window's end")
}

// Continuing as new never holds the state machine behind a webhook: a
// status change that turns up just as the history asks to start afresh
// starts a webhook that takes 20 minutes, and a top-up meanwhile is
// counted at once.
func (s *PaymentSuite) TestContinueAsNewNeverWaitsForAWebhook() {
	in := s.input()
	in.Mode = paywatch.ModePerUser
	s.noScanner = true
	s.saveIn = 5 * time.Second
	s.deliverIn = 20 * time.Minute
	confirm := func(hash string) {
		for _, t := range s.query().Transactions {
			if t.TxHash == hash {
				s.env.SignalWorkflow(workflows.SignalTransfersConfirmed, workflows.TransfersConfirmed{Transfers: []workflows.TransferConfirmed{{
					TxHash: hash, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, Confirmations: required, Canonical: true,
				}}})
			}
		}
	}
	s.at(time.Minute, func() { s.signal("0xa", "20.00") })
	// While the state with 0xa saves, its confirmation comes and the
	// history grows long enough to start afresh.
	s.at(time.Minute+2*time.Second, func() {
		s.env.SetContinueAsNewSuggested(true)
		confirm("0xa")
	})
	s.at(3*time.Minute, func() { s.signal("0xb", "30.00") })
	s.at(4*time.Minute, func() { confirm("0xb") })
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventPartial, paywatch.EventCompleted}, s.events())
	// Queued once the state with the top-up is saved (5 s).
	s.Equal(s.start.Add(4*time.Minute+s.saveIn), s.hooks[1].at, "the top-up is counted while the partial webhook retries")
}

// The select-network activity recorded the address, but its answer was
// lost (its retries failed: a database failover). The page shows the
// address from the row; the workflow reads the row back, learns the
// network, and the customer's transfer counts.
func (s *PaymentSuite) TestLostSelectionAnswerIsReadBackFromTheRow() {
	var res any
	var err error
	s.selectErr = errors.New("connection reset by peer")
	s.row = &paywatch.Assignment{Network: paywatch.ERC20, Token: paywatch.USDT, Address: address,
		Amount: amt("50.00"), StartBlock: s.baseHead, AssignedAt: s.start}
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ERC20, Token: paywatch.USDT}, &res, &err)
	})
	s.at(2*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.ERC20, st.Network, "the selection recorded on the row")
		s.Equal(address, st.Address)
		s.signal("0xa", "50.00")
	})
	s.run(s.networkless(), paywatch.StatusPaid)
	s.Require().Error(err, "the caller was told the selection failed")
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.Equal(1, s.loads)
}

// A selection the workflow never heard of at all (the update itself was
// lost) is read back before the payment would expire without a network:
// the final check then finds the customer's on-time transfer.
func (s *PaymentSuite) TestSelectionOnlyOnTheRowIsReadBackAtTheDeadline() {
	s.row = &paywatch.Assignment{Network: paywatch.ERC20, Token: paywatch.USDT, Address: address,
		Amount: amt("50.00"), StartBlock: s.baseHead, AssignedAt: s.start}
	s.loadFails = 4 // the first read-back fails
	s.final = []paywatch.Transaction{s.mined("0xpaid", "50.00", 30*time.Minute)}
	s.run(s.networkless(), paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
	s.False(s.last().LatePayment)
	s.Equal(5, s.loads, "4 failed attempts, then the read that answered")
}

// A payment without a network whose row has none either expires silently
// at its deadline, after one read-back.
func (s *PaymentSuite) TestNetworklessExpiryReadsTheRowOnce() {
	in := s.networkless()
	s.run(in, noRelease)
	s.Equal(paywatch.StatusExpired, s.last().Status)
	s.Empty(s.events())
	s.Equal(1, s.loads)
	s.Equal(in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter), s.now())
}

// A pool + txid payment in its late window's grace with a hash still
// waiting for its re-check: the loop sleeps until the grace ends instead of
// spinning on a re-check it will not make (found by review: the workflow
// task never yielded).
func (s *PaymentSuite) TestTxidLateGraceWithAnUnfoundHashEnds() {
	in := s.txidInput()
	lateEnd := in.ExpiresAt.Add(paywatch.LateWindow)
	var r1, r2 any
	var e1, e2 error
	s.at(2*time.Hour, func() {
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xnever"}, &r1, &e1)
	})
	s.at(lateEnd.Sub(s.start)-time.Minute, func() {
		s.onChain("0xlast", "50.00")
		s.update(workflows.UpdateSubmitTxHash, workflows.SubmitTxHashRequest{TxHash: "0xlast"}, &r2, &e2)
		h := s.head()
		s.stallAt = &h // its confirmations come well into the grace
	})
	s.at(lateEnd.Sub(s.start)+20*time.Minute, func() { s.stallAt = nil })
	s.run(in, paywatch.StatusPaid)
	s.Require().NoError(e1)
	s.Require().NoError(e2)
	s.Equal([]paywatch.Event{paywatch.EventExpired, paywatch.EventCompleted}, s.events())
	s.True(s.last().LatePayment)
}

// A selection whose answer was lost, and whose read-back keeps failing,
// on a payment then cancelled: the address the row may hold is released.
func (s *PaymentSuite) TestCancelAfterALostSelectionReleasesTheRow() {
	var sel, res any
	var errSel, errCancel error
	s.selectErr = errors.New("connection reset by peer")
	s.loadFails = 1 << 30
	s.at(time.Minute, func() {
		s.update(workflows.UpdateSelectNetwork, workflows.SelectNetworkRequest{Network: paywatch.ERC20, Token: paywatch.USDT}, &sel, &errSel)
	})
	s.at(2*time.Minute, func() {
		s.update(workflows.UpdateCancel, workflows.CancelRequest{}, &res, &errCancel)
	})
	s.run(s.networkless(), paywatch.StatusCancelled)
	s.Require().Error(errSel)
	s.Require().NoError(errCancel)
}

// Runs recorded before the safety rules (setupVersion 2) keep the old
// patience: a final check that never succeeds expires the payment 30
// minutes after the deadline.
func (s *PaymentSuite) TestVersion2RunsKeepTheOldPatience() {
	s.markersOnly()
	s.env.OnGetVersion("confirmations-pushed", workflow.DefaultVersion, 4).Return(workflow.Version(2))
	in := s.input()
	in.Mode = paywatch.ModePerUser
	deadline := in.ExpiresAt.Add(paywatch.PendingShownExpiredAfter)
	s.finalFails = 1 << 30
	s.run(in, paywatch.StatusExpired)
	giveUp := deadline.Add(paywatch.ConfirmingGrace)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
	s.Equal(giveUp.Add(14*time.Second), s.hooks[0].at, "the last try starts at the limit and fails 14 s later")
	s.Nil(s.last().CheckFailingSince)
}

// Runs recorded before the safety rules ignore a confirmation buffered
// while the check at the end of the confirming grace ran: the payment
// expires, as it did.
func (s *PaymentSuite) TestVersion2RunsExpireBeforeReadingTheLastSignals() {
	s.markersOnly()
	s.env.OnGetVersion("confirmations-pushed", workflow.DefaultVersion, 4).Return(workflow.Version(2))
	in := s.input()
	in.Mode = paywatch.ModePerUser
	grace := in.ExpiresAt.Add(paywatch.ConfirmingGrace)
	s.noScanner = true
	s.checkIn = 5 * time.Second
	var t paywatch.Transaction
	s.at(59*time.Minute, func() {
		t = s.transfer("0xa", "50.00")
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t)
		h := s.head()
		s.stallAt = &h
	})
	s.at(grace.Sub(s.start)+2*time.Second, func() {
		s.env.SignalWorkflow(workflows.SignalTransfersConfirmed, workflows.TransfersConfirmed{Transfers: []workflows.TransferConfirmed{{
			TxHash: t.TxHash, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, Confirmations: required, Canonical: true,
		}}})
	})
	s.run(in, paywatch.StatusExpired)
	s.Equal([]paywatch.Event{paywatch.EventExpired}, s.events())
}

// Issue 37, item 1: a customer pays in full half an hour before the late
// window ends, while the network's scanner is stopped (its daily RPC
// budget spent) or lags, so no signal reports the transfer before the
// window's end. The close reads the chain up to the last block before
// that end and counts it: the payment is paid late, not told unmatched.
func (s *PaymentSuite) TestLateTransferNobodySignalledCountsByItsBlock() {
	in := s.input() // per_payment: 24 h late window
	lateEnd := in.ExpiresAt.Add(paywatch.LateWindow)
	s.at(lateEnd.Sub(s.start)-30*time.Minute, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lateChain = append(s.lateChain, s.transfer("0xunseen", "50.00"))
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventExpired, paywatch.EventCompleted}, s.events())
	st := s.last()
	s.True(st.LatePayment)
	s.Equal("0xunseen", st.TxHash)
	s.Require().Len(s.finalIns, 2, "the deadline's check, then the late window's")
	s.True(s.finalIns[0].Until.IsZero())
	s.Equal(lateEnd, s.finalIns[1].Until, "read up to the window's end")
	s.Equal(st.FinalHead+1, s.finalIns[1].ReadFrom, "not again what the deadline's check read")
	s.NotZero(st.FinalHead)
}

// The close's read of the chain that gets no answer (a provider down, or
// a node whose newest block is still before the window's end) is tried
// again, and funds it finds then still count.
func (s *PaymentSuite) TestLateWindowCheckIsRetriedUntilTheChainAnswers() {
	in := s.input()
	lateEnd := in.ExpiresAt.Add(paywatch.LateWindow)
	s.at(lateEnd.Sub(s.start)-time.Minute, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lateChain = append(s.lateChain, s.transfer("0xunseen", "50.00"))
		s.finalFails = 4 * 40 // 40 failed checks of 4 attempts each: well over an hour
	})
	s.run(in, paywatch.StatusPaid)
	s.Equal([]paywatch.Event{paywatch.EventExpired, paywatch.EventCompleted}, s.events())
	s.True(s.last().LatePayment)
	s.True(s.now().After(lateEnd.Add(paywatch.ConfirmingGrace)), "counted well after the window's end")
	last := s.finalIns[len(s.finalIns)-1]
	s.True(last.NoWait, "after half an hour of failures the check reads the chain itself")
	s.False(s.finalIns[1].NoWait, "the first try waits for a scanner at work")
}

// Nothing on chain before the window's end: the close's read finds
// nothing, the window closes, and the verdict is saved (LateClosed), which
// the store's queries read instead of the clock.
func (s *PaymentSuite) TestLateWindowClosesWithTheVerdictSaved() {
	in := s.input()
	s.run(in, paywatch.StatusExpired)
	st := s.last()
	s.True(st.LateClosed)
	s.True(st.LateChecked)
	s.True(st.LateByChain, "saved, so its network may idle through the window")
	s.Len(s.finalIns, 2)
}

// A run recorded at setupVersion 3 keeps closing its late window by the
// clock, without the chain read its history lacks.
func (s *PaymentSuite) TestVersion3RunsCloseTheLateWindowByTheClock() {
	s.markersOnly()
	s.env.OnGetVersion("confirmations-pushed", workflow.DefaultVersion, 4).Return(workflow.Version(3))
	in := s.input()
	s.run(in, paywatch.StatusExpired)
	s.Equal(in.ExpiresAt.Add(paywatch.LateWindow), s.now())
	s.Len(s.finalIns, 1, "the deadline's check only")
	s.False(s.last().LateChecked)
	s.False(s.last().LateByChain, "its network stays at block pace through the window")
}
