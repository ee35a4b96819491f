package store

import (
	"time"

	"github.com/paywatch/paywatch"
)

// Now is the store's clock, for tests that stand in for a workflow.
func (s *Store) Now() time.Time { return s.clock() }

// DrawMemosWith makes the store draw memo payments' memos with draw.
func (s *Store) DrawMemosWith(draw func(paywatch.Network) string) { s.newMemo = draw }
