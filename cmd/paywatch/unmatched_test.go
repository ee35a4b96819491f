package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/telegram/telegramtest"
)

// TestUnmatchedFundsOnDevnet is issue 27 as a merchant meets it, on
// `paywatch dev`: money that reaches the project's addresses and that no
// payment counts (a second payment after paid, a payment after
// cancellation, a transfer to a static address with nothing open, one to
// an address of a replaced xPub) is listed by GET /v1/transfers with why;
// what a payment counted is matched; dust is below the minimum and not
// unmatched; and an unmatched transfer can be marked handled, with a note.
// The late window's end is a 24-hour wait, tested in the store
// (TestTransfersClassified).
func TestUnmatchedFundsOnDevnet(t *testing.T) {
	const token = "123456:test-token"
	bot := telegramtest.New(t, token)
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	cfg.TelegramBotToken, cfg.TelegramAPIURL = token, bot.URL()
	// Once nothing waits on BEP20 its scanner reads at the idle pace
	// (60 s by default), and so finds unmatched funds that much later.
	cfg.IdlePollIntervals = map[paywatch.Network]time.Duration{paywatch.BEP20: time.Second}
	m, out := startMain(t, cfg, nil)
	sink := &webhookSink{}
	receiver := httptest.NewServer(sink)
	t.Cleanup(receiver.Close)
	// Polling six transfers takes more than the burst limit's 60 calls a
	// minute on a slow machine.
	c := apiClient{t: t, base: "http://" + m.APIAddr(), patient: true}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	const n = "BEP20" // 15 confirmations: 1.5 s at 100 ms blocks

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@unmatched.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{
		"name": "Shop", "slug": "shop", "owner_email": "ops@unmatched.test", "webhook_url": receiver.URL + "/hooks",
	})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	sink.mu.Lock()
	sink.secret = body["webhook_secret"].(string)
	sink.mu.Unlock()
	code, body = c.do("PATCH", "/v1/projects/shop", master, map[string]any{"unmatched_webhooks": true, "telegram_chat_id": "4242"})
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, true, body["project"].(map[string]any)["unmatched_webhooks"])
	static := "0x7777777777777777777777777777777777777771"
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{
		"xpubs": map[string]any{"evm": accountXPub(t, 60)}, "addresses": map[string]any{n: []string{static}},
	})
	require.Equal(t, http.StatusOK, code, body)

	u := merchantTransfers{t: t, c: c, merchant: merchant, network: n, logs: out}
	send := func(to, amount string) string { t.Helper(); return u.send(to, "USDT", amount) }
	create, transfer := u.create, u.transfer

	// The customer pays twice in a row: the first transfer pays the
	// payment, which ends listing the second unconfirmed, never counted.
	// The second follows about ten blocks later, so that its confirmation
	// never comes in the same pass as the first's: both confirmed in one
	// signal would overpay the payment, and neither would be unmatched
	// (a scanner on a loaded machine can read two adjacent blocks in one
	// poll, but not ten).
	paid, paidAddr := create("alice")
	first := send(paidAddr, "10")
	time.Sleep(time.Second)
	again := send(paidAddr, "10")
	tr := transfer(first, "matched")
	assert.Equal(t, paid, tr["payment_id"])
	dust := send(paidAddr, "0.05")
	tr = transfer(again, "unmatched")
	assert.Equal(t, "after_paid", tr["reason"])
	assert.Equal(t, paid, tr["related_payment_id"])
	assert.Nil(t, tr["payment_id"])
	assert.Equal(t, "10.00", tr["amount"])
	assert.Equal(t, strings.ToLower(paidAddr), strings.ToLower(tr["to"].(string)))
	assert.Nil(t, tr["handled"])
	tr = transfer(dust, "below_minimum")

	// The merchant hears of it: a signed transfer.unmatched webhook, a
	// chat message, and the event in the event log.
	var hook map[string]any
	require.Eventually(t, func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for _, ev := range sink.events {
			if ev["event"] == "transfer.unmatched" && ev["tx_hash"] == again {
				hook = ev
			}
		}
		return hook != nil
	}, time.Minute, 200*time.Millisecond, "no transfer.unmatched webhook\n%s", out.String())
	assert.Equal(t, "after_paid", hook["reason"])
	assert.Equal(t, "10.00", hook["amount"])
	assert.Equal(t, paid, hook["related_payment_id"])
	var text string
	require.Eventually(t, func() bool {
		for _, m := range bot.Sent() {
			if strings.Contains(m.Text, "Unmatched funds") && strings.Contains(m.Text, again[:6]) {
				text = m.Text
			}
		}
		return text != ""
	}, time.Minute, 200*time.Millisecond, "no chat message")
	t.Logf("the chat message:\n%s", text)
	assert.Contains(t, text, "10.00 USDT on BEP20")
	assert.Contains(t, text, "after the payment was paid")
	code, body = c.do("GET", "/v1/events", merchant, nil)
	require.Equal(t, http.StatusOK, code, body)
	var logged map[string]any
	for _, ev := range body["events"].([]any) {
		if e := ev.(map[string]any); e["event"] == "transfer.unmatched" && e["payload"].(map[string]any)["tx_hash"] == again {
			logged = e
		}
	}
	require.NotNil(t, logged, "the event log lists it")
	assert.Nil(t, logged["payment_id"])
	assert.Equal(t, hook["event_id"], logged["event_id"])
	sink.mu.Lock()
	for _, ev := range sink.events {
		assert.NotEqual(t, dust, ev["tx_hash"], "dust is never told")
		if ev["event"] == "transfer.unmatched" {
			assert.NotEqual(t, first, ev["tx_hash"], "what a payment holds is never told")
		}
	}
	assert.Zero(t, sink.bad)
	sink.mu.Unlock()

	cancelled, cancelledAddr := create("bob")
	code, body = c.do("PATCH", "/v1/payments/"+cancelled, merchant, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, code, body)
	afterCancel := send(cancelledAddr, "10")
	tr = transfer(afterCancel, "unmatched")
	assert.Equal(t, "after_cancelled", tr["reason"])

	toStatic := send(static, "3")
	tr = transfer(toStatic, "unmatched")
	assert.Equal(t, "no_payment", tr["reason"])

	// A new xPub: the old addresses are still the project's.
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{"xpubs": map[string]any{"evm": accountXPubAt(t, 60, 1)}})
	require.Equal(t, http.StatusOK, code, body)
	oldXPub := send(paidAddr, "7")
	tr = transfer(oldXPub, "unmatched")
	assert.Equal(t, "after_paid", tr["reason"])

	// The list, with its filter.
	code, body = c.do("GET", "/v1/transfers?unmatched=true&network="+n, merchant, nil)
	require.Equal(t, http.StatusOK, code, body)
	var listed []string
	for _, x := range body["transfers"].([]any) {
		listed = append(listed, x.(map[string]any)["tx_hash"].(string))
	}
	assert.ElementsMatch(t, []string{again, afterCancel, toStatic, oldXPub}, listed)
	assert.Equal(t, float64(4), body["pagination"].(map[string]any)["total"])
	code, body = c.do("GET", "/v1/transfers?unmatched=maybe", merchant, nil)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "Invalid transfer filter", body["error"])

	// Settling one.
	code, body = c.do("POST", "/v1/transfers/"+n+"/"+again+"/handled", merchant, map[string]any{"note": "Refunded to the sender"})
	require.Equal(t, http.StatusOK, code, body)
	h := body["transfer"].(map[string]any)["handled"].(map[string]any)
	assert.Equal(t, "Refunded to the sender", h["note"])
	assert.Equal(t, "api", h["by"])
	code, body = c.do("GET", "/v1/transfers?unmatched=true&handled=false", merchant, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, float64(3), body["pagination"].(map[string]any)["total"])
	code, body = c.do("POST", "/v1/transfers/"+n+"/"+first+"/handled", merchant, map[string]any{"note": "x"})
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, "Only unmatched transfers can be marked handled", body["error"])
	code, body = c.do("POST", "/v1/transfers/"+n+"/"+again+"/handled", merchant, map[string]any{"note": strings.Repeat("é", 501)})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "Note must be at most 500 characters", body["error"])
	code, body = c.do("GET", "/v1/transfers/"+n+"/0x"+strings.Repeat("ab", 32), merchant, nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "Transfer not found", body["error"])
}

// merchantTransfers is a merchant's backend on one network of `paywatch
// dev`, as the unmatched-funds tests use it: it sends devnet transfers,
// creates payments of 10 USDT, and waits for a transfer's verdict.
type merchantTransfers struct {
	t        *testing.T
	c        apiClient
	merchant map[string]string
	network  string
	logs     *syncBuffer
}

// send makes a devnet transfer and returns its hash.
func (u merchantTransfers) send(to, token, amount string) string {
	u.t.Helper()
	code, sent := u.c.do("POST", "/devnet/transfers", nil, map[string]any{"network": u.network, "token": token, "to": to, "amount": amount})
	require.Equal(u.t, http.StatusCreated, code, sent)
	return sent["tx_hash"].(string)
}

// create makes a payment of 10 USDT for ref and returns its id and address.
func (u merchantTransfers) create(ref string) (id, addr string) {
	u.t.Helper()
	code, body := u.c.do("POST", "/v1/payments", u.merchant, map[string]any{
		"amount": json.Number("10"), "external_ref": ref, "network": u.network, "token": "USDT",
	})
	require.Equal(u.t, http.StatusCreated, code, body)
	p := body["payment"].(map[string]any)
	return p["id"].(string), p["address"].(string)
}

// transfer waits until the transfer of hash is in state and returns it.
func (u merchantTransfers) transfer(hash, state string) map[string]any {
	u.t.Helper()
	var last map[string]any
	require.Eventually(u.t, func() bool {
		code, body := u.c.do("GET", "/v1/transfers/"+u.network+"/"+hash, u.merchant, nil)
		if code != http.StatusOK {
			return false
		}
		last = body["transfer"].(map[string]any)
		return last["state"] == state
	}, 2*time.Minute, 2*time.Second, "transfer %s never %s (last %v)\n%s", hash, state, last, u.logs.String())
	return last
}
