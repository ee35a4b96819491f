package paywatch

import "slices"

// Event is the type of a webhook, sent in the payload's event field.
type Event string

// The webhook events. No event is sent for confirming.
const (
	EventCompleted Event = "payment.completed"
	EventOverpaid  Event = "payment.overpaid"
	EventPartial   Event = "payment.partial"
	EventExpired   Event = "payment.expired"
	EventCancelled Event = "payment.cancelled"
)

var allEvents = []Event{EventCompleted, EventOverpaid, EventPartial, EventExpired, EventCancelled}

// Events returns the five webhook events; the caller owns the slice.
func Events() []Event {
	return slices.Clone(allEvents)
}

// ParseEvent validates an event name.
func ParseEvent(s string) (Event, error) {
	if slices.Contains(allEvents, Event(s)) {
		return Event(s), nil
	}
	return "", invalidf("unknown event %s", quoteInput(s))
}

// QuotaExempt reports whether the event bypasses the daily webhook quota:
// completed and overpaid are always sent, because a merchant must never miss
// money that arrived.
func (e Event) QuotaExempt() bool {
	return e == EventCompleted || e == EventOverpaid
}

// EventFor returns the webhook event announcing that a payment reached
// status s; ok is false for pending and confirming, which send none.
func EventFor(s Status) (e Event, ok bool) {
	switch s {
	case StatusPaid:
		return EventCompleted, true
	case StatusOverpaid:
		return EventOverpaid, true
	case StatusPartial:
		return EventPartial, true
	case StatusExpired:
		return EventExpired, true
	case StatusCancelled:
		return EventCancelled, true
	}
	return "", false
}
