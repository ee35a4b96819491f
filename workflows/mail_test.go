package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/workflows"
)

// An e-mail that cannot be sent is retried, 10 s, 20 s, 40 s ... apart up
// to every 10 minutes, until it goes out: never dropped.
func TestMailWorkflowRetriesUntilSent(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	workflows.Register(env, activities.New(activities.Deps{}))
	start := env.Now()
	var tries []time.Duration
	env.OnActivity(workflows.ActivitySendMail, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.SendMailInput) error {
			assert.Equal(t, "m-1", in.MailID)
			tries = append(tries, env.Now().Sub(start))
			if len(tries) < 8 {
				return errors.New("connection refused")
			}
			return nil
		})
	env.ExecuteWorkflow(workflows.MailWorkflowName, workflows.SendMailInput{MailID: "m-1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	s := time.Second
	assert.Equal(t, []time.Duration{0, 10 * s, 30 * s, 70 * s, 150 * s, 310 * s, 630 * s, 1230 * s}, tries)
}
