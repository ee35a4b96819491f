package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/workflows"
)

// A chat message Telegram did not take is retried with back-off, and after
// a 429 exactly after its retry_after; it never blocks anything else.
func TestChatWorkflowRetries(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	workflows.Register(env, activities.New(activities.Deps{}))
	start := env.Now()
	var tries []time.Duration
	env.OnActivity(workflows.ActivitySendChat, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.SendChatInput) error {
			assert.Equal(t, "e-1", in.EventID)
			tries = append(tries, env.Now().Sub(start))
			switch len(tries) {
			case 1:
				return errors.New("502 Bad Gateway")
			case 2:
				return temporal.NewApplicationErrorWithOptions("429", workflows.ErrTypeChatNotSent,
					temporal.ApplicationErrorOptions{NextRetryDelay: 42 * time.Second})
			}
			return nil
		})
	env.ExecuteWorkflow(workflows.ChatWorkflowName, workflows.SendChatInput{EventID: "e-1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, []time.Duration{0, 5 * time.Second, 47 * time.Second}, tries)
}

// A message that runs out of retries (a day on a real server: the
// activity's ScheduleToCloseTimeout) is recorded as failed, not dropped.
func TestChatWorkflowGivesUpAfterADay(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	workflows.Register(env, activities.New(activities.Deps{}))
	env.OnActivity(workflows.ActivitySendChat, mock.Anything, mock.Anything).Return(errors.New("timeout"))
	var failed workflows.SendChatInput
	env.OnActivity(workflows.ActivityFailChat, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.SendChatInput) error { failed = in; return nil })
	env.ExecuteWorkflow(workflows.ChatWorkflowName, workflows.SendChatInput{EventID: "e-2"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, "e-2", failed.EventID)
	assert.Contains(t, failed.Reason, "timeout")
}
