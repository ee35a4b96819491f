package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// TestPerUserAddressRotatesOnDevnet is issue 10's per_user case as a
// merchant meets it, through the API and the devnet, on `paywatch dev`:
// with rotation_threshold 15 a customer's address that received 20 (two
// paid payments of 10) gives way to a fresh one for the next payment, and
// replacing the wallet's xPub moves the customer to an address of the new
// xPub.
func TestPerUserAddressRotatesOnDevnet(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	m, out := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	c := apiClient{t: t, base: base}
	master := map[string]string{"x-master-key": m.Config.MasterKey}

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@merchant.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Shop", "slug": "shop", "owner_email": "ops@merchant.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PATCH", "/v1/projects/shop", master, map[string]any{"address_mode": "per_user", "rotation_threshold": json.Number("15")})
	require.Equal(t, http.StatusOK, code, body)
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{"xpubs": map[string]any{"evm": accountXPub(t, 60)}})
	require.Equal(t, http.StatusOK, code, body)

	send := devnetCLI(base)
	order := 0
	// pay creates a payment of 10 USDT on BEP20 for alice, pays it in full
	// and waits until the API shows it paid; it returns its address.
	pay := func() string {
		t.Helper()
		order++
		code, body := c.do("POST", "/v1/payments", merchant, map[string]any{
			"amount": json.Number("10"), "external_ref": "alice", "network": "BEP20", "token": "USDT",
			"external_order_id": "order-" + string(rune('0'+order)),
		})
		require.Equal(t, http.StatusCreated, code, body)
		p := body["payment"].(map[string]any)
		addr, id := p["address"].(string), p["id"].(string)
		code, _, errOut := send("send", "--network", "BEP20", "--token", "USDT", "--to", addr, "--amount", "10")
		require.Equal(t, 0, code, errOut)
		// Polled gently: the merchant's burst limit is 60 calls a minute.
		require.Eventually(t, func() bool {
			code, body := c.do("GET", "/v1/payments/"+id, merchant, nil)
			require.Equal(t, http.StatusOK, code, body)
			return body["payment"].(map[string]any)["status"] == "paid"
		}, time.Minute, time.Second, "payment %s never paid\n%s", id, out.String())
		return addr
	}
	first := pay()
	assert.Equal(t, first, pay(), "10 received is below the threshold of 15: same address")
	third := pay()
	assert.NotEqual(t, first, third, "20 received exceeds 15: a fresh address")
	assert.Equal(t, third, pay(), "the fresh address has received 10 only")

	// A new xPub: the customer's next address comes from it.
	newXPub := accountXPubAt(t, 60, 1)
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{"xpubs": map[string]any{"evm": newXPub}})
	require.Equal(t, http.StatusOK, code, body)
	fifth := pay()
	x, err := paywatch.ParseXPub(newXPub)
	require.NoError(t, err)
	var fromNew []string
	for i := uint32(1); i <= 20; i++ {
		a, err := x.Address(paywatch.FamilyEVM, i)
		require.NoError(t, err)
		fromNew = append(fromNew, a)
	}
	assert.True(t, slices.Contains(fromNew, fifth), "address %s is derived from the new xPub", fifth)
	assert.False(t, slices.Contains(fromNew, third))
}

// TestTxidTransferMinedAgainAfterReorgCounts is issue 10's pool + txid case
// on `paywatch dev`: the merchant confirms a transaction hash, a reorg drops
// the transfer before it has its confirmations, and the transaction is mined
// again with the same hash (it was still in the mempool). The payment still
// turns paid with that transfer.
func TestTxidTransferMinedAgainAfterReorgCounts(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	m, out := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	c := apiClient{t: t, base: base}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	n := "POLYGON" // 64 confirmations: 6.4 s at 100 ms blocks, time for the reorg

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@merchant.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Shop", "slug": "shop", "owner_email": "ops@merchant.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PATCH", "/v1/projects/shop", master, map[string]any{"address_mode": "pool", "pool_matching": "txid"})
	require.Equal(t, http.StatusOK, code, body)
	addr := "0x5555555555555555555555555555555555555555"
	code, body = c.do("PUT", "/v1/projects/shop/wallet", master, map[string]any{"addresses": map[string]any{n: []string{addr}}})
	require.Equal(t, http.StatusOK, code, body)

	code, body = c.do("POST", "/v1/payments", merchant, map[string]any{
		"amount": json.Number("10"), "external_ref": "bob", "network": n, "token": "USDT",
	})
	require.Equal(t, http.StatusCreated, code, body)
	id := body["payment"].(map[string]any)["id"].(string)

	code, sent := c.do("POST", "/devnet/transfers", nil, map[string]any{"network": n, "token": "USDT", "to": addr, "amount": "10"})
	require.Equal(t, http.StatusCreated, code, sent)
	txHash := sent["tx_hash"].(string)
	code, body = c.do("POST", "/v1/payments/"+id+"/confirm", merchant, map[string]any{"tx_hash": txHash})
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, true, body["verified"], body)

	_, st := c.do("GET", "/devnet", nil, nil)
	var head float64
	for _, nw := range st["networks"].([]any) {
		if nw.(map[string]any)["network"] == n {
			head = nw.(map[string]any)["head"].(float64)
		}
	}
	// Blocks keep coming every 100 ms: reach up to 10 blocks further down
	// than the head just read, so the transfer's block is in the reorg even
	// if a few were mined since (the devnet's setup blocks, 1 and 2, stay).
	depth := min(int(head-sent["block_number"].(float64))+1+10, int(head)-2)
	code, body = c.do("POST", "/devnet/reorg", nil, map[string]any{"network": n, "depth": depth, "reinclude": true})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body["dropped"], txHash)

	require.Eventually(t, func() bool {
		code, body := c.do("GET", "/v1/payments/"+id, merchant, nil)
		require.Equal(t, http.StatusOK, code, body)
		return body["payment"].(map[string]any)["status"] == "paid"
	}, time.Minute, time.Second, "payment never paid\n%s", out.String())
	_, body = c.do("GET", "/v1/payments/"+id, merchant, nil)
	p := body["payment"].(map[string]any)
	assert.Equal(t, "10.00", p["paid_amount"])
	txs := p["transactions"].([]any)
	require.Len(t, txs, 1)
	assert.Equal(t, txHash, txs[0].(map[string]any)["tx_hash"])
	code, body = c.do("GET", "/v1/transfers?unmatched=true", merchant, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Empty(t, body["transfers"], "the transfer the payment counted is not unmatched")
}

// TestReorgReincludeLoopKeepsEveryPayment is issue 24's reorg ordering on
// `paywatch dev`, repeated: pay, see it confirming, reorg the transfer's
// block away with its transaction mined again (same hash, another block),
// and the payment still ends paid with that one transfer. The scanner sends
// the removal of the old block and then the transfer in its new block;
// whichever order the payment reads them in, the removal names the old
// block and spares the new copy.
func TestReorgReincludeLoopKeepsEveryPayment(t *testing.T) {
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 100 * time.Millisecond
	m, out := startMain(t, cfg, nil)
	c := apiClient{t: t, base: "http://" + m.APIAddr()}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	n := "POLYGON" // 64 confirmations: 6.4 s at 100 ms blocks, time for the reorg

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "ops@loop.test", "plan": "pro"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Loop", "slug": "loop", "owner_email": "ops@loop.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PATCH", "/v1/projects/loop", master, map[string]any{"address_mode": "dedicated"})
	require.Equal(t, http.StatusOK, code, body)
	addrs := []string{
		"0x6666666666666666666666666666666666666661", "0x6666666666666666666666666666666666666662",
		"0x6666666666666666666666666666666666666663", "0x6666666666666666666666666666666666666664",
	}
	code, body = c.do("PUT", "/v1/projects/loop/wallet", master, map[string]any{"addresses": map[string]any{n: addrs}})
	require.Equal(t, http.StatusOK, code, body)

	counted := map[string]string{} // tx hash: payment id
	for round := range len(addrs) {
		code, body = c.do("POST", "/v1/payments", merchant, map[string]any{
			"amount": json.Number("10"), "external_ref": "buyer-" + string(rune('a'+round)), "network": n, "token": "USDT",
		})
		require.Equal(t, http.StatusCreated, code, body)
		p := body["payment"].(map[string]any)
		id, addr := p["id"].(string), p["address"].(string)
		code, sent := c.do("POST", "/devnet/transfers", nil, map[string]any{"network": n, "token": "USDT", "to": addr, "amount": "10"})
		require.Equal(t, http.StatusCreated, code, sent)
		txHash := sent["tx_hash"].(string)
		var last map[string]any // the payment as last read
		status := func() any {
			code, body := c.do("GET", "/v1/payments/"+id, merchant, nil)
			if code != http.StatusOK { // the key's burst limit, say
				return nil
			}
			last = body["payment"].(map[string]any)
			return last["status"]
		}
		require.Eventually(t, func() bool { return status() == "confirming" },
			30*time.Second, 500*time.Millisecond, "round %d: never confirming", round)

		_, st := c.do("GET", "/devnet", nil, nil)
		var head float64
		for _, nw := range st["networks"].([]any) {
			if nw.(map[string]any)["network"] == n {
				head = nw.(map[string]any)["head"].(float64)
			}
		}
		depth := min(int(head-sent["block_number"].(float64))+1+10, int(head)-2)
		code, body = c.do("POST", "/devnet/reorg", nil, map[string]any{"network": n, "depth": depth, "reinclude": true})
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body["dropped"], txHash, "round %d", round)

		require.Eventually(t, func() bool { return status() == "paid" },
			time.Minute, 500*time.Millisecond, "round %d: payment never paid\n%s", round, out.String())
		assert.Equal(t, "10.00", last["paid_amount"], "round %d", round)
		txs := last["transactions"].([]any)
		require.Len(t, txs, 1, "round %d", round)
		assert.Equal(t, txHash, txs[0].(map[string]any)["tx_hash"], "round %d", round)
		counted[txHash] = id
	}
	// A transfer a payment counted is matched to it, never unmatched,
	// whatever reorgs moved it (one list read: the key's burst limit).
	require.Eventually(t, func() bool {
		code, body = c.do("GET", "/v1/transfers?network="+n, merchant, nil)
		return code == http.StatusOK
	}, 30*time.Second, 2*time.Second)
	for _, x := range body["transfers"].([]any) {
		tr := x.(map[string]any)
		if id, ok := counted[tr["tx_hash"].(string)]; ok {
			assert.Equal(t, "matched", tr["state"], tr)
			assert.Equal(t, id, tr["payment_id"], tr)
			delete(counted, tr["tx_hash"].(string))
		} else {
			assert.NotEqual(t, "unmatched", tr["state"], tr)
		}
	}
	assert.Empty(t, counted, "every counted transfer is listed")
}
