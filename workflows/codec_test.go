package workflows_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"

	"github.com/paywatch/paywatch/workflows"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, workflows.PayloadKeySize)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

// What the codec seals names nothing of what it holds, and comes back
// whole; payloads written before encryption was on are read as they are.
func TestPayloadCodecSealsAndOpens(t *testing.T) {
	codec, err := workflows.NewPayloadCodec(newKey(t))
	require.NoError(t, err)
	dc := workflows.NewDataConverter(codec)
	secret := map[string]string{"external_ref": "alice@example.com", "address": "0x9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"}

	p, err := dc.ToPayload(secret)
	require.NoError(t, err)
	assert.Equal(t, workflows.MetadataEncodingEncrypted, string(p.Metadata[converter.MetadataEncoding]))
	assert.Equal(t, codec.KeyID(), string(p.Metadata[workflows.MetadataEncryptionKeyID]))
	for _, v := range secret {
		assert.False(t, bytes.Contains(p.Data, []byte(v)), "sealed payload holds %q", v)
	}
	var back map[string]string
	require.NoError(t, dc.FromPayload(p, &back))
	assert.Equal(t, secret, back)

	// Two seals of one value differ (a fresh nonce each time).
	p2, err := dc.ToPayload(secret)
	require.NoError(t, err)
	assert.NotEqual(t, p.Data, p2.Data)

	// An old, unsealed payload passes through.
	plain, err := converter.GetDefaultDataConverter().ToPayload(secret)
	require.NoError(t, err)
	back = nil
	require.NoError(t, dc.FromPayload(plain, &back))
	assert.Equal(t, secret, back)

	// Sealing twice seals once.
	again, err := codec.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	assert.Equal(t, p, again[0])
}

// A rotation: payloads sealed under the old key are read once it is listed
// among the old keys, and refused, naming the key id, when it is not.
func TestPayloadCodecRotation(t *testing.T) {
	oldKey, newKey := newKey(t), newKey(t)
	before, err := workflows.NewPayloadCodec(oldKey)
	require.NoError(t, err)
	sealed, err := workflows.NewDataConverter(before).ToPayload("payment pay_123")
	require.NoError(t, err)

	rotated, err := workflows.NewPayloadCodec(newKey, oldKey)
	require.NoError(t, err)
	var s string
	require.NoError(t, workflows.NewDataConverter(rotated).FromPayload(sealed, &s))
	assert.Equal(t, "payment pay_123", s)
	fresh, err := workflows.NewDataConverter(rotated).ToPayload("x")
	require.NoError(t, err)
	assert.Equal(t, workflows.PayloadKeyID(newKey), string(fresh.Metadata[workflows.MetadataEncryptionKeyID]), "seals with the new key")

	forgot, err := workflows.NewPayloadCodec(newKey)
	require.NoError(t, err)
	_, err = forgot.Decode([]*commonpb.Payload{sealed})
	require.ErrorIs(t, err, workflows.ErrUnknownPayloadKey)
	assert.Contains(t, err.Error(), workflows.PayloadKeyID(oldKey))
}

// A payload altered on the server, or relabelled with another key's id,
// is refused rather than read as something else.
func TestPayloadCodecRefusesTampering(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	codec, err := workflows.NewPayloadCodec(k1, k2)
	require.NoError(t, err)
	sealed, err := codec.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"100.00"`)}})
	require.NoError(t, err)

	flipped := &commonpb.Payload{Metadata: sealed[0].Metadata, Data: bytes.Clone(sealed[0].Data)}
	flipped.Data[len(flipped.Data)-1] ^= 1
	_, err = codec.Decode([]*commonpb.Payload{flipped})
	assert.Error(t, err)

	relabelled := &commonpb.Payload{Metadata: map[string][]byte{}, Data: sealed[0].Data}
	for k, v := range sealed[0].Metadata {
		relabelled.Metadata[k] = v
	}
	relabelled.Metadata[workflows.MetadataEncryptionKeyID] = []byte(workflows.PayloadKeyID(k2))
	_, err = codec.Decode([]*commonpb.Payload{relabelled})
	assert.Error(t, err)

	_, err = workflows.NewPayloadCodec(k1[:16])
	assert.ErrorContains(t, err, "16 bytes, not 32")
}

// Failures' messages go sealed too (they may name an address); the type,
// which the API maps to its answers, stays readable.
func TestFailureMessagesAreSealed(t *testing.T) {
	codec, err := workflows.NewPayloadCodec(newKey(t))
	require.NoError(t, err)
	fc := workflows.NewFailureConverter(workflows.NewDataConverter(codec))
	f := fc.ErrorToFailure(temporal.NewApplicationError("no transfer to TXYZ1234 for alice@example.com", "NotFound"))
	assert.NotContains(t, f.GetMessage(), "alice@example.com")
	assert.Equal(t, "NotFound", f.GetApplicationFailureInfo().GetType())
	err = fc.FailureToError(f)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	assert.True(t, strings.Contains(ae.Error(), "alice@example.com"))
}

// A search reference names nobody, is stable for one key, differs across
// keys, and leaves an empty reference empty.
func TestSearchRef(t *testing.T) {
	k := workflows.DeriveSearchRefKey("mk_test")
	a := workflows.SearchRef(k, "alice@example.com")
	assert.Regexp(t, `^h1_[0-9a-f]{32}$`, a)
	assert.Equal(t, a, workflows.SearchRef(k, "alice@example.com"))
	assert.NotEqual(t, a, workflows.SearchRef(k, "bob@example.com"))
	assert.NotEqual(t, a, workflows.SearchRef(workflows.DeriveSearchRefKey("mk_other"), "alice@example.com"))
	assert.Equal(t, "", workflows.SearchRef(k, ""))
	assert.NotEqual(t, workflows.DerivePayloadKey("mk_test"), k, "one key per purpose")
}

// A worker that lacks the key a workflow's input was sealed with fails
// only the workflow task, which Temporal retries, and does not fail the
// workflow: once a worker with the key polls, the workflow runs. (Without
// the panic in the workflow's converter, the SDK fails the workflow, and a
// payment would never be watched.)
func TestWorkerWithoutTheKeyLeavesTheWorkflowForOneWithIt(t *testing.T) {
	oldKey, newKey := newKey(t), newKey(t)
	sealer, err := workflows.NewPayloadCodec(oldKey)
	require.NoError(t, err)
	lacking, err := workflows.NewPayloadCodec(newKey)
	require.NoError(t, err)
	holding, err := workflows.NewPayloadCodec(newKey, oldKey)
	require.NoError(t, err)

	ts := temporaltest.NewServer(temporaltest.WithT(t))
	clientOf := func(c *workflows.PayloadCodec) client.Client {
		dc := workflows.NewDataConverter(c)
		return ts.NewClientWithOptions(client.Options{DataConverter: dc, FailureConverter: workflows.NewFailureConverter(dc)})
	}
	echo := func(ctx workflow.Context, s string) (string, error) { return "seen " + s, nil }
	const queue = "sealed"
	run, err := clientOf(sealer).ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: queue}, "echo", "alice@example.com")
	require.NoError(t, err)

	w := worker.New(clientOf(lacking), queue, worker.Options{})
	w.RegisterWorkflowWithOptions(echo, workflow.RegisterOptions{Name: "echo"})
	require.NoError(t, w.Start())
	reader := clientOf(holding)
	require.Eventually(t, func() bool {
		it := reader.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, 0)
		for it.HasNext() {
			ev, err := it.Next()
			if err == nil && ev.GetWorkflowTaskFailedEventAttributes() != nil {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the worker without the key fails the task")
	w.Stop()
	desc, err := reader.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus(), "the workflow waits")

	w2 := worker.New(reader, queue, worker.Options{})
	w2.RegisterWorkflowWithOptions(echo, workflow.RegisterOptions{Name: "echo"})
	require.NoError(t, w2.Start())
	t.Cleanup(w2.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got string
	require.NoError(t, reader.GetWorkflow(ctx, run.GetID(), run.GetRunID()).Get(ctx, &got))
	assert.Equal(t, "seen alice@example.com", got)
}
