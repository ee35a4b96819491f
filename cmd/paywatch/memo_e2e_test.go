package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSolanaEveryModeEndToEnd is issue 40's "done when" on `paywatch dev`:
// every address mode takes a SOLANA payment from creation to a signed
// payment.completed once the transfer's slot is finalized. per_payment and
// per_user payments are memo payments on the wallet's registered address,
// each paid with its Solana Pay reference (per_user: the customer's, kept
// for the next payment); dedicated and pool payments use the registered
// addresses as on the other networks (pool + txid confirmed by the
// transaction's signature). A transfer to the memo payments' address
// without a reference pays nothing, and is listed as unmatched funds with
// reason no_memo.
func TestSolanaEveryModeEndToEnd(t *testing.T) {
	everyMemoModeEndToEnd(t, memoNetwork{
		network: "SOLANA", token: "USDC", confirmations: 32,
		wallet: func(*testing.T) string { return sol.NewWallet().PublicKey().String() },
		memoForm: func(t *testing.T, memo string) {
			raw, err := base58.Decode(memo)
			require.NoError(t, err, "the memo is a Solana Pay reference")
			assert.Len(t, raw, 32)
		},
	})
}

// TestTONEveryModeEndToEnd is issue 41's "done when": the same on TON,
// each memo payment paid with its comment (inline or in a reference
// cell, as the devnet alternates), confirmed once a masterchain block
// commits it (1 confirmation); pool + txid confirmed by the hash of the
// transaction that credited the merchant's jetton wallet. A forged
// transfer_notification and a look-alike jetton carrying an open
// payment's comment never count; a transfer without the comment is
// unmatched, no_memo.
func TestTONEveryModeEndToEnd(t *testing.T) {
	everyMemoModeEndToEnd(t, memoNetwork{
		network: "TON", token: "USDT", confirmations: 1, forgeries: []string{"forged_notification", "lookalike_jetton"},
		wallet: func(t *testing.T) string { return newTONWallet(t) },
		memoForm: func(t *testing.T, memo string) {
			assert.Regexp(t, `^[2-9A-HJKMNP-Z]{8}$`, memo, "8 characters a person can type")
		},
	})
}

// memoNetwork is a network of memo payments, as everyMemoModeEndToEnd
// tries it.
type memoNetwork struct {
	network, token string
	confirmations  int
	// forgeries are the devnet's transfer kinds that must never count.
	forgeries []string
	wallet    func(*testing.T) string
	memoForm  func(*testing.T, string)
}

func everyMemoModeEndToEnd(t *testing.T, mn memoNetwork) {
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	m, out := startMain(t, cfg, nil)
	c := apiClient{t: t, base: "http://" + m.APIAddr(), patient: true}
	master := map[string]string{"x-master-key": m.Config.MasterKey}

	type project struct {
		slug, mode, matching string
		key                  map[string]string
		sink                 *webhookSink
		wallet               string
	}
	projects := []*project{
		{slug: "perpay", mode: "per_payment"}, {slug: "peruser", mode: "per_user"}, {slug: "dedicated", mode: "dedicated"},
		{slug: "micro", mode: "pool", matching: "micro_amount"}, {slug: "txid", mode: "pool", matching: "txid"},
	}
	for _, p := range projects {
		p.sink = &webhookSink{}
		receiver := httptest.NewServer(p.sink)
		t.Cleanup(receiver.Close)
		owner := p.slug + "@merchant.test" // a plan holds 3 projects
		code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": owner, "plan": "pro"})
		require.Equal(t, http.StatusCreated, code, body)
		code, body = c.do("POST", "/v1/projects", master, map[string]any{
			"name": "Shop " + p.slug, "slug": p.slug, "owner_email": owner, "webhook_url": receiver.URL + "/hooks",
		})
		require.Equal(t, http.StatusCreated, code, body)
		p.key = map[string]string{"x-api-key": body["api_key"].(string)}
		p.sink.mu.Lock()
		p.sink.secret = body["webhook_secret"].(string)
		p.sink.mu.Unlock()
		patch := map[string]any{"address_mode": p.mode}
		if p.matching != "" {
			patch["pool_matching"] = p.matching
		}
		code, body = c.do("PATCH", "/v1/projects/"+p.slug, master, patch)
		require.Equal(t, http.StatusOK, code, body)
		p.wallet = mn.wallet(t)
		code, body = c.do("PUT", "/v1/projects/"+p.slug+"/wallet", master, map[string]any{"addresses": map[string]any{mn.network: []string{p.wallet}}})
		require.Equal(t, http.StatusOK, code, body)
	}

	sendKind := func(to, amount, memo, kind string) map[string]any {
		t.Helper()
		req := map[string]any{"network": mn.network, "token": mn.token, "to": to, "amount": amount}
		if memo != "" {
			req["memo"] = memo
		}
		if kind != "" {
			req["kind"] = kind
		}
		code, sent := c.do("POST", "/devnet/transfers", nil, req)
		require.Equal(t, http.StatusCreated, code, sent)
		return sent
	}
	send := func(to, amount, memo string) map[string]any { return sendKind(to, amount, memo, "") }
	create := func(p *project, ref string) map[string]any {
		t.Helper()
		code, body := c.do("POST", "/v1/payments", p.key, map[string]any{
			"amount": json.Number("12.5"), "external_ref": ref, "network": mn.network, "token": mn.token,
		})
		require.Equal(t, http.StatusCreated, code, body)
		return body["payment"].(map[string]any)
	}
	paid := func(p *project, id, memo string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, body := c.do("GET", "/v1/payments/"+id, p.key, nil)
			return body["payment"].(map[string]any)["status"] == "paid"
		}, time.Minute, 100*time.Millisecond, "%s: payment never paid\n%s", p.slug, out.String())
		_, body := c.do("GET", "/v1/payments/"+id, p.key, nil)
		tx := body["payment"].(map[string]any)["transactions"].([]any)[0].(map[string]any)
		assert.Equal(t, true, tx["confirmed"], p.slug)
		assert.Equal(t, float64(mn.confirmations), tx["confirmations"], "%s: the transaction final", p.slug)
		require.Eventually(t, func() bool { return p.sink.find(id, "payment.completed") != nil },
			30*time.Second, 100*time.Millisecond, "%s: no signed payment.completed", p.slug)
		ev := p.sink.find(id, "payment.completed")
		if memo == "" {
			assert.Nil(t, ev["memo"], p.slug)
		} else {
			assert.Equal(t, memo, ev["memo"], p.slug)
		}
		assert.Zero(t, p.sink.bad, p.slug)
	}

	for _, p := range projects {
		pay := create(p, "cust-1")
		id, memo := pay["id"].(string), ""
		if p.mode == "per_payment" || p.mode == "per_user" {
			memo, _ = pay["memo"].(string)
			mn.memoForm(t, memo)
			assert.Equal(t, p.wallet, pay["address"], "%s: the wallet's registered address", p.slug)
		} else {
			assert.Nil(t, pay["memo"], p.slug)
		}
		sent := send(pay["address"].(string), pay["amount"].(string), memo)
		if p.matching == "txid" {
			code, body := c.do("POST", "/v1/payments/"+id+"/confirm", p.key, map[string]any{"tx_hash": sent["tx_hash"]})
			require.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, true, body["verified"], body)
		}
		paid(p, id, memo)

		if p.mode == "per_user" {
			// The customer's next payment keeps the memo, like an address.
			again := create(p, "cust-1")
			assert.Equal(t, memo, again["memo"], "per_user: one memo per external_ref, network and token")
			other := create(p, "cust-2")
			assert.NotEqual(t, memo, other["memo"], "another customer, another memo")
		}
	}

	// A memo payment waits while a transfer without its memo comes to
	// the shared address, and that transfer is unmatched: no_memo; so do
	// the forgeries that carry its memo.
	perpay := projects[0]
	open := create(perpay, "cust-9")
	for _, kind := range mn.forgeries {
		sendKind(perpay.wallet, "12.5", open["memo"].(string), kind)
	}
	stray := send(perpay.wallet, "12.5", "")
	var unmatched map[string]any
	require.Eventually(t, func() bool {
		code, body := c.do("GET", "/v1/transfers?unmatched=true", perpay.key, nil)
		require.Equal(t, http.StatusOK, code, body)
		for _, x := range body["transfers"].([]any) {
			if tr := x.(map[string]any); tr["tx_hash"] == stray["tx_hash"] {
				unmatched = tr
			}
		}
		return unmatched != nil
	}, time.Minute, 200*time.Millisecond, "the stray transfer is never listed as unmatched\n%s", out.String())
	assert.Equal(t, "no_memo", unmatched["reason"])
	_, body := c.do("GET", "/v1/payments/"+open["id"].(string), perpay.key, nil)
	assert.Equal(t, "pending", body["payment"].(map[string]any)["status"], "a transfer without the reference pays nothing")
	assert.Empty(t, body["payment"].(map[string]any)["transactions"])
}
