package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// pendingWebhookBatch bounds how many deliveries one call starts, so that
// saving a URL on a project with a long backlog answers promptly; the
// reconciler starts the rest on its next passes.
const pendingWebhookBatch = 100

// redeliverEvent is POST /v1/projects/{slug}/webhook-events/{event_id}/redeliver:
// 202 once the event is on its way again, 404 "Event not found" for an
// unknown event or another project's.
func (s *Server) redeliverEvent(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.deps.Store.ProjectBySlug(ctx, c.Param("slug"))
	if err != nil {
		return err
	}
	if err := s.redeliver(ctx, p.ID, c.Param("event_id")); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"success": true})
}

// redeliver sends one of a project's webhook events again now, with its
// event_id and payload unchanged, signed with the project's current secret
// at every attempt, with a fresh set of up to 5 attempts on the usual
// schedule, logged after the event's earlier ones. A skipped event is sent
// too and counts toward the daily quota now. It is the one implementation
// of "send again": the operator endpoint, the merchant's
// POST /v1/events/{event_id}/redeliver and the dashboard call it with the
// project they authenticated, so another project's event is "Event not
// found" for all of them.
//
// Once the event is marked pending the redelivery is durable: if its
// workflow cannot be started now, the reconciler starts it, so the caller
// still gets its 202.
func (s *Server) redeliver(ctx context.Context, projectID int64, eventID string) error {
	ev, err := s.deps.Store.PrepareRedelivery(ctx, projectID, eventID)
	if err != nil {
		return err
	}
	if s.deps.Workflows == nil {
		return nil
	}
	in := workflows.WebhookInput{EventID: ev.EventID, FirstAttempt: ev.NextAttempt, Redeliver: true}
	if err := s.deps.Workflows.DeliverWebhook(ctx, in); err != nil {
		s.deps.Logger.Warn("start webhook redelivery; the reconciler will retry", "eventId", ev.EventID, "error", err)
	}
	return nil
}

// startPendingWebhooks starts the deliveries of pending events whose
// project has a webhook URL (of one project, or of all for projectID 0),
// leaving out those changed within minAge, and returns how many it started.
// It stops at the first failure: Temporal is then unreachable, and the
// events stay pending for the next call.
func startPendingWebhooks(ctx context.Context, st *store.Store, wf PaymentWorkflows, projectID int64, minAge time.Duration) (int, error) {
	if wf == nil {
		return 0, nil
	}
	evs, err := st.PendingWebhooks(ctx, projectID, minAge, pendingWebhookBatch)
	if err != nil {
		return 0, err
	}
	for i, ev := range evs {
		if err := wf.DeliverWebhook(ctx, workflows.WebhookInput{EventID: ev.EventID, FirstAttempt: ev.NextAttempt}); err != nil {
			return i, err
		}
	}
	return len(evs), nil
}

// deliverPendingWebhooks starts the deliveries a project's newly saved
// webhook URL makes possible: events raised while it had none were kept
// pending for this moment, even if their payment's workflow has ended. A
// failure is logged, not answered: the URL is saved, and the reconciler
// starts whatever is left.
func (s *Server) deliverPendingWebhooks(ctx context.Context, projectID int64) {
	n, err := startPendingWebhooks(ctx, s.deps.Store, s.deps.Workflows, projectID, 0)
	if err != nil {
		s.deps.Logger.Warn("start pending webhooks; the reconciler will retry", "projectId", projectID, "error", err)
	}
	if n > 0 {
		s.deps.Logger.Info("started pending webhooks", "projectId", projectID, "count", n)
	}
}
