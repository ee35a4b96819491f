package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/paywatch/paywatch/workflows"
)

// TestFirstSecondAfterFreshStart is issue 11's item 4: on a fresh data dir,
// the first second after /health first answers 200 works like every later
// one. A load balancer polls /health while `paywatch dev` starts; as soon
// as it answers 200 a merchant creates two payments, the customer of one
// selects its network and the merchant cancels the other. Nothing answers
// 500, and no workflow task of either payment failed (before the fix they
// failed with BadSearchAttributes until the server's namespace cache knew
// PaymentStatus and the rest).
func TestFirstSecondAfterFreshStart(t *testing.T) {
	dataDir := t.TempDir()
	_, err := os.Stat(filepath.Join(dataDir, "temporal.db"))
	require.ErrorIs(t, err, os.ErrNotExist, "a fresh data dir")
	cfg := devConfig(t, dataDir)
	apiAddr, payAddr := freeAddr(t), freeAddr(t)
	cfg.APIAddr, cfg.BaseURL = apiAddr, "http://"+apiAddr
	cfg.PayAddr, cfg.PayURL = payAddr, "http://"+payAddr
	out := &syncBuffer{}
	m := NewMain(cfg, out, out)
	t.Cleanup(func() { _ = m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()

	// /health, polled from before the process listens, as a load balancer does.
	var ready time.Time
	for ready.IsZero() {
		select {
		case err := <-ran:
			require.NoError(t, err, out.String())
			ran = nil // Run returned; keep polling until /health answers
		case <-ctx.Done():
			t.Fatalf("/health never answered 200\n%s", out.String())
		case <-time.After(5 * time.Millisecond):
		}
		resp, err := http.Get("http://" + apiAddr + "/health")
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ready = time.Now()
		}
	}

	c := apiClient{t: t, base: "http://" + apiAddr}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@merchant.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Shop", "slug": "shop", "owner_email": "ops@merchant.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{"xpubs": map[string]any{"evm": accountXPub(t, 60)}})
	require.Equal(t, http.StatusOK, code, body)

	// The calls that reach a payment workflow: two creations, then the
	// customer's network choice and the merchant's cancel at once, all
	// sent in the first second.
	code, body = c.do("POST", "/v1/payments", merchant, map[string]any{"amount": json.Number("10"), "external_ref": "alice"})
	require.Equal(t, http.StatusCreated, code, body)
	picked := body["payment"].(map[string]any)["id"].(string)
	code, body = c.do("POST", "/v1/payments", merchant, map[string]any{
		"amount": json.Number("12"), "external_ref": "bob", "external_order_id": "order-1", "network": "ERC20", "token": "USDT",
	})
	require.Equal(t, http.StatusCreated, code, body)
	cancelled := body["payment"].(map[string]any)["id"].(string)

	type answer struct {
		code       int
		body       string
		sent, took time.Duration
	}
	var wg sync.WaitGroup
	var selected, cancelling answer
	for _, q := range []struct {
		into                *answer
		method, url, header string
		body                string
	}{
		{&selected, "POST", "http://" + payAddr + "/api/pay/" + picked + "/select-network", "", `{"network":"ERC20","token":"USDT"}`},
		{&cancelling, "PATCH", "http://" + apiAddr + "/v1/payments/" + cancelled, merchant["x-api-key"], `{"status":"cancelled"}`},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, q.method, q.url, strings.NewReader(q.body))
			req.Header.Set("Content-Type", "application/json")
			if q.header != "" {
				req.Header.Set("x-api-key", q.header)
			}
			q.into.sent = time.Since(ready)
			resp, err := http.DefaultClient.Do(req)
			q.into.took = time.Since(ready) - q.into.sent
			if err != nil {
				q.into.body = err.Error()
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			q.into.code, q.into.body = resp.StatusCode, string(raw)
		}()
	}
	wg.Wait()
	t.Logf("after /health first answered 200: select-network sent at %v, took %v; cancel sent at %v, took %v",
		selected.sent, selected.took, cancelling.sent, cancelling.took)
	require.Less(t, max(selected.sent, cancelling.sent), time.Second, "the calls were not sent in the first second; the test proves nothing")
	assert.Equal(t, http.StatusOK, selected.code, selected.body)
	assert.Contains(t, selected.body, `"success":true`)
	assert.Equal(t, http.StatusOK, cancelling.code, cancelling.body)
	assert.Contains(t, cancelling.body, `"status":"cancelled"`)
	// Like every later second: an answer in well under the 10 s a failed
	// workflow task costs before Temporal retries it.
	assert.Less(t, selected.took, 5*time.Second, "select-network answered slowly")
	assert.Less(t, cancelling.took, 5*time.Second, "cancel answered slowly")
	if ran != nil {
		require.NoError(t, <-ran)
	}

	// The cancelled payment's workflow ends (it releases its address and
	// queues its webhook); by then the other one has run its tasks too.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	require.NoError(t, m.temporal.GetWorkflow(wctx, workflows.PaymentWorkflowID(cancelled), "").Get(wctx, nil))
	for id, status := range map[string]string{picked: "pending", cancelled: "cancelled"} {
		wid := workflows.PaymentWorkflowID(id)
		it := m.temporal.GetWorkflowHistory(wctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		events := 0
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			events++
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
				a := ev.GetWorkflowTaskFailedEventAttributes()
				t.Errorf("%s: workflow task failed (%s): %s", wid, a.GetCause(), a.GetFailure().GetMessage())
			}
		}
		assert.Positive(t, events, wid)
		// The status reached the search attributes the Web UI filters on.
		d, err := m.temporal.DescribeWorkflowExecution(wctx, wid, "")
		require.NoError(t, err)
		var got string
		field := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.SearchAttrPaymentStatus.GetName()]
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(field, &got), wid)
		assert.Equal(t, status, got, wid)
	}
}
