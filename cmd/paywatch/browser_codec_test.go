package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

// The embedded Temporal Web UI of `paywatch dev` in a real Chromium
// (issue 42): a payment's history shows sealed payloads until the
// operator signs in at the codec page with the master key; then the same
// page shows the workflow's input decoded, the customer's e-mail in it.
func TestBrowserTemporalUIDecodesAfterCodecSignIn(t *testing.T) {
	apiAddr, uiAddr := freeAddr(t), freeAddr(t)
	env := map[string]string{
		"DATABASE_URL":               storetest.NewDatabaseURL(t),
		"PAYWATCH_DATA_DIR":          t.TempDir(),
		"PAYWATCH_API_ADDR":          apiAddr,
		"PAYWATCH_PAY_ADDR":          "127.0.0.1:0",
		"PAYWATCH_TEMPORAL_DEV_ADDR": freeAddr(t),
		"PAYWATCH_TEMPORAL_UI_ADDR":  uiAddr,
		"PAYWATCH_METRICS_ADDR":      "off",
		"PAYWATCH_LOG_LEVEL":         "warn",
	}
	cfg, err := LoadConfig(ModeDev, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	m, _ := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	c := apiClient{t: t, base: base, patient: true}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@merchant.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Shop", "slug": "shop", "owner_email": "ops@merchant.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{"name": "main", "xpubs": map[string]any{"evm": accountXPub(t, 60)}})
	require.Equal(t, http.StatusOK, code, body)
	const email = "decoded.buyer@example.com"
	code, body = c.do("POST", "/v1/payments", merchant, map[string]any{
		"amount": json.Number("10"), "network": "BEP20", "token": "USDT", "external_ref": email,
	})
	require.Equal(t, http.StatusCreated, code, body)
	id := body["payment"].(map[string]any)["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc, err := m.temporal.DescribeWorkflowExecution(ctx, workflows.PaymentWorkflowID(id), "")
	require.NoError(t, err)
	history := "http://" + uiAddr + "/namespaces/default/workflows/" + url.PathEscape(workflows.PaymentWorkflowID(id)) + "/" +
		desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() + "/history"

	page := newBrowserPage(t, newBrowser(t), base, filepath.Join(t.TempDir(), "shots"))
	shows := `document.body && document.body.innerText.includes(` + jsString(email) + `)`
	page.do(chromedp.Navigate(history))
	page.waitFor("the history page", `document.body && document.body.innerText.includes("Input")`, 60*time.Second)
	require.False(t, evalJS[bool](page, "!!("+shows+")"), "before signing in, the UI shows the input sealed")

	page.open("/temporal/codec")
	page.do(chromedp.SetValue(chromedp.CSS(`#master_key`), m.Config.MasterKey))
	page.do(chromedp.Submit(chromedp.CSS(`form`)))
	page.waitFor("the codec sign-in", `document.body && document.body.innerText.includes("Signed in")`, 15*time.Second)

	page.do(chromedp.Navigate(history))
	page.waitFor("the decoded input", shows, 60*time.Second)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
