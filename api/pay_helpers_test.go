package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/workflows"
)

// payHost is the host of the harness's pay URL.
const payHost = "pay.paywatch.test"

// payCall calls the pay listener. A url.Values body is sent as a form, a
// string as is, anything else as JSON.
func (e *env) payCall(r request) response {
	e.t.Helper()
	var body io.Reader
	ctype := "application/json"
	switch b := r.body.(type) {
	case nil:
	case url.Values:
		body, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(e.t, err)
		body = strings.NewReader(string(raw))
	}
	req := httptest.NewRequest(r.method, r.path, body)
	req.Host = payHost
	if r.host != "" {
		req.Host = r.host
	}
	req.RemoteAddr = testIP + ":4321"
	if r.ip != "" {
		req.RemoteAddr = r.ip + ":4321"
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := serve(e.t, e.server.Pay(), payListener, req)
	out := response{Code: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		dec := json.NewDecoder(strings.NewReader(out.Raw))
		dec.UseNumber()
		require.NoError(e.t, dec.Decode(&out.Body), "body %s", out.Raw)
	}
	return out
}

// payGet is a GET on the pay listener.
func (e *env) payGet(path string) response {
	e.t.Helper()
	return e.payCall(request{method: "GET", path: path})
}

// selectNetwork calls the hosted select-network endpoint from ip.
func (e *env) selectNetwork(id, ip string, body any) response {
	e.t.Helper()
	return e.payCall(request{method: "POST", path: "/api/pay/" + id + "/select-network", body: body, ip: ip})
}

// ipSeq hands out distinct client IPs, so tests stay clear of the per-IP
// select-network limit unless they test it.
var ipSeq atomic.Int32

func nextIP() string {
	n := ipSeq.Add(1)
	return fmt.Sprintf("192.0.2.%d", n%250+1)
}

// createPayment creates a payment through the API and returns its id.
func (e *env) createPayment(key string, body map[string]any) string {
	e.t.Helper()
	r := e.call(key, "POST", "/v1/payments", body)
	require.Equal(e.t, http.StatusCreated, r.Code, r.Raw)
	return r.str("payment.id")
}

// startOfMinute moves the clock to the start of the next minute, so that a
// rate-limit window cannot roll over during a test.
func (e *env) startOfMinute() {
	now := e.clock.Now()
	e.clock.Add(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
}

// sendTransfer delivers a token transfer to the payment's workflow as a
// scanner would (a transfer-seen signal), mined at block on the fake chain
// of network; the network's real scanner (scanChain) then signals the
// payment once the fake chain's head gives the transfer its confirmations
// (head - block + 1).
func (e *env) sendTransfer(id string, n paywatch.Network, t paywatch.Token, txHash, amount string, block uint64) {
	e.t.Helper()
	e.scanChain(n)
	err := temporal.client.SignalWorkflow(context.Background(), workflows.PaymentWorkflowID(id), "", workflows.SignalTransferSeen,
		paywatch.Transaction{
			TxHash: txHash, BlockNumber: block, BlockHash: blockHash(block),
			From:   "0x000000000000000000000000000000000000dEaD",
			Amount: paywatch.MustParseAmount(amount, paywatch.Decimals(n, t)),
		})
	require.NoError(e.t, err)
}

// scanChain runs the real scanner of network n over its fake chain until
// the test ends, once per env: the fake chain has no transfers to find (the
// tests signal them), so it keeps the cursor at the head and pushes
// confirmations.
func (e *env) scanChain(n paywatch.Network) {
	if _, running := e.scanning.LoadOrStore(n, true); running {
		return
	}
	s := activities.NewScanner(activities.ScannerDeps{
		Store: e.store, Chains: e.chain, Signaler: temporal.client,
		PollInterval: map[paywatch.Network]time.Duration{n: 50 * time.Millisecond},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Run(ctx, workflows.ScanInput{Network: n}, nil)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// setHead moves the fake chain's head.
func (c *fakeChain) setHead(h uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.head = h
}

// waitPayStatus polls the hosted status JSON until status shows.
func (e *env) waitPayStatus(id string, status paywatch.Status, within time.Duration) response {
	e.t.Helper()
	var last response
	require.Eventually(e.t, func() bool {
		last = e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
		return last.str("status") == string(status)
	}, within, 100*time.Millisecond, "status %s", status)
	return last
}

// workflowClosedNow reports whether the payment's workflow has ended.
func workflowClosedNow(t *testing.T, id string) bool {
	t.Helper()
	d, err := temporal.client.DescribeWorkflowExecution(context.Background(), workflows.PaymentWorkflowID(id), "")
	return err == nil && d.WorkflowExecutionInfo.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// txHash returns a distinct 0x-prefixed EVM transaction hash.
func txHash(n int) string { return fmt.Sprintf("0x%064x", n) }
