package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/payments"
)

// deliveryView is an element of webhook-deliveries.
type deliveryView struct {
	ID           string  `json:"id"`
	EventID      string  `json:"event_id"`
	Event        string  `json:"event"`
	PaymentID    *string `json:"payment_id"` // null for a transfer.unmatched event
	Attempt      int     `json:"attempt"`
	StatusCode   *int    `json:"status_code"`
	ResponseBody *string `json:"response_body"`
	State        string  `json:"state"`
	CreatedAt    string  `json:"created_at"`
}

// listDeliveries is GET /v1/projects/{slug}/webhook-deliveries.
func (s *Server) listDeliveries(c echo.Context) error {
	ctx := c.Request().Context()
	f := payments.DeliveryFilter{PaymentID: c.QueryParam("payment_id")}
	var err error
	if f.Limit, f.Offset, err = pageQuery(c.QueryParams()); err != nil {
		return err
	}
	p, err := s.payments.ProjectBySlug(ctx, c.Param("slug"))
	if err != nil {
		return err
	}
	ds, err := s.payments.Deliveries(ctx, p.ID, f)
	if err != nil {
		return err
	}
	items := make([]deliveryView, 0, len(ds))
	for _, d := range ds {
		items = append(items, deliveryView{
			ID: d.ID, EventID: d.EventID, Event: d.Event, PaymentID: optID(d.PaymentID), Attempt: d.Attempt, StatusCode: d.StatusCode,
			ResponseBody: d.ResponseBody, State: d.State, CreatedAt: ts(d.CreatedAt),
		})
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "deliveries": items})
}
