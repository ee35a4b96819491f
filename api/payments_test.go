package api_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", map[string]any{"minAmount": 5}, hdWallet())

	long := strings.Repeat("x", 256)
	bigMeta := map[string]any{"blob": strings.Repeat("m", 4100)}
	for name, body := range map[string]any{
		"bad JSON":               `{"amount": 10,`,
		"not an object":          `[1, 2]`,
		"trailing data":          `{"amount": 10, "external_ref": "u"} {}`,
		"amount missing":         map[string]any{"external_ref": "u"},
		"amount as string":       map[string]any{"amount": "10", "external_ref": "u"},
		"amount zero":            map[string]any{"amount": 0, "external_ref": "u"},
		"amount negative":        map[string]any{"amount": -10, "external_ref": "u"},
		"amount too precise":     map[string]any{"amount": 10.1234567, "external_ref": "u", "network": "ERC20"},
		"external_ref missing":   map[string]any{"amount": 10},
		"external_ref empty":     map[string]any{"amount": 10, "external_ref": ""},
		"external_ref too long":  map[string]any{"amount": 10, "external_ref": long},
		"external_ref a number":  map[string]any{"amount": 10, "external_ref": 42},
		"network unknown":        map[string]any{"amount": 10, "external_ref": "u", "network": "BITCOIN"},
		"network lower case":     map[string]any{"amount": 10, "external_ref": "u", "network": "trc20"},
		"token unknown":          map[string]any{"amount": 10, "external_ref": "u", "token": "BUSD"},
		"order id too long":      map[string]any{"amount": 10, "external_ref": "u", "external_order_id": long},
		"expires_in too short":   map[string]any{"amount": 10, "external_ref": "u", "expires_in": 299},
		"expires_in too long":    map[string]any{"amount": 10, "external_ref": "u", "expires_in": 86401},
		"expires_in fractional":  map[string]any{"amount": 10, "external_ref": "u", "expires_in": 300.5},
		"metadata not an object": map[string]any{"amount": 10, "external_ref": "u", "metadata": []int{1}},
		"metadata over 4 KB":     map[string]any{"amount": 10, "external_ref": "u", "metadata": bigMeta},
		"address outside dedicated mode": map[string]any{
			"amount": 10, "external_ref": "u", "network": "TRC20", "address": tronAddrs[0],
		},
	} {
		r := e.call(key, "POST", "/v1/payments", body)
		requireError(t, r, http.StatusBadRequest, "Invalid request body")
		assert.Len(t, r.Body, 1, "%s: no field list", name)
	}

	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20", "token": "USDC"}),
		http.StatusBadRequest, "USDC is not supported on TRC20")
	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 4.99, "external_ref": "u", "network": "TRC20"}),
		http.StatusBadRequest, "Amount must be at least $5.00 (project minimum)")

	huge := `{"amount": 10, "external_ref": "u", "metadata": {"x": "` + strings.Repeat("y", 70<<10) + `"}}`
	r := e.call(key, "POST", "/v1/payments", huge)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.Code)

	// Exactly 4 KB of metadata is fine.
	meta := `{"k":"` + strings.Repeat("z", 4096-8) + `"}`
	require.Len(t, meta, 4096)
	r = e.call(key, "POST", "/v1/payments", `{"amount": 10, "external_ref": "u", "network": "TRC20", "metadata": `+meta+`}`)
	assert.Equal(t, http.StatusCreated, r.Code, r.Raw)
}

func TestCreateErrorsOfTheWallet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	noWallet := e.merchant("bare", "pro", nil, nil)
	requireError(t, e.call(noWallet, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"}),
		http.StatusBadRequest, "Project has no wallet assigned")
	evmOnly := e.merchant("evm", "pro", nil, map[string]any{"xpubs": map[string]any{"evm": testXPubEVM}})
	requireError(t, e.call(evmOnly, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"}),
		http.StatusBadRequest, "Wallet has no xPub configured for this network")
	pool := e.merchant("pool", "pro", map[string]any{"address_mode": "pool"}, staticWallet("ERC20", evmAddrs[0]))
	requireError(t, e.call(pool, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"}),
		http.StatusBadRequest, "No addresses available for this network. Contact merchant.")
}

func TestCreateWithNetworkPerPayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())

	r := e.call(key, "POST", "/v1/payments", map[string]any{
		"amount": 10.5, "external_ref": "customer-1", "network": "TRC20", "metadata": map[string]any{"cart": 7},
	})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["success"])
	p := r.Body["payment"].(map[string]any)
	id := p["id"].(string)
	assert.Regexp(t, uuidRE, id)
	assert.Equal(t, testTronIndex1, p["address"])
	assert.Equal(t, "10.50", p["amount"])
	assert.Equal(t, "TRC20", p["network"])
	assert.Equal(t, "USDT", p["token"], "USDT by default")
	assert.Equal(t, "pending", p["status"])
	assert.Nil(t, p["external_order_id"])
	assert.Contains(t, p, "external_order_id")
	assert.Equal(t, payURL+"/"+id, p["payment_url"])
	assert.True(t, strings.HasPrefix(p["qr_code"].(string), "data:image/png;base64,"))
	assert.NotContains(t, p, "existing")
	assert.NotContains(t, p, "available_networks")
	expires, err := time.Parse(time.RFC3339, p["expires_at"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, e.clock.Now().Add(60*time.Minute), expires, time.Second, "the project's default expiry")

	assert.True(t, workflowRunning(t, id))
	// The row records its workflow once the answer is sent.
	assert.Eventually(t, func() bool { return e.workflowStarted(id) }, 5*time.Second, 10*time.Millisecond,
		"the row records its workflow")

	// GET one reads the stored state.
	g := e.call(key, "GET", "/v1/payments/"+id, nil)
	require.Equal(t, http.StatusOK, g.Code, g.Raw)
	gp := g.Body["payment"].(map[string]any)
	for _, f := range []string{"id", "status", "expected_amount", "paid_amount", "address", "network", "token", "tx_hash",
		"expires_at", "paid_at", "transactions", "external_ref", "external_order_id", "metadata", "created_at", "updated_at",
		"qr_code", "payment_url"} {
		assert.Contains(t, gp, f)
	}
	assert.Equal(t, "10.50", gp["expected_amount"])
	assert.Equal(t, "0.00", gp["paid_amount"])
	assert.Equal(t, []any{}, gp["transactions"])
	assert.Nil(t, gp["tx_hash"])
	assert.Nil(t, gp["paid_at"])
	assert.Equal(t, "customer-1", gp["external_ref"])
	assert.Equal(t, map[string]any{"cart": jsonNumber("7")}, gp["metadata"])
	assert.NotContains(t, gp, "awaiting_network")

	// expires_in and an explicit token.
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 3, "external_ref": "c2", "network": "BEP20", "token": "USDC", "expires_in": 300})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	expires, _ = time.Parse(time.RFC3339, r.str("payment.expires_at"))
	assert.WithinDuration(t, e.clock.Now().Add(5*time.Minute), expires, time.Second)
	assert.Equal(t, testEVMIndex1, r.str("payment.address"))
	assert.Equal(t, "3.00", r.str("payment.amount"))
}

func TestCreateWithoutNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{networks: []paywatch.Network{paywatch.TRC20, paywatch.ERC20, paywatch.POLYGON}})
	key := e.merchant("shop", "pro", nil, hdWallet())

	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 20, "external_ref": "u"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	p := r.Body["payment"].(map[string]any)
	for _, f := range []string{"address", "network", "token", "qr_code"} {
		assert.Contains(t, p, f)
		assert.Nil(t, p[f], f)
	}
	assert.Regexp(t, `^PAY-`, p["external_order_id"])
	nets := p["available_networks"].([]any)
	require.Len(t, nets, 3, "only offered networks")
	trc := nets[0].(map[string]any)
	assert.Equal(t, "TRC20", trc["network"])
	assert.Equal(t, "Tron (TRC20)", trc["name"])
	assert.Equal(t, []any{"USDT"}, trc["tokens"])
	assert.Equal(t, jsonNumber("19"), trc["confirmations"])
	assert.Equal(t, "https://tronscan.org", trc["explorer"])
	assert.Equal(t, []any{"USDT", "USDC", "DAI", "PYUSD"}, nets[1].(map[string]any)["tokens"])

	id := p["id"].(string)
	g := e.call(key, "GET", "/v1/payments/"+id, nil)
	require.Equal(t, http.StatusOK, g.Code)
	assert.Equal(t, true, g.get("payment.awaiting_network"))
	assert.Nil(t, g.get("payment.address"))
	assert.NotContains(t, g.Body["payment"], "qr_code")
	assert.True(t, workflowRunning(t, id))

	// An order id given by the merchant is kept; a repeat finds it.
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 20, "external_ref": "u", "external_order_id": "o-1"})
	require.Equal(t, http.StatusCreated, r.Code)
	assert.Equal(t, "o-1", r.str("payment.external_order_id"))
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 20, "external_ref": "u", "external_order_id": "o-1"})
	require.Equal(t, http.StatusOK, r.Code)
	assert.Equal(t, true, r.get("payment.existing"))
	assert.NotNil(t, r.get("payment.available_networks"))
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 20, "external_ref": "u", "external_order_id": "o-1", "network": "TRC20"})
	assert.Equal(t, http.StatusConflict, r.Code)
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	body := map[string]any{"amount": 25, "external_ref": "alice", "network": "ERC20", "external_order_id": "order-1"}

	first := e.call(key, "POST", "/v1/payments", body)
	require.Equal(t, http.StatusCreated, first.Code, first.Raw)
	again := e.call(key, "POST", "/v1/payments", body)
	require.Equal(t, http.StatusOK, again.Code, again.Raw)
	assert.Equal(t, true, again.get("payment.existing"))
	assert.Equal(t, first.str("payment.id"), again.str("payment.id"))
	assert.Equal(t, first.str("payment.address"), again.str("payment.address"))

	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 26, "external_ref": "alice", "network": "ERC20", "external_order_id": "order-1"})
	requireError(t, r, http.StatusConflict, "Payment already exists with different amount")
	assert.Equal(t, "25.00", r.Body["existing_amount"])

	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 25, "external_ref": "bob", "network": "ERC20", "external_order_id": "order-1"})
	requireError(t, r, http.StatusConflict, "external_order_id is already in use with a different external_ref")

	// N identical requests at once: one payment.
	concurrent := map[string]any{"amount": 7, "external_ref": "carol", "network": "POLYGON", "external_order_id": "order-2"}
	var created, existing atomic.Int32
	ids := make([]string, 10)
	parallel(10, func(i int) {
		r := e.call(key, "POST", "/v1/payments", concurrent)
		switch r.Code {
		case http.StatusCreated:
			created.Add(1)
		case http.StatusOK:
			existing.Add(1)
		default:
			t.Errorf("status %d: %s", r.Code, r.Raw)
		}
		ids[i] = r.str("payment.id")
	})
	assert.Equal(t, int32(1), created.Load())
	assert.Equal(t, int32(9), existing.Load())
	for _, id := range ids {
		assert.Equal(t, ids[0], id)
	}
	var n int
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE external_order_id = 'order-2'`).Scan(&n))
	assert.Equal(t, 1, n)
}

func TestPerUserMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "per_user"}, hdWallet())

	first := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "alice", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, first.Code, first.Raw)
	same := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "alice", "network": "TRC20"})
	require.Equal(t, http.StatusOK, same.Code, same.Raw)
	assert.Equal(t, true, same.get("payment.existing"))
	assert.Equal(t, first.str("payment.id"), same.str("payment.id"))

	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 11, "external_ref": "alice", "network": "TRC20"})
	requireError(t, r, http.StatusConflict, "This customer already has a payment in progress on this network. Cancel it or wait for it to complete.")
	assert.Equal(t, first.str("payment.id"), r.Body["existing_payment_id"])
	assert.Equal(t, "10.00", r.Body["existing_amount"])

	// Cancelled, the slot is free and the customer keeps the address.
	c := e.call(key, "PATCH", "/v1/payments/"+first.str("payment.id"), map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, c.Code, c.Raw)
	next := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 11, "external_ref": "alice", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, next.Code, next.Raw)
	assert.Equal(t, first.str("payment.address"), next.str("payment.address"))

	// Concurrent different orders: exactly one wins.
	var created, conflicts atomic.Int32
	parallel(6, func(i int) {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 20 + i, "external_ref": "bob", "network": "ERC20"})
		switch r.Code {
		case http.StatusCreated:
			created.Add(1)
		case http.StatusConflict:
			conflicts.Add(1)
		default:
			t.Errorf("status %d: %s", r.Code, r.Raw)
		}
	})
	assert.Equal(t, int32(1), created.Load())
	assert.Equal(t, int32(5), conflicts.Load())
}

func TestDedicatedMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "dedicated"}, staticWallet("TRC20", tronAddrs[:2]...))

	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "alice", "network": "TRC20", "address": tronAddrs[1]})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, tronAddrs[1], r.str("payment.address"), "pre-assigned")

	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "bob", "network": "TRC20", "address": tronAddrs[1]}),
		http.StatusConflict, "This address is already assigned to a different customer")
	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "bob", "network": "TRC20", "address": tronAddrs[2]}),
		http.StatusBadRequest, "Specified address does not belong to this project's wallet")

	bob := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "bob", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, bob.Code, bob.Raw)
	assert.Equal(t, tronAddrs[0], bob.str("payment.address"))
	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "carol", "network": "TRC20"}),
		http.StatusBadRequest, "No addresses available for this network. Contact merchant.")

	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 12, "external_ref": "bob", "network": "TRC20"})
	requireError(t, r, http.StatusConflict, "This customer already has a payment in progress on this network. Cancel it or wait for it to complete.")
	assert.Equal(t, bob.str("payment.id"), r.Body["existing_payment_id"])
}

func TestPoolMicroAmountMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "pool", "pool_matching": "micro_amount", "micro_amount_decimals": 1},
		staticWallet("TRC20", tronAddrs[0]))

	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10.25, "external_ref": "u", "network": "TRC20"}),
		http.StatusBadRequest, "Amount has more decimal places than this project's micro-amount precision allows")

	seen := map[string]bool{}
	for range 9 {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		amount := r.str("payment.amount")
		assert.Equal(t, "10.00", r.str("payment.original_amount"))
		assert.NotEqual(t, "10.00", amount, "the offset is always added")
		assert.Contains(t, r.str("payment.notice"), amount)
		assert.False(t, seen[amount], "amount %s given twice", amount)
		seen[amount] = true
	}
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	requireError(t, r, http.StatusTooManyRequests, "Payment capacity exceeded. Please try again later.")
	requireNoRateHeaders(t, r)
}

func TestPoolTxidConfirm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "pool", "pool_matching": "txid"}, staticWallet("TRC20", tronAddrs[0]))

	create := func(ref string) string {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 50, "external_ref": ref, "network": "TRC20"})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		assert.Equal(t, true, r.get("payment.requires_txid"))
		assert.Equal(t, tronAddrs[0], r.str("payment.address"))
		return r.str("payment.id")
	}
	id := create("alice")
	other := create("bob")

	requireError(t, e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{}), http.StatusBadRequest, "Invalid request body")
	requireError(t, e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": "xyz"}), http.StatusBadRequest, "Invalid request body")

	// Not on chain yet: recorded for later.
	pendingHash := strings.Repeat("ab", 32)
	r := e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": "0x" + strings.ToUpper(pendingHash)})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["success"])
	assert.Equal(t, "pending", r.Body["status"])
	assert.Equal(t, false, r.Body["verified"])
	assert.NotEmpty(t, r.Body["message"])
	assert.NotContains(t, r.Body, "amount_received")
	r = e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": pendingHash})
	requireError(t, r, http.StatusConflict, "Transaction hash already submitted and pending confirmation")
	assert.Equal(t, pendingHash, r.Body["submitted_tx_hash"], "stored as 64 lowercase hex without 0x on TRC20")

	// On chain: verified at once; 25 + 25 add up.
	chain := e.chain.chain(paywatch.TRC20)
	h1, h2 := strings.Repeat("01", 32), strings.Repeat("02", 32)
	chain.addTransfer(h1, paywatch.USDT, tronAddrs[0], "25")
	chain.addTransfer(h2, paywatch.USDT, tronAddrs[0], "25")
	r = e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": h1})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["verified"])
	assert.Equal(t, "confirming", r.Body["status"])
	assert.Equal(t, "25.00", r.Body["amount_received"])
	assert.NotEmpty(t, r.Body["message"])

	// The same hash cannot count for another payment.
	r = e.call(key, "POST", "/v1/payments/"+other+"/confirm", map[string]any{"tx_hash": h1})
	require.Equal(t, http.StatusConflict, r.Code, r.Raw)
	assert.True(t, strings.HasPrefix(r.str("error"), "This transaction hash is already"), r.Raw)

	r = e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": h2})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["verified"])

	g := e.call(key, "GET", "/v1/payments/"+id, nil)
	require.Equal(t, http.StatusOK, g.Code)
	txs := g.get("payment.transactions").([]any)
	require.Len(t, txs, 2)
	tx := txs[0].(map[string]any)
	assert.Equal(t, h1, tx["tx_hash"])
	assert.Equal(t, "25.00", tx["amount"])
	assert.Contains(t, tx, "from")
	assert.Contains(t, tx, "confirmed")
	assert.Contains(t, tx, "confirmations")

	// Two payments claim one hash at once: the first valid claim wins.
	a, b := create("carol"), create("dave")
	h3 := strings.Repeat("03", 32)
	chain.addTransfer(h3, paywatch.USDT, tronAddrs[0], "50")
	codes := make([]int, 2)
	parallel(2, func(i int) {
		codes[i] = e.call(key, "POST", "/v1/payments/"+[]string{a, b}[i]+"/confirm", map[string]any{"tx_hash": h3}).Code
	})
	assert.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, codes)

	// A cancelled payment takes no more hashes.
	require.Equal(t, http.StatusOK, e.call(key, "PATCH", "/v1/payments/"+other, map[string]any{"status": "cancelled"}).Code)
	requireError(t, e.call(key, "POST", "/v1/payments/"+other+"/confirm", map[string]any{"tx_hash": strings.Repeat("04", 32)}),
		http.StatusConflict, "Payment already finalized")

	// A payment in another mode does not take hashes.
	perPayment := e.merchant("hd", "pro", nil, hdWallet())
	c := e.call(perPayment, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "u", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, c.Code)
	r = e.call(perPayment, "POST", "/v1/payments/"+c.str("payment.id")+"/confirm", map[string]any{"tx_hash": h1})
	assert.Equal(t, http.StatusBadRequest, r.Code, r.Raw)

	requireError(t, e.call(key, "POST", "/v1/payments/"+c.str("payment.id")+"/confirm", map[string]any{"tx_hash": h1}),
		http.StatusNotFound, "Payment not found")
}

// The confirm answer's status is the contract's verdict on the hash,
// "confirming" when it verified at once and "pending" when it was recorded
// for later, never the payment's own status: a partial payment (25 of 50
// confirmed) that takes a second hash answers confirming, and one whose
// hash is not on chain yet answers pending.
func TestConfirmAnswersTheHashVerdictNotThePaymentStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "pool", "pool_matching": "txid"}, staticWallet("TRC20", tronAddrs[0]))
	id := e.createPayment(key, map[string]any{"amount": 50, "external_ref": "alice", "network": "TRC20"})
	chain := e.chain.chain(paywatch.TRC20)
	e.scanChain(paywatch.TRC20)

	h1, h2, unseen := strings.Repeat("11", 32), strings.Repeat("12", 32), strings.Repeat("13", 32)
	chain.addTransfer(h1, paywatch.USDT, tronAddrs[0], "25")
	r := e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": h1})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	require.Equal(t, true, r.Body["verified"])
	chain.setHead(100 + 30) // 31 confirmations of the 19 TRC20 needs
	e.waitPayStatus(id, paywatch.StatusPartial, 20*time.Second)

	chain.addTransfer(h2, paywatch.USDT, tronAddrs[0], "10")
	r = e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": h2})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, true, r.Body["verified"])
	assert.Equal(t, "confirming", r.Body["status"], "verified at once, on a partial payment")
	assert.Equal(t, "10.00", r.Body["amount_received"])

	r = e.call(key, "POST", "/v1/payments/"+id+"/confirm", map[string]any{"tx_hash": unseen})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, false, r.Body["verified"])
	assert.Equal(t, "pending", r.Body["status"], "not on chain yet, on a partial payment")
	assert.NotContains(t, r.Body, "amount_received")
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())
	other := e.merchant("other", "pro", nil, otherHDWallet())
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code)
	id := r.str("payment.id")

	requireError(t, e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "paid"}), http.StatusBadRequest, "Invalid request body")
	requireError(t, e.call(key, "PATCH", "/v1/payments/"+id, `{}`), http.StatusBadRequest, "Invalid request body")
	requireError(t, e.call(other, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"}), http.StatusNotFound, "Payment not found")
	requireError(t, e.call(key, "PATCH", "/v1/payments/not-a-uuid", map[string]any{"status": "cancelled"}), http.StatusNotFound, "Payment not found")

	c := e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, c.Code, c.Raw)
	assert.Equal(t, true, c.Body["success"])
	assert.Equal(t, id, c.str("payment.id"))
	assert.Equal(t, "cancelled", c.str("payment.status"))
	assert.Equal(t, "cancelled", e.call(key, "GET", "/v1/payments/"+id, nil).str("payment.status"))

	requireError(t, e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"}),
		http.StatusConflict, `Cannot cancel payment with status "cancelled". Only pending payments can be cancelled.`)

	// The micro offset or address it held is released by the workflow; a
	// per_payment address is deactivated.
	require.Eventually(t, func() bool {
		var active bool
		_ = e.store.Pool().QueryRow(context.Background(), `SELECT active FROM derived_addresses WHERE address = $1`, r.str("payment.address")).Scan(&active)
		return !active
	}, 10*time.Second, 50*time.Millisecond)
}

func TestGetAndList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	other := e.merchant("other", "pro", nil, otherHDWallet())

	start := e.clock.Now()
	var ids []string
	for i := range 3 {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10 + i, "external_ref": "u", "network": "TRC20", "expires_in": 300})
		require.Equal(t, http.StatusCreated, r.Code)
		ids = append(ids, r.str("payment.id"))
		e.clock.Add(time.Second)
	}
	requireError(t, e.call(other, "GET", "/v1/payments/"+ids[0], nil), http.StatusNotFound, "Payment not found")
	requireError(t, e.call(key, "GET", "/v1/payments/00000000-0000-0000-0000-000000000000", nil), http.StatusNotFound, "Payment not found")
	requireError(t, e.call(key, "GET", "/v1/payments/abc", nil), http.StatusNotFound, "Payment not found")

	r := e.call(key, "GET", "/v1/payments?limit=2", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	items := r.Body["payments"].([]any)
	require.Len(t, items, 2)
	assert.Equal(t, ids[2], items[0].(map[string]any)["id"], "newest first")
	for _, f := range []string{"status", "expected_amount", "paid_amount", "address", "external_ref", "external_order_id", "amount", "metadata", "created_at", "updated_at", "transactions"} {
		assert.Contains(t, items[0], f)
	}
	assert.Equal(t, map[string]any{"limit": jsonNumber("2"), "offset": jsonNumber("0"), "total": jsonNumber("3"), "has_more": true}, r.Body["pagination"])
	r = e.call(key, "GET", "/v1/payments?limit=2&offset=2", nil)
	assert.Equal(t, false, r.get("pagination.has_more"))
	assert.Len(t, r.Body["payments"], 1)
	r = e.call(key, "GET", "/v1/payments", nil)
	assert.Equal(t, jsonNumber("20"), r.get("pagination.limit"))
	assert.Len(t, e.call(other, "GET", "/v1/payments", nil).Body["payments"], 0, "scoped to the project")

	after := start.Add(500 * time.Millisecond).Format(time.RFC3339Nano)
	r = e.call(key, "GET", "/v1/payments?created_after="+after, nil)
	assert.Equal(t, jsonNumber("2"), r.get("pagination.total"))
	r = e.call(key, "GET", "/v1/payments?updated_after="+e.clock.Now().Add(time.Hour).Format(time.RFC3339), nil)
	assert.Equal(t, jsonNumber("0"), r.get("pagination.total"))

	for q, msg := range map[string]string{
		"limit=0": "Invalid limit or offset", "limit=101": "Invalid limit or offset", "limit=abc": "Invalid limit or offset",
		"offset=-1": "Invalid limit or offset", "offset=x": "Invalid limit or offset",
		"status=done": "Invalid status filter", "status=PAID": "Invalid status filter",
		"created_after=yesterday": "Invalid created_after", "updated_after=2024-13-45": "Invalid updated_after",
	} {
		requireError(t, e.call(key, "GET", "/v1/payments?"+q, nil), http.StatusBadRequest, msg)
	}

	// A pending payment shows as expired only 3 minutes after expires_at.
	e.clock.Add(5*time.Minute + 3*time.Minute - 4*time.Second)
	assert.Equal(t, "pending", e.call(key, "GET", "/v1/payments/"+ids[0], nil).str("payment.status"))
	e.clock.Add(time.Second)
	assert.Equal(t, "expired", e.call(key, "GET", "/v1/payments/"+ids[0], nil).str("payment.status"))
	r = e.call(key, "GET", "/v1/payments?status=expired", nil)
	assert.Equal(t, jsonNumber("1"), r.get("pagination.total"))
	r = e.call(key, "GET", "/v1/payments?status=pending", nil)
	assert.Equal(t, jsonNumber("2"), r.get("pagination.total"))
}

func TestConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true, networks: []paywatch.Network{paywatch.TRC20, paywatch.BEP20}})
	key := e.merchant("shop", "pro", nil, hdWallet())
	r := e.call(key, "GET", "/v1/config", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	assert.Equal(t, "Shop shop", r.str("project.name"))
	assert.Equal(t, "shop", r.str("project.slug"))
	assert.Equal(t, "USDT", r.Body["default_token"])
	assert.NotEmpty(t, r.Body["setup_url"])
	chains := r.Body["chains"].([]any)
	require.Len(t, chains, 2)
	bsc := chains[1].(map[string]any)
	assert.Equal(t, "BEP20", bsc["chain"])
	assert.Equal(t, "BSC (BEP20)", bsc["name"])
	assert.Equal(t, []any{"USDT", "USDC", "DAI"}, bsc["tokens"])
	assert.Equal(t, jsonNumber("15"), bsc["confirmations"])
	assert.Equal(t, "https://bscscan.com", bsc["explorer"])
	assert.NotContains(t, bsc, "network")
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	_, err := e.store.Pool().Exec(context.Background(), `ALTER TABLE derived_addresses RENAME TO derived_addresses_gone`)
	require.NoError(t, err)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	requireError(t, r, http.StatusInternalServerError, "Failed to create payment")
	assert.NotContains(t, r.Raw, "derived_addresses")
}

// TestCreateAnswersOnceCommitted checks that a failure after the payment
// is stored leaves out the part that failed instead of answering 500: a
// client retrying a 500 without external_order_id would pay twice.
func TestCreateAnswersOnceCommitted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	ctx := context.Background()
	count := func() int {
		var n int
		require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&n))
		return n
	}

	// The QR code cannot be rendered: the stored address is too long for
	// one.
	_, err := e.store.Pool().Exec(ctx, `
		CREATE FUNCTION overlong_address() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN NEW.address := repeat('x', 4000); RETURN NEW; END $$;
		CREATE TRIGGER overlong_address BEFORE UPDATE OF address ON payments
		FOR EACH ROW WHEN (NEW.address IS NOT NULL) EXECUTE FUNCTION overlong_address()`)
	require.NoError(t, err)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Regexp(t, uuidRE, r.str("payment.id"))
	assert.Equal(t, "TRC20", r.str("payment.network"))
	require.Contains(t, r.get("payment").(map[string]any), "qr_code")
	assert.Nil(t, r.get("payment.qr_code"))
	assert.NotContains(t, r.get("payment").(map[string]any), "available_networks")
	assert.Equal(t, 1, count())

	// The wallet cannot be read again after the insert.
	_, err = e.store.Pool().Exec(ctx, `
		CREATE FUNCTION hide_static_addresses() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN ALTER TABLE static_addresses RENAME TO static_addresses_gone; RETURN NULL; END $$;
		CREATE TRIGGER hide_static_addresses AFTER INSERT ON payments
		FOR EACH ROW EXECUTE FUNCTION hide_static_addresses()`)
	require.NoError(t, err)
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Regexp(t, uuidRE, r.str("payment.id"))
	assert.NotContains(t, r.get("payment").(map[string]any), "available_networks")
	for _, field := range []string{"address", "network", "token", "qr_code"} {
		require.Contains(t, r.get("payment").(map[string]any), field)
		assert.Nil(t, r.get("payment."+field), field)
	}
	assert.Equal(t, 2, count())
	assert.Equal(t, http.StatusOK, e.call(key, "GET", "/v1/payments/"+r.str("payment.id"), nil).Code)
}

func TestReconcilerStartsMissingWorkflows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("shop", "pro", nil, hdWallet())

	// A replica without a workflow client (or one that died after the
	// insert) leaves the row unstarted.
	blind := newEnvSharing(t, e)
	r := blind.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	id := r.str("payment.id")
	assert.False(t, e.workflowStarted(id))
	assert.False(t, workflowRunning(t, id))

	rec := e.server.Reconciler()
	rec.MinAge = time.Second
	n, err := rec.Once(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "too fresh: its request may still start it")
	e.clock.Add(2 * time.Second)
	n, err = rec.Once(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.True(t, e.workflowStarted(id))
	assert.True(t, workflowRunning(t, id))
	n, err = rec.Once(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n)

	// The workflow works: cancel through it.
	c := e.call(key, "PATCH", "/v1/payments/"+id, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, c.Code, c.Raw)

	// Cancel of a row whose workflow was never started starts it first.
	r = blind.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "u2", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code)
	c = e.call(key, "PATCH", "/v1/payments/"+r.str("payment.id"), map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, c.Code, c.Raw)
	assert.Equal(t, "cancelled", c.str("payment.status"))
}
