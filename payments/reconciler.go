package payments

import (
	"context"
	"log/slog"
	"time"

	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// Reconciler defaults.
const (
	// DefaultReconcileInterval is how often the reconciler looks for
	// payments without a workflow.
	DefaultReconcileInterval = 10 * time.Second
	// DefaultReconcileMinAge leaves a fresh payment to the request that
	// created it, which starts its workflow within milliseconds.
	DefaultReconcileMinAge = 5 * time.Second
	// DefaultWebhookReconcileMinAge leaves the first delivery of a
	// payment's event to the payment run that queued it for as long as
	// that run's own first attempt may take (workflows.FirstAttemptWindow),
	// so the reconciler does not make the same attempt beside it.
	// Redeliveries and transfer.unmatched events keep MinAge.
	DefaultWebhookReconcileMinAge = workflows.FirstAttemptWindow
	// reconcileBatch bounds the work of one pass.
	reconcileBatch = 500
	// pruneEvery is how many passes run between prunings of old
	// rate-limit windows.
	pruneEvery = 30
)

// Reconciler keeps payment rows and workflows in agreement: a row is
// written before its workflow starts, so a process that dies in between
// leaves a row whose workflow_started is false. The reconciler starts the
// workflow of every such row (the stable workflow ID makes a duplicate start
// harmless, so several replicas may run it), does the same for pending
// webhook events (Webhooks) and prunes old rate-limit windows on the side.
type Reconciler struct {
	Store     *store.Store
	Workflows Workflows
	Logger    *slog.Logger
	// Interval is the time between passes; 0 means DefaultReconcileInterval.
	Interval time.Duration
	// MinAge is how old an unstarted row (a pending event, a queued
	// message) must be; 0 means DefaultReconcileMinAge, and
	// DefaultWebhookReconcileMinAge for the first delivery of a payment's
	// webhook event.
	MinAge time.Duration
	// ChatOn is whether chat notifications are on (a bot token is set):
	// an unmatched transfer is then told in the project's chat too.
	ChatOn bool
}

// Run runs passes until ctx ends; it returns nil then.
func (r *Reconciler) Run(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultReconcileInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for pass := 0; ; pass++ {
		if _, err := r.Once(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("reconcile payments", "error", err)
		}
		if _, err := r.Unmatched(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("tell unmatched transfers", "error", err)
		}
		if _, err := r.Webhooks(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("reconcile webhooks", "error", err)
		}
		if _, err := r.Mail(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("reconcile e-mail", "error", err)
		}
		if _, err := r.Chat(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("reconcile chat messages", "error", err)
		}
		if pass%pruneEvery == 0 {
			if err := r.Store.PruneRateLimits(ctx); err != nil && ctx.Err() == nil {
				r.logger().Warn("prune rate limits", "error", err)
			}
			// Sessions idle past store.SessionIdle and links long expired.
			if err := r.Store.PruneAuth(ctx, store.SessionIdle); err != nil && ctx.Err() == nil {
				r.logger().Warn("prune dashboard sessions", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once starts the workflows of unstarted payments older than MinAge and
// returns how many it started.
func (r *Reconciler) Once(ctx context.Context) (int, error) {
	if r.Workflows == nil {
		return 0, nil
	}
	minAge := r.MinAge
	if minAge <= 0 {
		minAge = DefaultReconcileMinAge
	}
	ps, err := r.Store.UnstartedPayments(ctx, minAge, reconcileBatch)
	if err != nil {
		return 0, err
	}
	started := 0
	for _, p := range ps {
		if err := r.Workflows.Start(ctx, p.WorkflowInput()); err != nil {
			r.logger().Warn("start payment workflow", "paymentId", p.ID, "error", err)
			continue
		}
		if err := r.Store.MarkWorkflowStarted(ctx, p.ID); err != nil {
			return started, err
		}
		started++
	}
	if started > 0 {
		r.logger().Info("started missing payment workflows", "count", started)
	}
	return started, nil
}

// Webhooks starts the deliveries of pending events older than MinAge
// (see MinAge) whose project has a webhook URL, and returns how many it started. Such events
// were raised while the project had no URL, or are redeliveries, or were
// queued by a payment workflow that has not yet started their delivery;
// the API starts them when a URL is saved or a redelivery is asked for,
// and this pass covers a process that died or a Temporal that did not
// answer in between. A delivery already running is left as it is.
func (r *Reconciler) Webhooks(ctx context.Context) (int, error) {
	minAge, paymentMinAge := r.MinAge, r.MinAge
	if minAge <= 0 {
		minAge, paymentMinAge = DefaultReconcileMinAge, DefaultWebhookReconcileMinAge
	}
	n, err := startPendingWebhooks(ctx, r.Store, r.Workflows, 0, minAge, paymentMinAge)
	if n > 0 {
		r.logger().Info("started pending webhook deliveries", "count", n)
	}
	return n, err
}

// Mail starts the deliveries of queued e-mails older than MinAge that are
// not sent yet, and returns how many it asked to start; one whose delivery
// runs is kept.
func (r *Reconciler) Mail(ctx context.Context) (int, error) {
	if r.Workflows == nil {
		return 0, nil
	}
	minAge := r.MinAge
	if minAge <= 0 {
		minAge = DefaultReconcileMinAge
	}
	ids, err := r.Store.PendingMail(ctx, minAge, reconcileBatch)
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		if err := r.Workflows.SendMail(ctx, id); err != nil {
			return i, err
		}
		if err := r.Store.MarkMailStarted(ctx, id); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// Chat starts the deliveries of queued chat messages older than MinAge
// whose ChatWorkflow was never started (a child start lost to a rolling
// deploy or a terminated payment workflow), and returns how many.
func (r *Reconciler) Chat(ctx context.Context) (int, error) {
	if r.Workflows == nil {
		return 0, nil
	}
	minAge := r.MinAge
	if minAge <= 0 {
		minAge = DefaultReconcileMinAge
	}
	ids, err := r.Store.UnstartedChatMessages(ctx, minAge, reconcileBatch)
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		if err := r.Workflows.SendChat(ctx, id); err != nil {
			return i, err
		}
		if err := r.Store.MarkChatStarted(ctx, id); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

func (r *Reconciler) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}
