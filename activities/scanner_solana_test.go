package activities_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// ownSolanaWallet registers a fresh Solana wallet address as the scan
// project's (static_addresses, address_owners), and returns it.
func (db *scanDB) ownSolanaWallet(t testing.TB) string {
	t.Helper()
	return db.ownWallet(t, paywatch.SOLANA)
}

// ownWallet registers a fresh wallet address of network n (of a memo
// family: SOLANA, TON) as the scan project's, as a merchant does.
func (db *scanDB) ownWallet(t testing.TB, n paywatch.Network) string {
	t.Helper()
	ctx := context.Background()
	var walletID int64
	require.NoError(t, db.pool.QueryRow(ctx, `
		INSERT INTO wallets (project_id, name) VALUES ($1, 'main')
		ON CONFLICT (project_id) DO UPDATE SET name = wallets.name RETURNING id`, db.projectID).Scan(&walletID))
	addr := randomAddress(t, n)
	_, err := db.pool.Exec(ctx, `INSERT INTO address_owners (family, address, wallet_id) VALUES ($1, $2, $3)`, string(n.Family()), addr, walletID)
	require.NoError(t, err)
	_, err = db.pool.Exec(ctx, `INSERT INTO static_addresses (wallet_id, network, address) VALUES ($1, $2, $3)`, walletID, string(n), addr)
	require.NoError(t, err)
	return addr
}

// watchMemo inserts a pending per_payment memo payment of 10 tok on n at
// addr with memo, and returns its id.
func (db *scanDB) watchMemo(t testing.TB, n paywatch.Network, tok paywatch.Token, addr, memo string, startBlock uint64) string {
	t.Helper()
	id := db.watch(t, n, tok, addr, startBlock)
	_, err := db.pool.Exec(context.Background(), `UPDATE payments SET memo = $2 WHERE id = $1`, id, memo)
	require.NoError(t, err)
	return id
}

// On SOLANA one wallet address serves every memo payment: the scanner
// reads the wallet's token accounts from their cursors, a transfer counts
// only for the payment whose Solana Pay reference it carries, and one
// without a reference, or with an unknown one, is recorded as unmatched
// funds with reason no_memo. The payment's transfer is confirmed once
// its slot is finalized, not at a depth of 32 slots.
func TestSolanaScannerMatchesMemosAndConfirmsAtFinality(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := paywatch.SOLANA
	d, set := devnetChain(ctx, t, n)
	db := newScanDB(t)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond}})
	scan := func() {
		t.Helper()
		_, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 300 * time.Millisecond}, nil)
		require.NoError(t, err)
	}
	wallet := db.ownSolanaWallet(t)
	scan() // the cursor starts at the head
	st, _ := d.Network(n)
	refA, refB := paywatch.NewSolanaReference(), paywatch.NewSolanaReference()
	a := db.watchMemo(t, n, paywatch.USDC, wallet, refA, st.Head+1)
	b := db.watchMemo(t, n, paywatch.USDC, wallet, refB, st.Head+1)

	paid, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: wallet, Amount: "10", Memo: refA})
	require.NoError(t, err)
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: wallet, Amount: "10"})
	require.NoError(t, err)
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: wallet, Amount: "10", Memo: paywatch.NewSolanaReference()})
	require.NoError(t, err)
	scan()

	var seen []sentSignal
	for _, g := range sig.signals() {
		if g.Name == workflows.SignalTransferSeen {
			seen = append(seen, g)
		}
	}
	require.Len(t, seen, 1, "only the transfer carrying a payment's reference")
	assert.Equal(t, workflows.PaymentWorkflowID(a), seen[0].WorkflowID)
	assert.NotEqual(t, workflows.PaymentWorkflowID(b), seen[0].WorkflowID)

	// What the workflow saves once it counts the transfer.
	client, err := set.Client(n)
	require.NoError(t, err)
	hash, err := client.BlockHash(ctx, paid.BlockNumber)
	require.NoError(t, err)
	_, err = db.store.SavePaymentState(ctx, paywatch.PaymentState{
		PaymentID: a, Status: paywatch.StatusConfirming, Network: n, Token: paywatch.USDC,
		Amount: paywatch.MustParseAmount("10", 6), PaidAmount: paywatch.NewAmount(nil, 6), Version: 1,
		Transactions: []paywatch.Transaction{{TxHash: paid.TxHash, LogIndex: 0, BlockNumber: paid.BlockNumber, BlockHash: hash,
			From: paid.From, Amount: paywatch.MustParseAmount("10", 6)}},
	})
	require.NoError(t, err)
	confirmed := func() []workflows.TransfersConfirmed {
		var out []workflows.TransfersConfirmed
		for _, g := range sig.signals() {
			if g.Name == workflows.SignalTransfersConfirmed {
				out = append(out, g.Arg.(workflows.TransfersConfirmed))
			}
		}
		return out
	}

	// 32 slots deep, but some were skipped: fewer than 32 blocks on top,
	// not finalized, not confirmed.
	for {
		head, err := d.Mine(ctx, n, 1)
		require.NoError(t, err)
		if head-paid.BlockNumber+1 >= 32 {
			break
		}
	}
	fin, err := client.(chains.FinalityReader).Finalized(ctx)
	require.NoError(t, err)
	require.Less(t, fin, paid.BlockNumber, "the devnet skips slots: 32 slots are fewer than 32 blocks")
	scan()
	assert.Empty(t, confirmed(), "deep enough but not finalized")

	_, err = d.Mine(ctx, n, 8)
	require.NoError(t, err)
	scan()
	got := confirmed()
	require.Len(t, got, 1)
	require.Len(t, got[0].Transfers, 1)
	c := got[0].Transfers[0]
	assert.True(t, c.Canonical)
	assert.Equal(t, paid.TxHash, c.TxHash)
	assert.Equal(t, 32, c.Confirmations, "final: 32, however many slots deep")

	// The two without a known reference: unmatched, no_memo.
	ts, _, err := db.store.ProjectTransfers(ctx, db.projectID, store.TransferFilter{})
	require.NoError(t, err)
	reasons := map[string]int{}
	for _, pt := range ts {
		if pt.State == store.TransferUnmatched {
			reasons[pt.Reason]++
		}
	}
	assert.Equal(t, map[string]int{store.ReasonNoMemo: 2}, reasons)
}

// A provider whose history stops short of a watched account's cursor
// (it answers [] for a page older than its newest): the scanner does not
// take the short answer for the whole history. The poll fails, the
// cursor stays, and the failure record says why (for /health).
func TestSolanaScannerRefusesAShallowHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.SOLANA
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	st, _ := d.Network(n)
	shallow := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, Rewrite: func(method string, params []json.RawMessage, result json.RawMessage) json.RawMessage {
		if method == "getSignaturesForAddress" && len(params) > 1 && strings.Contains(string(params[1]), `"before"`) {
			return json.RawMessage("[]")
		}
		return nil
	}})
	t.Cleanup(shallow.Close)
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{shallow.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(set.Close)
	db := newScanDB(t)
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: &signalLog{},
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond}})
	wallet := db.ownSolanaWallet(t)
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 200 * time.Millisecond}, nil)
	require.NoError(t, err)
	before, ok, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	require.True(t, ok)
	// The wallet's account read once: a cursor to page back to.
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: wallet, Amount: "1"})
	require.NoError(t, err)
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 300 * time.Millisecond}, nil)
	require.NoError(t, err)
	// Two transfers since: the node lists the newest, and not the page
	// that would reach the cursor.
	for range 2 {
		_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDC, To: wallet, Amount: "1"})
		require.NoError(t, err)
	}
	mid, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	require.Greater(t, mid.Height, before.Height)
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 2 * time.Second}, nil)
	require.NoError(t, err)
	after, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Equal(t, mid.Height, after.Height, "the cursor stays until an endpoint reaches it")
	rows, err := db.store.ChainStatus(ctx)
	require.NoError(t, err)
	var found bool
	for _, r := range rows {
		if r.Network == n {
			found = true
			assert.Positive(t, r.FailedPolls)
			assert.Contains(t, r.LastError, paywatch.MsgHistoryShallow)
		}
	}
	assert.True(t, found)
}
