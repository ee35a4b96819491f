package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// This file is the chain scanner's workflow: one long-running workflow per
// network, with a fixed ID, so that however many worker replicas run,
// exactly one scan of each network is in progress in the whole cluster, and
// a crashed worker's scan resumes on another one. The polling itself happens
// inside one long heartbeating activity (ActivityScanNetwork, implemented by
// *activities.Scanner), not as one workflow step per poll; the activity
// returns every RunFor so that the workflow can continue as new.

// Scanner workflow, activity and query names, registered explicitly.
const (
	// ScannerWorkflowName is the registered name of the scanner workflow.
	ScannerWorkflowName = "scanner"
	// ActivityScanNetwork polls a network, records matching transfers and
	// signals payment workflows until RunFor has passed.
	ActivityScanNetwork = "scanner.scan"
	// QueryScanProgress returns the ScanProgress of the last finished scan
	// activity.
	QueryScanProgress = "scan-progress"
)

// Scanner defaults.
const (
	// DefaultScanRunFor is how long one scan activity runs before it
	// returns and the workflow continues (as new every few runs).
	DefaultScanRunFor = 10 * time.Minute
	// DefaultScanHeartbeatTimeout is how long a scan may go without a
	// heartbeat before Temporal gives it to another worker: the failover
	// time after a worker dies. The activity heartbeats after every poll and
	// during every wait, and bounds each RPC below this.
	DefaultScanHeartbeatTimeout = time.Minute
	// scanRunsPerExecution is how many scan activities one run executes
	// before continuing as new, if the server does not suggest it earlier.
	scanRunsPerExecution = 12
)

// ScannerWorkflowID is the workflow ID of network n's scanner, such as
// "scanner/TRC20": fixed, so a second start finds the running one.
func ScannerWorkflowID(n paywatch.Network) string { return "scanner/" + string(n) }

// ScannerInput starts (or continues) a network's scanner workflow.
type ScannerInput struct {
	Network paywatch.Network
	// RunFor is how long each scan activity runs; 0 means DefaultScanRunFor.
	RunFor time.Duration
	// HeartbeatTimeout is the scan activity's heartbeat timeout; 0 means
	// DefaultScanHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// Progress is what the previous run reached, carried across
	// continue-as-new for the query; the activity resumes from the cursor
	// in PostgreSQL, which is the truth.
	Progress ScanProgress
}

// ScanInput is the payload of ActivityScanNetwork.
type ScanInput struct {
	Network paywatch.Network
	// RunFor is how long to poll before returning.
	RunFor time.Duration
}

// ScanProgress is where a scan stands: it is the activity's heartbeat
// detail and result, and the answer of QueryScanProgress.
type ScanProgress struct {
	// Height is the last block whose transfers are recorded and signalled.
	Height uint64
	// BlockHash is the hash of block Height when it was scanned.
	BlockHash string
	// Head is the newest block the scanner saw.
	Head uint64
	// Transfers counts the matching transfers recorded by this activity.
	Transfers int
	// Reorgs counts the reorgs this activity detected.
	Reorgs int
	// Confirmations counts the transfers this activity signalled as having
	// their confirmations (or as gone from the chain).
	Confirmations int
	// Idle is set while nothing waits on the network and the scanner polls
	// at its idle interval.
	Idle bool `json:",omitempty"`
	// OverBudget is set while the scanner waits for its network's daily
	// RPC budget (PAYWATCH_<NETWORK>_DAILY_BUDGET).
	OverBudget bool `json:",omitempty"`
}

// ScannerActivities is what the scanner workflow needs from its activity;
// *activities.Scanner implements it. RegisterScanner takes this interface
// because package activities imports this package for the payload types.
type ScannerActivities interface {
	ScanNetwork(ctx context.Context, in ScanInput) (ScanProgress, error)
}

// RegisterScanner registers the scanner workflow and its activity on a
// worker under their explicit names. It is separate from Register so that a
// process may run payments without scanners (or the reverse).
func RegisterScanner(r worker.Registry, a ScannerActivities) {
	r.RegisterWorkflowWithOptions(ScannerWorkflow, workflow.RegisterOptions{Name: ScannerWorkflowName})
	r.RegisterActivityWithOptions(a.ScanNetwork, activity.RegisterOptions{Name: ActivityScanNetwork})
}

// ScannerWorkflow keeps one network scanned for as long as it runs: it runs
// the scan activity again and again (each run polls for RunFor, heartbeating
// its progress), and continues as new when the server suggests it or every
// few runs, once no handler is running. A failed scan is retried without
// limit: transient failures are retried inside the activity already, so a
// failure here means the worker died or the activity timed out, and the
// retry resumes elsewhere from the stored cursor.
func ScannerWorkflow(ctx workflow.Context, in ScannerInput) error {
	logger := workflow.GetLogger(ctx)
	runFor := in.RunFor
	if runFor <= 0 {
		runFor = DefaultScanRunFor
	}
	heartbeat := in.HeartbeatTimeout
	if heartbeat <= 0 {
		heartbeat = DefaultScanHeartbeatTimeout
	}
	progress := in.Progress
	if err := workflow.SetQueryHandler(ctx, QueryScanProgress, func() (ScanProgress, error) {
		return progress, nil
	}); err != nil {
		return err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The activity returns after runFor; the margin covers its last
		// poll, whose RPCs are bounded below the heartbeat timeout.
		StartToCloseTimeout: runFor + 2*heartbeat + time.Minute,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})
	for runs := 1; ; runs++ {
		var out ScanProgress
		err := workflow.ExecuteActivity(actx, ActivityScanNetwork, ScanInput{Network: in.Network, RunFor: runFor}).Get(ctx, &out)
		switch {
		case err != nil && (temporal.IsCanceledError(err) || ctx.Err() != nil):
			return err
		case err != nil:
			// Only a non-retryable error gets here (an unknown network, a
			// bug): keep the workflow, so the scan starts again on its own
			// once a new deployment fixes the cause.
			logger.Error("scan failed; trying again in a minute", "network", in.Network, "error", err)
			if err := workflow.Sleep(ctx, time.Minute); err != nil {
				return err
			}
		case out.Height > 0 || out.Head > 0: // a run that never reached the chain keeps the last progress
			progress = out
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || runs >= scanRunsPerExecution {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			next := in
			next.Progress = progress
			return workflow.NewContinueAsNewError(ctx, ScannerWorkflowName, next)
		}
	}
}

// EnsureScanners starts the scanner workflow of each network on taskQueue
// unless it is already running; every process that runs a worker may call
// it at start. Already running is success (WorkflowIDConflictPolicy
// USE_EXISTING), and a scanner that ended (terminated by an operator,
// failed) is started again.
func EnsureScanners(ctx context.Context, c client.Client, taskQueue string, networks []paywatch.Network) error {
	var errs []error
	for _, n := range networks {
		if err := EnsureScanner(ctx, c, taskQueue, ScannerInput{Network: n}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// EnsureScanner is EnsureScanners for one network with explicit settings.
// The settings of a scanner that is already running are left as they are.
func EnsureScanner(ctx context.Context, c client.Client, taskQueue string, in ScannerInput) error {
	if _, ok := paywatch.LookupNetwork(in.Network); !ok {
		return fmt.Errorf("start scanner: unknown network %q", in.Network)
	}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       ScannerWorkflowID(in.Network),
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, ScannerWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s scanner: %w", in.Network, err)
	}
	return nil
}
