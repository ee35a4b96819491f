package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

// A payment started sealed (issue 42): its memo is sealed and its
// reference search attributes hold the keyed hashes it was started with;
// its run reads the sealed memo and so upserts nothing at its start, and
// its history replays on a worker registered with the same converter. A
// worker that reads the memo with the default converter (registered
// without WithDataConverter) would upsert again, and does not replay it.
func TestSealedPaymentStartsAsPublishedAndReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	codec, err := workflows.NewPayloadCodec(newKey(t))
	require.NoError(t, err)
	dc := workflows.NewDataConverter(codec)
	chain := &liveChain{network: paywatch.ARBITRUM, start: time.Now(), base: 1000}
	acts := activities.New(activities.Deps{Store: store.New(storetest.NewPool(t)), Chains: oneChain{chain}})
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.NewClientWithOptions(client.Options{DataConverter: dc, FailureConverter: workflows.NewFailureConverter(dc)})
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))
	w := worker.New(c, "sealed", worker.Options{})
	workflows.Register(w, acts, workflows.WithDataConverter(dc))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	refKey := workflows.DeriveSearchRefKey("mk_sealed")
	orderID := "order-sealed"
	in := paywatch.PaymentInput{
		PaymentID: uuid.NewString(), ProjectSlug: "shop", Mode: paywatch.ModePerPayment,
		Network: paywatch.ARBITRUM, Token: paywatch.USDC, Address: address, StartBlock: 1000,
		Amount: paywatch.MustParseAmount("7.25", 6), ExternalRef: "buyer@example.com", ExternalOrderID: &orderID,
		SearchRefs: &paywatch.SearchRefs{
			ExternalRef: workflows.SearchRef(refKey, "buyer@example.com"), ExternalOrderID: workflows.SearchRef(refKey, orderID),
		},
		CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().Add(time.Hour), AddressAssignedAt: time.Now().UTC(),
	}
	opts := client.StartWorkflowOptions{ID: workflows.PaymentWorkflowID(in.PaymentID), TaskQueue: "sealed"}
	opts.TypedSearchAttributes, opts.Memo = workflows.StartAttributes(in)
	run, err := c.ExecuteWorkflow(ctx, opts, workflows.PaymentWorkflowName, in)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryState)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond)

	events := history(ctx, t, c, run.GetID())
	for _, ev := range events {
		assert.False(t, publishes(ev), "a sealed start needs no upsert: %v", ev.GetEventType())
	}
	desc, err := c.DescribeWorkflowExecution(ctx, run.GetID(), "")
	require.NoError(t, err)
	info := desc.GetWorkflowExecutionInfo()
	for name, p := range info.GetMemo().GetFields() {
		assert.Equal(t, workflows.MetadataEncodingEncrypted, string(p.GetMetadata()[converter.MetadataEncoding]), "memo %s", name)
	}
	sa := info.GetSearchAttributes().GetIndexedFields()
	assert.Equal(t, `"`+in.SearchRefs.ExternalRef+`"`, string(sa["ExternalRef"].GetData()))
	assert.Equal(t, `"`+in.SearchRefs.ExternalOrderID+`"`, string(sa["ExternalOrderId"].GetData()))
	require.NoError(t, c.TerminateWorkflow(ctx, run.GetID(), "", "test done"))
	events = history(ctx, t, c, run.GetID())

	replay := func(opts ...workflows.RegisterOption) error {
		r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: dc})
		require.NoError(t, err)
		workflows.Register(replayRegistry{replayer: r}, &activities.Activities{}, opts...)
		return r.ReplayWorkflowHistory(nil, &historypb.History{Events: events})
	}
	require.NoError(t, replay(workflows.WithDataConverter(dc)))
	assert.Error(t, replay(), "the memo read with the default converter makes the run upsert again")
}
