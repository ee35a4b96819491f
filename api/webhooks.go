package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// redeliverEvent is POST /v1/projects/{slug}/webhook-events/{event_id}/redeliver:
// 202 once the event is on its way again, 404 "Event not found" for an
// unknown event or another project's.
func (s *Server) redeliverEvent(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.payments.ProjectBySlug(ctx, c.Param("slug"))
	if err != nil {
		return err
	}
	if err := s.payments.Redeliver(ctx, p.ID, c.Param("event_id")); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"success": true})
}
