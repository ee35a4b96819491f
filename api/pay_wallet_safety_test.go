package api_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// The wallet link asks a wallet to send money: these tests hold it back
// wherever sending would be wrong, a second payment or funds that cannot
// count.

// stateVersion orders the saves of saveState (newer saves apply).
var stateVersion atomic.Int64

// saveState writes payment id's state as its workflow would (the envs here
// run none): status, the confirmed amount and the transfers seen.
func (e *env) saveState(id string, status paywatch.Status, paid string, txs ...paywatch.Transaction) {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.store.PaymentByID(ctx, id)
	require.NoError(e.t, err)
	_, err = e.store.SavePaymentState(ctx, paywatch.PaymentState{
		PaymentID: p.ID, Status: status, Network: p.Network, Token: p.Token, Address: p.Address,
		Amount: p.Amount, OriginalAmount: p.OriginalAmount, PaidAmount: paywatch.MustParseAmount(paid, p.Amount.Decimals()),
		Transactions: txs, ExpiresAt: p.ExpiresAt, Version: stateVersion.Add(1),
	})
	require.NoError(e.t, err)
}

// seenTransfer is a transfer of amount (at the payment's decimals) with
// its confirmations, confirmed or still confirming.
func seenTransfer(n int, amount string, decimals, confirmations int, confirmed bool) paywatch.Transaction {
	return paywatch.Transaction{
		TxHash: txHash(n), BlockNumber: uint64(100 + n), BlockHash: blockHash(uint64(100 + n)),
		From: "0x000000000000000000000000000000000000dEaD", Amount: paywatch.MustParseAmount(amount, decimals),
		Confirmations: confirmations, Confirmed: confirmed,
	}
}

// noWalletLink asserts neither the page nor the status JSON offers a
// wallet request for payment id.
func (e *env) noWalletLink(id, why string) {
	e.t.Helper()
	page := e.payCall(request{method: "GET", path: "/" + id, ip: nextIP()})
	requireHTML(e.t, page, http.StatusOK)
	assert.Contains(e.t, page.Raw, `<div id="wallet" class="wallet" hidden>`, why)
	assert.NotContains(e.t, page.Raw, `ethereum:`, why)
	s := e.payCall(request{method: "GET", path: "/api/pay/" + id, ip: nextIP()})
	require.Equal(e.t, http.StatusOK, s.Code, s.Raw)
	assert.NotContains(e.t, s.Body, "wallet_uri", why)
	assert.NotContains(e.t, s.Body, "wallet_qr_code", why)
}

// A partial payment whose follow-up transfer is still confirming stays
// partial: the page must not ask for the rest again, or the buyer pays
// it twice.
func TestWalletLinkNotWhileAFollowUpConfirms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", nil, hdWallet())
	id := e.createPayment(key, map[string]any{"amount": 50, "external_ref": "u", "network": "ERC20"})
	first := seenTransfer(1, "20", 6, 12, true)
	e.saveState(id, paywatch.StatusPartial, "20", first)
	assert.Equal(t, []string{"30000000"}, parseEIP681(t, e.walletLinkOf(id)).params["uint256"], "partial: the rest")

	e.saveState(id, paywatch.StatusPartial, "20", first, seenTransfer(2, "30", 6, 3, false))
	s := e.payGet("/api/pay/" + id)
	require.Equal(t, "partial", s.str("status"), "the status stays partial while the follow-up confirms")
	e.noWalletLink(id, "the rest is on its way")
	page := e.payGet("/" + id).Raw
	assert.Contains(t, page, `data-state="confirming"`, "the page says a transfer is confirming")
	assert.Contains(t, page, `<span data-f="confirmations">3</span> of <span data-f="required_confirmations">12</span>`)
	assert.NotRegexp(t, `<div class="state" data-state="partial">`, page, "not the partial text asking for the rest")
}

// Past expires_at a partial payment may still read partial (the confirming
// grace, an RPC outage), and a late remainder does not count in every
// mode: no request for it, and the page says time is up.
func TestWalletLinkNotPastExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "per_user"}, hdWallet())
	partial := e.createPayment(key, map[string]any{"amount": 50, "external_ref": "u", "network": "ERC20", "expires_in": 300})
	e.saveState(partial, paywatch.StatusPartial, "20", seenTransfer(1, "20", 6, 12, true))
	pending := e.createPayment(key, map[string]any{"amount": 50, "external_ref": "v", "network": "ERC20", "expires_in": 300})
	e.walletLinkOf(partial)
	e.walletLinkOf(pending)

	e.clock.Add(5*time.Minute + time.Second)
	require.Equal(t, "partial", e.payGet("/api/pay/"+partial).str("status"))
	e.noWalletLink(partial, "partial past expiry")
	page := e.payGet("/" + partial).Raw
	assert.Contains(t, page, `data-state="pending-late"`, "time is up")
	assert.NotRegexp(t, `<div class="state" data-state="partial">`, page, "not the text asking for the rest before the time runs out")

	require.Equal(t, "pending", e.payGet("/api/pay/"+pending).str("status"))
	e.noWalletLink(pending, "pending past expiry")
	assert.Contains(t, e.payGet("/"+pending).Raw, `data-state="pending-late"`)
}

// In pool + micro_amount mode only a transfer of the exact amount is the
// payment's: a request for the rest would send funds that never match.
func TestWalletLinkNotForTheRestOfAnExactMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("shop", "pro", map[string]any{"address_mode": "pool", "pool_matching": "micro_amount"}, staticWallet("BEP20", evmAddrs[1]))
	id := e.createPayment(key, map[string]any{"amount": 10, "external_ref": "u", "network": "BEP20"})
	e.walletLinkOf(id)
	e.saveState(id, paywatch.StatusPartial, "4", seenTransfer(1, "4", 18, 15, true))
	require.Equal(t, "partial", e.payGet("/api/pay/"+id).str("status"))
	e.noWalletLink(id, "pool + micro_amount: a remainder never matches")
}

// A devnet chain has its network's mainnet chain id but its own token
// contracts: a real wallet would call transfer on a mainnet contract.
func TestWalletLinkNotOnDevnetChains(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true, devnetNetworks: []paywatch.Network{paywatch.ERC20}, walletTokens: map[paywatch.Network]map[paywatch.Token]string{
		paywatch.ERC20: {paywatch.USDT: "0x5fbdb2315678afecb367f032d93f642f64180aa3"},
		paywatch.BEP20: {paywatch.USDT: paywatch.DefaultContract(paywatch.BEP20, paywatch.USDT)},
	}})
	key := e.merchant("shop", "pro", nil, hdWallet())
	dev := e.createPayment(key, map[string]any{"amount": 3, "external_ref": "u", "network": "ERC20"})
	e.noWalletLink(dev, "a devnet chain")
	bsc := e.createPayment(key, map[string]any{"amount": 3, "external_ref": "u", "network": "BEP20"})
	assert.Equal(t, int64(56), parseEIP681(t, e.walletLinkOf(bsc)).chainID, "a network on an RPC URL keeps its link")
}
