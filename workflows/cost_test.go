package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	updatepb "go.temporal.io/api/update/v1"
	"google.golang.org/protobuf/proto"

	"github.com/paywatch/paywatch/workflows"
)

// HistoryCost counts Temporal Cloud's Actions by its rules
// (https://docs.temporal.io/cloud/actions), each checked by an event that
// would count otherwise under a wrong rule.
func TestHistoryCost(t *testing.T) {
	attrs := func(fields ...string) *commonpb.SearchAttributes {
		sa := &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{}}
		for _, f := range fields {
			sa.IndexedFields[f] = &commonpb.Payload{Data: []byte(`"x"`)}
		}
		return sa
	}
	marker := func(task int64) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{
			EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
			Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
				MarkerName: "Version", WorkflowTaskCompletedEventId: task,
			}},
		}
	}
	upsert := func(fields ...string) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{
			EventType: enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
			Attributes: &historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes{
				UpsertWorkflowSearchAttributesEventAttributes: &historypb.UpsertWorkflowSearchAttributesEventAttributes{SearchAttributes: attrs(fields...)},
			},
		}
	}
	of := func(typ enumspb.EventType) *historypb.HistoryEvent { return &historypb.HistoryEvent{EventType: typ} }
	parent := []*historypb.HistoryEvent{
		{ // 1
			EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
				WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{},
			},
		},
		of(enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
		of(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED),
		of(enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
		marker(4), marker(4), // one task's markers: 1
		upsert("TemporalChangeVersion"),                     // versioning alone: 0
		upsert("TemporalChangeVersion", "PaymentStatus"),    // 1
		upsert("PaymentStatus", "Network"),                  // 1
		of(enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED), // memo: 0
		{ // 1
			EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
			Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: "SavePaymentState"},
			}},
		},
		{ // third attempt: 2 retries
			EventType:  enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED,
			Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{Attempt: 3}},
		},
		of(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED),
		of(enumspb.EVENT_TYPE_TIMER_STARTED), // 1
		of(enumspb.EVENT_TYPE_TIMER_FIRED),
		{ // 1
			EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{
				SignalName: "transfer-seen",
			}},
		},
		{ // 1
			EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes{WorkflowExecutionUpdateAcceptedEventAttributes: &historypb.WorkflowExecutionUpdateAcceptedEventAttributes{
				AcceptedRequest: &updatepb.Request{Input: &updatepb.Input{Name: "cancel"}},
			}},
		},
		of(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED),
		of(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED),       // 1
		of(enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED), // 2
		of(enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED),
		of(enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED),
		marker(22), // another task's marker: 1
		of(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED),
	}
	c := workflows.HistoryCost(parent)
	assert.Equal(t, map[string]int{
		"start": 1, "markers": 2, "search attributes": 2, "activity:SavePaymentState": 1, "activity retry": 2,
		"timer": 1, "signal:transfer-seen": 1, "update:cancel": 1, "options updated": 1, "child workflow": 2,
	}, c.ByKind)
	assert.Equal(t, 14, c.Actions)
	assert.Equal(t, len(parent), c.Events)
	size := 0
	for _, ev := range parent {
		size += proto.Size(ev)
	}
	assert.Equal(t, size, c.Bytes)

	// A child's own start is billed in its parent (the 2 above); the
	// continued run of a child is a start of its own.
	child := []*historypb.HistoryEvent{
		{
			EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				ParentWorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: "payment/1"},
			}},
		},
		{
			EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
			Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: "SendWebhook"},
			}},
		},
	}
	cc := workflows.HistoryCost(child)
	assert.Equal(t, 1, cc.Actions)
	continued := proto.Clone(child[0]).(*historypb.HistoryEvent)
	continued.GetWorkflowExecutionStartedEventAttributes().ContinuedExecutionRunId = "run-1"
	assert.Equal(t, 1, workflows.HistoryCost([]*historypb.HistoryEvent{continued}).Actions)

	// Adding: a child's cost under its prefix, and the pieces of a splice
	// counted apart (their markers share a task id, and still count twice).
	c.Add(cc.Prefixed("webhook "))
	assert.Equal(t, 15, c.Actions)
	assert.Equal(t, len(parent)+len(child), c.Events)
	assert.Equal(t, 1, c.ByKind["webhook activity:SendWebhook"])
	var spliced workflows.Cost
	spliced.Add(workflows.HistoryCost([]*historypb.HistoryEvent{marker(4)}))
	spliced.Add(workflows.HistoryCost([]*historypb.HistoryEvent{marker(4)}))
	assert.Equal(t, 2, spliced.Actions)
	assert.Equal(t, "markers 2", spliced.Kinds())
}
