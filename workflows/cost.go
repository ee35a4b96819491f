package workflows

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"
)

// Cost is what a workflow history costs on Temporal Cloud: its billable
// Actions, its events and its size.
type Cost struct {
	// Actions are the billable Temporal Cloud Actions the events record.
	Actions int
	// Events is the number of history events.
	Events int
	// Bytes is the size of the events, each as its protobuf encoding
	// (what the server stores, and what a worker reads on replay).
	Bytes int
	// ByKind splits Actions by what they pay for: "start", "activity:"
	// and the activity type, "activity retry", "timer", "signal:" and the
	// signal name, "search attributes", "update:" and the update name,
	// "options updated", "child workflow" and "markers".
	ByKind map[string]int
	// BytesByEvent splits Bytes by event type ("MARKER_RECORDED", ...).
	BytesByEvent map[string]int
}

// HistoryCost counts what Temporal Cloud bills for the events of one run
// (https://docs.temporal.io/cloud/actions):
//
//   - the run's start, 1 (a client start, a continue-as-new or a retry);
//     the start of a child run is billed in its parent (below), so a
//     child's own WorkflowExecutionStarted counts nothing;
//   - each activity scheduled, 1, and each retry of it, 1 (an
//     ActivityTaskStarted of attempt n counts n-1);
//   - each timer started, 1;
//   - each signal received, 1;
//   - each search attribute upsert, 1, unless it sets TemporalChangeVersion
//     alone (versioning is exempt); a memo upsert (WorkflowPropertiesModified)
//     is no Action;
//   - each update accepted, 1, and each change of the workflow's options, 1;
//   - each child workflow started, 2: the start command and the child's
//     execution;
//   - markers (version markers, local activities, side effects), 1 for each
//     workflow task that records any, since Temporal Cloud counts all the
//     RecordMarker commands of a workflow task as one Action.
//
// Actions that leave no event are not counted: queries, rejected updates,
// activity heartbeats, the extensions of a workflow task that a local
// activity outlasts (a slow receiver, a database outage), and a child's own
// Actions, which are in its history (add them with Add). The count is a
// lower bound where those happen.
func HistoryCost(events []*historypb.HistoryEvent) Cost {
	c := Cost{ByKind: map[string]int{}, BytesByEvent: map[string]int{}}
	count := func(kind string, n int) {
		c.ByKind[kind] += n
		c.Actions += n
	}
	markerTasks := map[int64]bool{}
	for _, e := range events {
		c.Events++
		size := proto.Size(e)
		c.Bytes += size
		c.BytesByEvent[strings.TrimPrefix(e.GetEventType().String(), "EVENT_TYPE_")] += size
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			a := e.GetWorkflowExecutionStartedEventAttributes()
			if a.GetParentWorkflowExecution() == nil || a.GetContinuedExecutionRunId() != "" {
				count("start", 1)
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			count("activity:"+e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName(), 1)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if n := e.GetActivityTaskStartedEventAttributes().GetAttempt(); n > 1 {
				count("activity retry", int(n-1))
			}
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			count("timer", 1)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			count("signal:"+e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName(), 1)
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, v := fields["TemporalChangeVersion"]; !v || len(fields) > 1 {
				count("search attributes", 1)
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			count("update:"+e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName(), 1)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
			count("options updated", 1)
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			count("child workflow", 2)
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			task := e.GetMarkerRecordedEventAttributes().GetWorkflowTaskCompletedEventId()
			if !markerTasks[task] {
				markerTasks[task] = true
				count("markers", 1)
			}
		}
	}
	return c
}

// Add adds o to c: a child run's cost to its parent's, or the pieces of a
// history spliced from several runs. Each piece must have been counted on
// its own (HistoryCost), since markers are grouped by workflow task and
// event ids repeat across runs.
func (c *Cost) Add(o Cost) {
	c.Actions += o.Actions
	c.Events += o.Events
	c.Bytes += o.Bytes
	if len(o.ByKind) > 0 && c.ByKind == nil {
		c.ByKind = map[string]int{}
	}
	for k, n := range o.ByKind {
		c.ByKind[k] += n
	}
	if len(o.BytesByEvent) > 0 && c.BytesByEvent == nil {
		c.BytesByEvent = map[string]int{}
	}
	for k, n := range o.BytesByEvent {
		c.BytesByEvent[k] += n
	}
}

// Prefixed returns c with each kind named prefix+kind, so that a child's
// Actions stay apart from its parent's once added.
func (c Cost) Prefixed(prefix string) Cost {
	out := c
	out.ByKind = make(map[string]int, len(c.ByKind))
	for k, n := range c.ByKind {
		out.ByKind[prefix+k] = n
	}
	return out
}

// Kinds is ByKind as "kind n" items in the order of the kinds' names.
func (c Cost) Kinds() string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(c.ByKind)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(c.ByKind[k]))
	}
	return b.String()
}
