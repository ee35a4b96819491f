package main

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// TestUnmatchedFundsMoreCasesOnDevnet carries TestUnmatchedFundsOnDevnet on
// through the rest of issue 27's cases that a devnet reaches in real time:
// a transfer after an overpaid payment, the other token to an open
// payment's address, a transfer to a static address the merchant removed,
// and one to a per_user address between its user's payments. It pages
// through the list, and ends with the event log: every unmatched transfer
// told once, and nothing else told, read after all of them were (the
// webhook test above checks at one moment only). The late window's end
// (24 hours) and a reorg that brings a transfer back after its payment
// ended are tested in the store (TestTransfersClassified and its reorg
// case), where the clock and the chain are the test's to move.
func TestUnmatchedFundsMoreCasesOnDevnet(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	cfg.IdlePollIntervals = map[paywatch.Network]time.Duration{paywatch.BEP20: time.Second}
	m, out := startMain(t, cfg, nil)
	c := apiClient{t: t, base: "http://" + m.APIAddr(), patient: true}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	const n = "BEP20"

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@cases.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Shop", "slug": "cases", "owner_email": "ops@cases.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	const kept, removed = "0x7777777777777777777777777777777777777772", "0x7777777777777777777777777777777777777773"
	xpub := accountXPub(t, 60)
	code, body = c.do("PUT", "/v1/projects/cases/wallet", master, map[string]any{
		"xpubs": map[string]any{"evm": xpub}, "addresses": map[string]any{n: []string{kept, removed}},
	})
	require.Equal(t, http.StatusOK, code, body)

	u := merchantTransfers{t: t, c: c, merchant: merchant, network: n, logs: out}
	send, create, transfer := u.send, u.create, u.transfer
	status := func(id, want string) {
		t.Helper()
		require.Eventually(t, func() bool {
			code, body := c.do("GET", "/v1/payments/"+id, merchant, nil)
			return code == http.StatusOK && body["payment"].(map[string]any)["status"] == want
		}, 2*time.Minute, 2*time.Second, "payment %s never %s\n%s", id, want, out.String())
	}

	// Overpaid, then paid again: the first transfer is the payment's, the
	// second nobody's.
	over, overAddr := create("dave")
	overpaying := send(overAddr, "USDT", "15")
	status(over, "overpaid")
	tr := transfer(overpaying, "matched")
	assert.Equal(t, over, tr["payment_id"])
	afterOver := send(overAddr, "USDT", "5")
	tr = transfer(afterOver, "unmatched")
	assert.Equal(t, "after_paid", tr["reason"])
	assert.Equal(t, over, tr["related_payment_id"])

	// USDC to a payment that waits for USDT: the payment never counts it,
	// and it is unmatched while the payment is still open.
	open, openAddr := create("erin")
	otherToken := send(openAddr, "USDC", "10")
	tr = transfer(otherToken, "unmatched")
	assert.Equal(t, "other_token", tr["reason"])
	assert.Equal(t, open, tr["related_payment_id"])
	assert.Equal(t, "USDC", tr["token"])

	// A static address the merchant removed is still the project's.
	code, body = c.do("PUT", "/v1/projects/cases/wallet", master, map[string]any{
		"xpubs": map[string]any{"evm": xpub}, "addresses": map[string]any{n: []string{kept}},
	})
	require.Equal(t, http.StatusOK, code, body)
	toRemoved := send(removed, "USDT", "4")
	tr = transfer(toRemoved, "unmatched")
	assert.Equal(t, "no_payment", tr["reason"])
	assert.Nil(t, tr["related_payment_id"])

	// per_user: the user's address between payments. The mode changes only
	// with nothing pending, so the open payment goes first; the USDC sent
	// to it stays unmatched for the same reason.
	code, body = c.do("PATCH", "/v1/payments/"+open, merchant, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, code, body)
	tr = transfer(otherToken, "unmatched")
	assert.Equal(t, "other_token", tr["reason"])
	code, body = c.do("PATCH", "/v1/projects/cases", master, map[string]any{"address_mode": "per_user"})
	require.Equal(t, http.StatusOK, code, body)
	user, userAddr := create("frank")
	paying := send(userAddr, "USDT", "10")
	status(user, "paid")
	transfer(paying, "matched")
	between := send(userAddr, "USDT", "6")
	tr = transfer(between, "unmatched")
	assert.Equal(t, "after_paid", tr["reason"], "the user's last payment was paid")
	assert.Equal(t, user, tr["related_payment_id"])

	// The list pages: two at a time, newest first, four unmatched in all.
	want := []string{between, toRemoved, otherToken, afterOver}
	var listed []string
	for offset := 0; offset < 6; offset += 2 {
		code, body := c.do("GET", "/v1/transfers?unmatched=true&limit=2&offset="+strconv.Itoa(offset), merchant, nil)
		require.Equal(t, http.StatusOK, code, body)
		assert.Equal(t, float64(4), body["pagination"].(map[string]any)["total"])
		for _, x := range body["transfers"].([]any) {
			listed = append(listed, x.(map[string]any)["tx_hash"].(string))
		}
	}
	assert.Equal(t, want, listed, "newest first, each once, across pages")
	code, body = c.do("GET", "/v1/transfers?token=USDC", merchant, nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, body["transfers"], 1, "the token filter")
	assert.Equal(t, otherToken, body["transfers"].([]any)[0].(map[string]any)["tx_hash"])

	// The event log: each unmatched transfer told exactly once; nothing a
	// payment counted told at all. Read once every one of them was told.
	told := map[string]int{}
	require.Eventually(t, func() bool {
		code, body := c.do("GET", "/v1/events?limit=100", merchant, nil)
		require.Equal(t, http.StatusOK, code, body)
		told = map[string]int{}
		for _, ev := range body["events"].([]any) {
			e := ev.(map[string]any)
			if e["event"] == "transfer.unmatched" {
				told[e["payload"].(map[string]any)["tx_hash"].(string)]++
			}
		}
		return len(told) >= len(want)
	}, time.Minute, 2*time.Second, "not every unmatched transfer was told\n%s", out.String())
	for _, h := range want {
		assert.Equal(t, 1, told[h], "told once: %s", h)
	}
	assert.Len(t, told, len(want), "nothing else told: %v", told)
}
