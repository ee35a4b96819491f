package payments

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/paywatch/paywatch/store"
)

// markTimeout bounds one batch of startedMarks.
const markTimeout = 30 * time.Second

// startedMarks records, after the request that started them has answered,
// that payment workflows run (payments.workflow_started), many rows to a
// statement. A creation waits for its workflow's start, never for this
// record: a mark that is late or lost (a process that dies, a database that
// does not answer) leaves the row as the reconciler expects a row whose
// start failed, and it starts the workflow again (a no-op, the ID being
// stable) and marks it, DefaultReconcileMinAge after the creation. Only a
// workflow that started is ever marked.
type startedMarks struct {
	store *store.Store
	log   *slog.Logger

	mu       sync.Mutex
	pending  []string
	flushing bool
}

// add queues the mark of payment id; it starts a flush unless one runs,
// which takes it along.
func (m *startedMarks) add(ctx context.Context, id string) {
	m.mu.Lock()
	m.pending = append(m.pending, id)
	if m.flushing {
		m.mu.Unlock()
		return
	}
	m.flushing = true
	m.mu.Unlock()
	go m.flush(context.WithoutCancel(ctx))
}

// flush writes the queued marks, a batch at a time, until none is left:
// the marks queued while a batch is written make the next batch.
func (m *startedMarks) flush(ctx context.Context) {
	for {
		m.mu.Lock()
		ids := m.pending
		m.pending = nil
		if len(ids) == 0 {
			m.flushing = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		bctx, cancel := context.WithTimeout(ctx, markTimeout)
		if err := m.store.MarkWorkflowsStarted(bctx, ids); err != nil {
			m.log.Warn("record payment workflow starts; the reconciler will start them again", "count", len(ids), "error", err)
		}
		cancel()
	}
}
