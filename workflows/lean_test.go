package workflows_test

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
)

// A transfer the scanner read already deep enough (a batch over a burst of
// blocks) comes with its depth in the one transfer-seen signal: the
// payment counts it at once, with no transfers-confirmed signal and no
// check of its own. A depth short of the network's confirmations confirms
// nothing.
func (s *PaymentSuite) TestSeenWithItsDepthConfirmsAtOnce() {
	s.noScanner = true
	deep := func(hash string, depth int) paywatch.Transaction {
		t := s.transfer(hash, "50.00")
		t.BlockNumber -= uint64(depth - 1)
		t.BlockHash = "0xdeep" + hash
		t.Confirmations = depth
		return t
	}
	s.at(time.Minute, func() { s.env.SignalWorkflow(workflows.SignalTransferSeen, deep("0xshallow", required-1)) })
	s.at(2*time.Minute, func() {
		st := s.query()
		s.Equal(paywatch.StatusConfirming, st.Status, "one confirmation short counts nothing yet")
		s.env.SignalWorkflow(workflows.SignalTransferSeen, deep("0xdeep", required))
	})
	s.run(s.input(), paywatch.StatusPaid)
	st := s.last()
	s.Equal(s.start.Add(2*time.Minute), st.PaidAt.UTC(), "counted when its one signal came")
	s.Zero(s.checks, "no confirmation check of the workflow's own")
	s.Equal([]paywatch.Event{paywatch.EventCompleted}, s.events())
}

// A lean run makes a webhook's first attempt itself, when it queues the
// event; only a retry starts the event's WebhookWorkflow, which makes the
// second attempt on the schedule (10 s after the first) and numbers it 2.
// Runs before make every attempt from the WebhookWorkflow, on the same
// schedule.
func (s *PaymentSuite) TestFirstWebhookAttemptThenTheSchedule() {
	s.failSends = 1
	s.at(time.Minute, func() { s.signal("0xa", "50.00") })
	s.run(s.input(), paywatch.StatusPaid)
	s.Require().Len(s.hooks, 1)
	s.Require().Len(s.sends, 2, "a retry, then the delivery")
	paidAt := s.hooks[0].at
	s.Equal(1, s.sends[0].in.Attempt)
	s.Equal(paidAt, s.sends[0].at, "the first attempt goes out when the event is queued")
	s.Equal(2, s.sends[1].in.Attempt)
	s.Equal(paidAt.Add(workflows.WebhookSchedule[1]), s.sends[1].at, "the second keeps the schedule")
	s.Equal([]string{s.hooks[0].in.EventID}, s.delivered)
	s.Equal(s.sends[1].at, s.now(), "the payment waits for the delivery")
}

// A lean run's save that fails for minutes (a database failover) is tried
// again until it succeeds, as a regular activity's is: the payment's row
// and its webhook never miss the state the workflow decided. (The test
// environment bounds a regular activity's retries by the workflow's run
// timeout, which a real server does not: only the lean pass tells.)
func (s *PaymentSuite) TestSaveRetriedThroughAnOutage() {
	if s.lifecycle < workflows.LeanLifecycle {
		s.T().Skip("lean runs only")
	}
	s.at(time.Minute, func() {
		s.mu.Lock()
		s.saveFails = 12 // about 8 minutes of the retry policy's back-off
		s.mu.Unlock()
		s.signal("0xa", "50.00")
	})
	s.run(s.input(), paywatch.StatusPaid)
	s.Equal(paywatch.StatusPaid, s.last().Status, "the paid state is saved")
	s.Require().Len(s.hooks, 1)
	s.Equal([]string{s.hooks[0].in.EventID}, s.delivered)
}

// A run that is not lean and whose history says a worker of the release
// before handled a depth as seen only (no seen-depth marker) keeps doing
// so: the transfer waits for its confirmation like any other.
func (s *PaymentSuite) TestSeenDepthIgnoredWhereTheHistoryDid() {
	s.markersOnly()
	s.env.OnGetVersion("seen-depth", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	s.noScanner = true
	s.at(time.Minute, func() {
		t := s.transfer("0xa", "50.00")
		t.Confirmations = required
		s.env.SignalWorkflow(workflows.SignalTransferSeen, t)
	})
	s.at(2*time.Minute, func() { s.Equal(paywatch.StatusConfirming, s.query().Status, "seen only") })
	s.run(s.input(), paywatch.StatusPaid)
	s.Equal(s.start.Add(11*time.Minute), s.last().PaidAt.UTC(), "confirmed by the workflow's own check")
}
