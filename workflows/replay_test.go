package workflows_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/workflows"
)

// replayHistoryDir holds the recorded histories of deployed workflows, in
// Temporal's JSON history format (what `temporal workflow show --output
// json` prints). TestRecordReplayHistories writes them.
const replayHistoryDir = "testdata/replay"

// replayLifecyclePaths are the payment lifecycle paths whose recorded
// histories must be present, recorded at the current version of the
// payment workflow (replayCurrentVersion): the replay test fails without
// any of them, so it can never pass by replaying nothing, nor by replaying
// only what older releases recorded. Histories of older releases stay
// beside them under a suffix (paid-v0.json: before changeConfirmationsPushed).
var replayLifecyclePaths = []string{
	"paid",
	"partial-topped-up",
	"overpaid",
	"expired",
	"late-paid",
	"cancelled",
	"pool-txid",
	"reorg",
	"select-network",
	"continue-as-new",
}

// Every recorded history must replay with today's workflow code: a
// non-determinism error means a change reordered the commands of a
// deployed workflow, which must go behind workflow.GetVersion (a named
// helper in versions.go) rather than a re-recording.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(replayHistoryDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in %s; record them with "+
		"PAYWATCH_RECORD_HISTORIES=1 go test ./workflows -run TestRecordReplayHistories", replayHistoryDir)
	have := map[string]bool{}
	for _, f := range files {
		have[strings.TrimSuffix(filepath.Base(f), ".json")] = true
	}
	for _, name := range append(slices.Clone(replayLifecyclePaths), "continue-as-new-carried") {
		require.True(t, have[name], "the recorded history of the %q path is missing from %s", name, replayHistoryDir)
		v, ok := historyVersions(t, filepath.Join(replayHistoryDir, name+".json"))[replayVersionChange]
		require.True(t, ok && v == replayCurrentVersion,
			"%s.json was recorded at %s version %d, not the current %d: record the paths again", name, replayVersionChange, v, replayCurrentVersion)
	}
	// Lean payments' paths too, recorded without a version marker.
	for _, name := range append(slices.Clone(replayLifecyclePaths), "continue-as-new-carried") {
		name += leanSuffix
		require.True(t, have[name], "the recorded history of the %q path is missing from %s; record it with "+
			"PAYWATCH_RECORD_HISTORIES=lean go test ./workflows -run TestRecordReplayHistories", name, replayHistoryDir)
		require.Empty(t, historyVersions(t, filepath.Join(replayHistoryDir, name+".json")), "%s.json records version markers", name)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			// A history cut short would replay, but prove less: each ends
			// its run, and the continue-as-new path by continuing.
			end := enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
			if strings.HasPrefix(name, "continue-as-new") && !strings.Contains(name, "carried") {
				end = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
			}
			require.Equal(t, end, lastHistoryEvent(t, f), "last event of %s", f)
			replayHistoryFile(t, f)
		})
	}
}

// leanSuffix ends the names of the histories recorded for lean payments.
const leanSuffix = "-lean"

// replayVersionChange and replayCurrentVersion are the change ID and
// version that today's payment runs record in setup (setupVersion): the
// lifecycle paths must be recorded at it.
const (
	replayVersionChange  = "confirmations-pushed"
	replayCurrentVersion = 3
)

// historyVersions returns the version markers of a JSON history: change ID
// to version.
func historyVersions(t *testing.T, path string) map[string]int {
	t.Helper()
	r, err := os.Open(path)
	require.NoError(t, err)
	defer r.Close()
	h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
	require.NoError(t, err, "read %s", path)
	dc := converter.GetDefaultDataConverter()
	out := map[string]int{}
	for _, ev := range h.GetEvents() {
		m := ev.GetMarkerRecordedEventAttributes()
		if m == nil || m.GetMarkerName() != "Version" {
			continue
		}
		var id string
		var v int
		require.NoError(t, dc.FromPayloads(m.GetDetails()["change-id"], &id))
		require.NoError(t, dc.FromPayloads(m.GetDetails()["version"], &v))
		out[id] = v
	}
	return out
}

// lastHistoryEvent returns the type of the last event of a JSON history.
func lastHistoryEvent(t *testing.T, path string) enumspb.EventType {
	t.Helper()
	r, err := os.Open(path)
	require.NoError(t, err)
	defer r.Close()
	h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
	require.NoError(t, err, "read %s", path)
	require.NotEmpty(t, h.GetEvents(), "%s has no events", path)
	return h.GetEvents()[len(h.GetEvents())-1].GetEventType()
}

// replayHistoryFile replays one JSON history with the workflows registered
// exactly as the worker registers them, and fails on any error, such as
// non-determinism.
func replayHistoryFile(t *testing.T, path string) {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	workflows.Register(replayRegistry{replayer: r}, &activities.Activities{})
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(logger, path), "replay of %s", path)
}

// replayRegistry lets workflows.Register register on a WorkflowReplayer:
// workflows go to the replayer, activities are dropped (a replay runs
// none). The embedded nil Registry is never called.
type replayRegistry struct {
	worker.Registry
	replayer worker.WorkflowReplayer
}

func (r replayRegistry) RegisterWorkflow(w any) { r.replayer.RegisterWorkflow(w) }
func (r replayRegistry) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	r.replayer.RegisterWorkflowWithOptions(w, o)
}
func (r replayRegistry) RegisterDynamicWorkflow(w any, o workflow.DynamicRegisterOptions) {
	r.replayer.RegisterDynamicWorkflow(w, o)
}
func (replayRegistry) RegisterActivity(any)                                         {}
func (replayRegistry) RegisterActivityWithOptions(any, activity.RegisterOptions)    {}
func (replayRegistry) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}

// testLogWriter writes log lines to the test's log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = testLogWriter{}

// A history recorded by a run from before changeConfirmationsPushed that
// received the scanner's transfers-confirmed signal (sent by a new scanner
// while an older worker ran the payment, during a rolling deploy) replays
// with today's code: such a run never reads that signal. The history ends
// open, with the payment still confirming.
func TestReplayOldRunWithConfirmationSignal(t *testing.T) {
	replayHistoryFile(t, filepath.Join("testdata", "replay-open", "old-run-confirmation-signal.json"))
}
