package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	enumspb "go.temporal.io/api/enums/v1"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/workflows"
)

// WebhookSuite runs WebhookWorkflow in the SDK's time-skipping test
// environment with its two activities mocked by name: send answers what
// the test scripts for each attempt, record keeps the log.
type WebhookSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env   *testsuite.TestWorkflowEnvironment
	start time.Time

	mu    sync.Mutex
	sends []webhookSend
	log   []workflows.RecordWebhookAttemptInput
	// recordFails is how many record calls fail before one succeeds.
	recordFails int
	// answer scripts the send activity: the result or error of the k-th
	// call (from 1) for an attempt.
	answer func(in workflows.SendWebhookInput, k int) (workflows.SendWebhookResult, error)
}

type webhookSend struct {
	in workflows.SendWebhookInput
	at time.Duration // since the start
}

func TestWebhookSuite(t *testing.T) { suite.Run(t, new(WebhookSuite)) }

const testEventID = "5b0d9a51-6f4e-5d2c-8a61-0c4e2f1b9d7a"

var webhookServerError = workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeRetry, StatusCode: 503, ResponseBody: "busy"}

func (s *WebhookSuite) SetupSuite() {
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
}

func (s *WebhookSuite) SetupTest() {
	s.start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s.sends, s.log, s.recordFails = nil, nil, 0
	s.answer = func(workflows.SendWebhookInput, int) (workflows.SendWebhookResult, error) {
		return webhookServerError, nil
	}
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(s.start)
	workflows.Register(env, activities.New(activities.Deps{}))
	s.env = env
	env.OnActivity(workflows.ActivitySendWebhook, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.SendWebhookInput) (workflows.SendWebhookResult, error) {
			s.mu.Lock()
			s.sends = append(s.sends, webhookSend{in: in, at: env.Now().Sub(s.start)})
			k := 0
			for _, x := range s.sends {
				if x.in.Attempt == in.Attempt {
					k++
				}
			}
			s.mu.Unlock()
			return s.answer(in, k)
		})
	env.OnActivity(workflows.ActivityRecordWebhookAttempt, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.RecordWebhookAttemptInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.recordFails > 0 {
				s.recordFails--
				return errors.New("record webhook attempt: connection reset")
			}
			s.log = append(s.log, in)
			return nil
		}).Maybe()
}

func (s *WebhookSuite) run(in workflows.WebhookInput) {
	s.env.ExecuteWorkflow(workflows.WebhookWorkflowName, in)
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
}

func (s *WebhookSuite) attempts() (nums []int, at []time.Duration) {
	for _, x := range s.sends {
		nums = append(nums, x.in.Attempt)
		at = append(at, x.at)
	}
	return nums, at
}

func (s *WebhookSuite) logged() (nums []int, states []workflows.WebhookAttemptState) {
	for _, l := range s.log {
		nums = append(nums, l.Attempt)
		states = append(states, l.State)
	}
	return nums, states
}

var webhookGaveUp = []workflows.WebhookAttemptState{
	workflows.WebhookAttemptRetrying, workflows.WebhookAttemptRetrying, workflows.WebhookAttemptRetrying,
	workflows.WebhookAttemptRetrying, workflows.WebhookAttemptFailed,
}

// Five attempts exactly at 0 s, 10 s, 60 s, 5 min and 30 min; the last is
// logged failed.
func (s *WebhookSuite) TestScheduleAndGivingUp() {
	s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 1})
	nums, at := s.attempts()
	s.Equal([]int{1, 2, 3, 4, 5}, nums)
	s.Equal([]time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute}, at)
	lnums, states := s.logged()
	s.Equal([]int{1, 2, 3, 4, 5}, lnums)
	s.Equal(webhookGaveUp, states)
	s.Equal(503, s.log[0].StatusCode)
	s.Equal("busy", s.log[0].ResponseBody)
	s.Equal(30*time.Minute, s.env.Now().Sub(s.start))
}

// An attempt whose activity fails (the event could not be read) is made
// again under the same number, and the later attempts keep their slots
// measured from the first: the receiver still gets five.
func (s *WebhookSuite) TestActivityRetryKeepsTheAttempt() {
	s.answer = func(in workflows.SendWebhookInput, k int) (workflows.SendWebhookResult, error) {
		if in.Attempt == 2 && k <= 2 {
			return workflows.SendWebhookResult{}, errors.New("read webhook event: connection refused")
		}
		return webhookServerError, nil
	}
	s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 1})
	nums, at := s.attempts()
	s.Equal([]int{1, 2, 2, 2, 3, 4, 5}, nums)
	s.Equal([]time.Duration{0, 10 * time.Second, 11 * time.Second, 13 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute}, at)
	lnums, states := s.logged()
	s.Equal([]int{1, 2, 3, 4, 5}, lnums)
	s.Equal(webhookGaveUp, states)
}

// An attempt that cannot be made for longer than its activity's retries
// (the database is down for minutes) is made again until it goes out: the
// receiver still gets all five attempts, each once, and the ones after it
// keep their gaps from the moment it finally went out.
func (s *WebhookSuite) TestLongOutageUsesNoAttempt() {
	const failures = 20 // more than two activities' worth of retries
	s.answer = func(in workflows.SendWebhookInput, k int) (workflows.SendWebhookResult, error) {
		if in.Attempt == 2 && k <= failures {
			return workflows.SendWebhookResult{}, temporal.NewApplicationError("read webhook event: nothing was sent", workflows.ErrTypeWebhookNotSent)
		}
		return webhookServerError, nil
	}
	s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 1})
	var made []int
	var at []time.Duration
	for _, x := range s.sends {
		k := 0
		for _, y := range s.sends {
			if y.in.Attempt == x.in.Attempt && y.at <= x.at {
				k++
			}
		}
		if x.in.Attempt != 2 || k > failures {
			made = append(made, x.in.Attempt)
			at = append(at, x.at)
		}
	}
	s.Equal([]int{1, 2, 3, 4, 5}, made, "each attempt reached the receiver once")
	s.Greater(at[1], 5*time.Minute, "the outage outlasted the activity's retries")
	s.Equal([]time.Duration{50 * time.Second, 4*time.Minute + 50*time.Second, 29*time.Minute + 50*time.Second},
		[]time.Duration{at[2] - at[1], at[3] - at[1], at[4] - at[1]})
	lnums, states := s.logged()
	s.Equal([]int{1, 2, 3, 4, 5}, lnums)
	s.Equal(webhookGaveUp, states)
}

// A logging failure is retried by itself, without sending again.
func (s *WebhookSuite) TestLoggingRetriedWithoutSendingAgain() {
	s.answer = func(workflows.SendWebhookInput, int) (workflows.SendWebhookResult, error) {
		return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeDelivered, StatusCode: 200}, nil
	}
	s.recordFails = 3
	s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 1})
	s.Len(s.sends, 1)
	s.Equal([]workflows.RecordWebhookAttemptInput{{EventID: testEventID, Attempt: 1, StatusCode: 200, State: workflows.WebhookAttemptDelivered}}, s.log)
}

// A final attempt that times out every time (its worker dies) still ends
// the delivery as failed, logged under its number, so the event never
// stays retrying; a timeout counts as made even when an earlier try of it
// had failed before sending (the timed-out try may have sent).
func (s *WebhookSuite) TestFinalAttemptThatNeverCompletesIsFailed() {
	s.answer = func(in workflows.SendWebhookInput, _ int) (workflows.SendWebhookResult, error) {
		if in.Attempt == 5 {
			return workflows.SendWebhookResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE,
				temporal.NewApplicationError("read webhook event: nothing was sent", workflows.ErrTypeWebhookNotSent))
		}
		return webhookServerError, nil
	}
	s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 1})
	nums, _ := s.attempts()
	s.Greater(len(nums), 5, "the final attempt was retried")
	lnums, states := s.logged()
	s.Equal([]int{1, 2, 3, 4, 5}, lnums)
	s.Equal(webhookGaveUp, states)
	s.Equal(0, s.log[4].StatusCode)
	s.Contains(s.log[4].ResponseBody, "did not complete")
}

// A 2xx ends the delivery; so does a permanent failure, after one attempt.
func (s *WebhookSuite) TestDeliveredAndPermanentFailureEndAtOnce() {
	s.answer = func(in workflows.SendWebhookInput, _ int) (workflows.SendWebhookResult, error) {
		if in.Attempt == 1 {
			return webhookServerError, nil
		}
		return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeDelivered, StatusCode: 204}, nil
	}
	s.run(workflows.WebhookInput{EventID: testEventID})
	lnums, states := s.logged()
	s.Equal([]int{1, 2}, lnums, "FirstAttempt 0 means 1")
	s.Equal([]workflows.WebhookAttemptState{workflows.WebhookAttemptRetrying, workflows.WebhookAttemptDelivered}, states)
	s.Equal(10*time.Second, s.env.Now().Sub(s.start))

	s.SetupTest()
	s.answer = func(workflows.SendWebhookInput, int) (workflows.SendWebhookResult, error) {
		return workflows.SendWebhookResult{Outcome: workflows.WebhookOutcomeFailed, StatusCode: 410}, nil
	}
	s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 1})
	_, states = s.logged()
	s.Equal([]workflows.WebhookAttemptState{workflows.WebhookAttemptFailed}, states)
	s.Len(s.sends, 1)
}

// Without a webhook URL nothing is sent or logged: the event stays pending
// for the run that a saved URL starts. An event that needs no delivery
// ends the same way.
func (s *WebhookSuite) TestNoURLLeavesTheEventPending() {
	for _, o := range []workflows.WebhookOutcome{workflows.WebhookOutcomeNoURL, workflows.WebhookOutcomeDone} {
		s.SetupTest()
		s.answer = func(workflows.SendWebhookInput, int) (workflows.SendWebhookResult, error) {
			return workflows.SendWebhookResult{Outcome: o}, nil
		}
		s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 1})
		s.Len(s.sends, 1, o)
		s.Empty(s.log, o)
		s.Equal(time.Duration(0), s.env.Now().Sub(s.start), o)
	}
}

// A redelivery sends even a delivered event (Force) and numbers its
// attempts after the earlier ones.
func (s *WebhookSuite) TestRedeliveryContinuesTheNumbering() {
	s.run(workflows.WebhookInput{EventID: testEventID, FirstAttempt: 6, Redeliver: true})
	nums, _ := s.attempts()
	s.Equal([]int{6, 7, 8, 9, 10}, nums)
	for _, x := range s.sends {
		s.True(x.in.Force)
	}
	lnums, states := s.logged()
	s.Equal([]int{6, 7, 8, 9, 10}, lnums)
	s.Equal(webhookGaveUp, states)
}
