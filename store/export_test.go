package store

import "time"

// Now is the store's clock, for tests that stand in for a workflow.
func (s *Store) Now() time.Time { return s.clock() }
