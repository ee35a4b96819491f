package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/paywatch/paywatch/workflows"
)

// What a hosted Temporal service, or anyone with its database, can read of
// a payment (issue 42): after payments with a customer's e-mail, an order
// id and metadata are created, paid and their webhooks delivered, the
// Temporal database holds none of those, nor the deposit addresses, in
// clear. The search attributes hold keyed hashes that `paywatch admin
// temporal-search` computes, and the Web UI's codec endpoint reads the
// histories back.
func TestTemporalHoldsNoPrivateDataInClear(t *testing.T) {
	dataDir := t.TempDir()
	cfg := devConfig(t, dataDir)
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	m, out := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	c := apiClient{t: t, base: base, patient: true}
	master := map[string]string{"x-master-key": m.Config.MasterKey}

	sink := &webhookSink{}
	receiver := httptest.NewServer(sink)
	t.Cleanup(receiver.Close)
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@merchant.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{
		"name": "Shop", "slug": "shop", "owner_email": "ops@merchant.test", "webhook_url": receiver.URL + "/hooks",
	})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	sink.mu.Lock()
	sink.secret = body["webhook_secret"].(string)
	sink.mu.Unlock()
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{
		"name": "main", "xpubs": map[string]any{"evm": accountXPub(t, 60), "tron": accountXPub(t, 195)},
	})
	require.Equal(t, http.StatusOK, code, body)

	type paid struct{ id, email, order, note, address string }
	var payments []paid
	for i, net := range []string{"BEP20", "TRC20", "ERC20"} {
		p := paid{
			email: "buyer" + string(rune('a'+i)) + ".quietly@example.com",
			order: "order-7f3a" + string(rune('a'+i)) + "-zq", note: "gift wrap for aunt Zelda " + string(rune('a'+i)),
		}
		code, body = c.do("POST", "/v1/payments", merchant, map[string]any{
			"amount": json.Number("12.5"), "network": net, "token": "USDT",
			"external_ref": p.email, "external_order_id": p.order, "metadata": map[string]any{"note": p.note},
		})
		require.Equal(t, http.StatusCreated, code, body)
		pay := body["payment"].(map[string]any)
		p.id, p.address = pay["id"].(string), pay["address"].(string)
		code, _, errOut := devnetCLI(base)("send", "--network", net, "--token", "USDT", "--to", p.address, "--amount", "12.5")
		require.Equal(t, 0, code, errOut)
		payments = append(payments, p)
	}
	for _, p := range payments {
		require.Eventually(t, func() bool { return sink.find(p.id, "payment.completed") != nil },
			2*time.Minute, 200*time.Millisecond, "no payment.completed for %s\n%s", p.id, out.String())
	}

	// The search attributes find a customer's payment by the hash the
	// admin command prints, and never by the e-mail itself.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	query, err := temporalSearchQuery([]string{"--external-ref", payments[0].email, "--external-order-id", payments[0].order}, m.Config.MasterKey, false)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := m.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: m.Config.TemporalNamespace, Query: query})
		return err == nil && len(res.Executions) == 1 && res.Executions[0].Execution.WorkflowId == workflows.PaymentWorkflowID(payments[0].id)
	}, 20*time.Second, 200*time.Millisecond, "query %s", query)
	res, err := m.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: m.Config.TemporalNamespace, Query: `ExternalRef = "` + payments[0].email + `"`})
	require.NoError(t, err)
	assert.Empty(t, res.Executions, "the index names nobody")

	// The codec endpoint decodes a history for the operator.
	hist := m.temporal.GetWorkflowHistory(ctx, workflows.PaymentWorkflowID(payments[0].id), "", false, 0)
	first, err := hist.Next()
	require.NoError(t, err)
	in := first.GetWorkflowExecutionStartedEventAttributes().GetInput()
	require.NotNil(t, in)
	raw, err := json.Marshal(map[string]any{"payloads": in.Payloads})
	require.NoError(t, err)
	req, err := http.NewRequest("POST", base+"/temporal/codec/decode", bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+m.Config.MasterKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	decoded := new(bytes.Buffer)
	_, _ = decoded.ReadFrom(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, decoded.String())
	var opened struct {
		Payloads []struct {
			Data []byte `json:"data"`
		} `json:"payloads"`
	}
	require.NoError(t, json.Unmarshal(decoded.Bytes(), &opened))
	require.NotEmpty(t, opened.Payloads)
	assert.Contains(t, string(opened.Payloads[0].Data), payments[0].email, "the operator reads the input")
	assert.Contains(t, string(opened.Payloads[0].Data), payments[0].address)

	require.NoError(t, m.Close())
	files, err := filepath.Glob(filepath.Join(dataDir, "temporal.db*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var db []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		db = append(db, b...)
	}
	lower := bytes.ToLower(db)
	for _, p := range payments {
		assert.True(t, bytes.Contains(db, []byte(p.id)), "the check can see what is in clear: payment ids are")
		for what, v := range map[string]string{"e-mail": p.email, "order id": p.order, "metadata": p.note, "address": p.address} {
			assert.False(t, bytes.Contains(lower, []byte(strings.ToLower(v))), "temporal.db holds the %s %q in clear", what, v)
		}
		addr := strings.ToLower(strings.TrimPrefix(p.address, "0x"))
		assert.False(t, bytes.Contains(lower, []byte(addr)), "temporal.db holds the address %s without its prefix", p.address)
	}
}
