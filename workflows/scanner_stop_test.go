package workflows_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/workflows"
)

// syncBuffer is a log destination safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Issue 38, item 4: a worker that stops (SIGTERM of paywatch dev) ends its
// scans quietly, as paywatch stops it: worker options as in
// cmd/paywatch, then the client closes. A scan heartbeats after every
// poll, far more often than the SDK sends heartbeats, so the SDK holds the
// newest one back and sends it when the worker stops, while the scan
// returns; the end of the activity's context, or the client closing, cut
// that send short with a WARN "RecordActivityHeartbeat with error ...
// context canceled" per network on every clean stop, and the scan's
// result often failed with "context canceled".
func TestScannerStopsWithoutHeartbeatWarnings(t *testing.T) {
	n := paywatch.ERC20
	e := newScanEnv(t, []paywatch.Network{n}, envOptions{})
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := e.ts.NewClientWithOptions(client.Options{Logger: sdklog.NewStructuredLogger(logger)})
	w := worker.New(c, scanQueue, worker.Options{WorkerStopTimeout: activities.WorkerStopTimeout})
	workflows.RegisterScanner(w, e.scanner)
	require.NoError(t, w.Start())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			w.Stop()
		}
	})
	require.NoError(t, workflows.EnsureScanner(e.ctx, c, scanQueue, workflows.ScannerInput{
		Network: n, RunFor: time.Minute, HeartbeatTimeout: 5 * time.Second,
	}))
	// The scan polls every 100 ms and heartbeats after each poll; the SDK
	// sends one heartbeat per 4 s and holds the newest of the others back.
	head, err := e.dn.Mine(e.ctx, n, 2)
	require.NoError(t, err)
	e.waitScanned(n, head)
	time.Sleep(time.Second)
	w.Stop()
	stopped = true
	c.Close()
	// A heartbeat cut short is logged as the call returns.
	time.Sleep(500 * time.Millisecond)
	assert.NotContains(t, logs.String(), "RecordActivityHeartbeat", "a clean stop logs no heartbeat error")
	assert.NotContains(t, logs.String(), "level=ERROR")

	// The scan ran for less than its minute: it ended as a finished run,
	// for the next worker to take over at once, not as a failed attempt.
	var events []enumspb.EventType
	it := e.c.GetWorkflowHistory(e.ctx, workflows.ScannerWorkflowID(n), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		events = append(events, ev.GetEventType())
	}
	assert.Contains(t, events, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
	assert.NotContains(t, events, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED)
}
