package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// eventView is an element of GET /v1/events.
type eventView struct {
	EventID   string  `json:"event_id"`
	Event     string  `json:"event"`
	PaymentID *string `json:"payment_id"` // null for a transfer.unmatched event
	Sequence  int     `json:"sequence"`
	CreatedAt string  `json:"created_at"`
	State     string  `json:"state"`
	Attempts  int     `json:"attempts"`
	// Payload is the delivered body, as a JSON object.
	Payload json.RawMessage `json:"payload"`
}

// eventFilter parses the query of GET /v1/events: limit, offset and
// created_after as GET /v1/payments takes them, with the same messages;
// payment_id; and state, the delivery state ("Invalid state filter").
func eventFilter(c echo.Context) (payments.EventFilter, error) {
	var f payments.EventFilter
	q := c.QueryParams()
	var err error
	if f.Limit, f.Offset, err = pageQuery(q); err != nil {
		return f, err
	}
	if f.CreatedAfter, err = timeQuery(q, "created_after", paywatch.MsgInvalidCreated); err != nil {
		return f, err
	}
	if _, ok := q["payment_id"]; ok {
		id := q.Get("payment_id")
		f.PaymentID = &id
	}
	if _, ok := q["state"]; ok {
		st := payments.WebhookState(q.Get("state"))
		if !payments.ValidWebhookState(st) {
			return f, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidState)
		}
		f.State = &st
	}
	return f, nil
}

// listEvents is GET /v1/events: the project's webhook events, newest
// first, with pagination as GET /v1/payments has it.
func (s *Server) listEvents(c echo.Context) error {
	f, err := eventFilter(c)
	if err != nil {
		return err
	}
	evs, total, err := s.payments.Events(c.Request().Context(), project(c).ID, f)
	if err != nil {
		return err
	}
	items := make([]eventView, 0, len(evs))
	for _, ev := range evs {
		items = append(items, eventView{
			EventID: ev.EventID, Event: string(ev.Event), PaymentID: optID(ev.PaymentID), Sequence: ev.Sequence,
			CreatedAt: ts(ev.CreatedAt), State: string(ev.State), Attempts: ev.Attempts, Payload: ev.Payload,
		})
	}
	return c.JSON(http.StatusOK, map[string]any{
		"success":    true,
		"events":     items,
		"pagination": pagination(f.Limit, f.Offset, len(items), total),
	})
}

// redeliverOwnEvent is POST /v1/events/{event_id}/redeliver: the merchant's
// "send again", the same use case as the operator's (payments.Service.
// Redeliver): 202 once the event is durably on its way, 404 "Event not
// found" for an unknown event, a malformed id or another project's event.
func (s *Server) redeliverOwnEvent(c echo.Context) error {
	if err := s.payments.Redeliver(c.Request().Context(), project(c).ID, c.Param("event_id")); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"success": true})
}

// optID is an id that may be missing: null in JSON when "".
func optID(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}
