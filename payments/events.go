package payments

import (
	"context"

	"github.com/paywatch/paywatch/store"
)

// Events lists a project's webhook events, newest first, with where each
// one's delivery stands and its exact payload, and the total number
// matching f: the merchant's event log (operations.md §8), from which
// events missed during an outage are found and sent again with Redeliver.
func (s *Service) Events(ctx context.Context, projectID int64, f store.EventFilter) ([]store.Event, int, error) {
	return s.store.ListEvents(ctx, projectID, f)
}
