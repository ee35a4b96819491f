package store_test

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
)

// setStatus moves a payment to a status (as its workflow would save it),
// optionally with another expiry.
//
// An expired payment's late window is closed as its workflow would have
// closed it on time (late_closed): once the window and its grace are over
// by the store's clock.
func setStatus(t *testing.T, s *store.Store, id string, st paywatch.Status, expiresAt *time.Time) {
	t.Helper()
	closedBefore := s.Now().Add(-paywatch.LateWindow - paywatch.ConfirmingGrace)
	_, err := s.Pool().Exec(context.Background(), `
		UPDATE payments SET status = $2, expires_at = COALESCE($3, expires_at),
		       late_closed = ($2 = 'expired' AND COALESCE($3, expires_at) <= $4)
		WHERE id = $1`, id, string(st), expiresAt, closedBefore)
	require.NoError(t, err)
}

// closeLateWindow closes payment id's late window, as its workflow does
// once the window's end has passed and the chain was read up to it.
func closeLateWindow(t *testing.T, s *store.Store, id string) {
	t.Helper()
	_, err := s.Pool().Exec(context.Background(), `UPDATE payments SET late_closed = true WHERE id = $1`, id)
	require.NoError(t, err)
}

// holdLateWindow leaves payment id's late window open, as a workflow does
// whose close waits for the chain's answer.
func holdLateWindow(t *testing.T, s *store.Store, id string) {
	t.Helper()
	_, err := s.Pool().Exec(context.Background(), `UPDATE payments SET late_closed = false WHERE id = $1`, id)
	require.NoError(t, err)
}

// ids lists the payment ids of watches.
func ids(ws []store.WatchedPayment) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.PaymentID)
	}
	return out
}

func TestWatchedAddressesFollowsTheWatchRules(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()

	// per_payment: one address per payment.
	hd := project(t, s, "hd", store.ProjectSettings{}, hdWallet())
	mk := func(ref string) *store.Payment {
		p, _, err := s.CreatePayment(ctx, newPayment(hd, ref, "10"))
		require.NoError(t, err)
		return p
	}
	pending, confirming, partial := mk("a"), mk("b"), mk("c")
	setStatus(t, s, confirming.ID, paywatch.StatusConfirming, nil)
	setStatus(t, s, partial.ID, paywatch.StatusPartial, nil)
	lateOK, lateGone := mk("d"), mk("e")
	setStatus(t, s, lateOK.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-23*time.Hour)))
	setStatus(t, s, lateGone.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-25*time.Hour)))
	paid, cancelled := mk("f"), mk("g")
	setStatus(t, s, paid.ID, paywatch.StatusPaid, nil)
	setStatus(t, s, cancelled.ID, paywatch.StatusCancelled, nil)

	// per_user: an expired payment takes no late funds.
	pu := project(t, s, "pu", mode(paywatch.ModePerUser), store.WalletUpdate{XPubs: map[string]*string{"tron": ptr(perUserXPubTron)}})
	puPay, _, err := s.CreatePayment(ctx, newPayment(pu, "user", "10"))
	require.NoError(t, err)
	setStatus(t, s, puPay.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-time.Hour)))

	// pool + micro_amount: a shared address, every payment on it listed.
	micro := project(t, s, "micro", pool(paywatch.MatchMicroAmount, 3), staticWallet("TRC20", tronAddrs[0]))
	m1, _, err := s.CreatePayment(ctx, newPayment(micro, "m1", "10"))
	require.NoError(t, err)
	m2, _, err := s.CreatePayment(ctx, newPayment(micro, "m2", "10"))
	require.NoError(t, err)
	require.Equal(t, m1.Address, m2.Address)

	// pool + txid: listed only with a hash it claimed.
	txidAddr := paywatch.TronAddressFromEVMBytes(bytes.Repeat([]byte{7}, 20))
	nobody := paywatch.TronAddressFromEVMBytes(bytes.Repeat([]byte{9}, 20))
	txid := project(t, s, "txid", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", txidAddr))
	t1, _, err := s.CreatePayment(ctx, newPayment(txid, "t1", "10"))
	require.NoError(t, err)
	t2, _, err := s.CreatePayment(ctx, newPayment(txid, "t2", "10"))
	require.NoError(t, err)
	hashA, hashB := "aa"+zeros(62), "bb"+zeros(62)
	require.NoError(t, s.ClaimTxHash(ctx, paywatch.TRC20, hashA, t1.ID, nil))

	addrs := []string{pending.Address, confirming.Address, partial.Address, lateOK.Address, lateGone.Address,
		paid.Address, cancelled.Address, puPay.Address, m1.Address, t1.Address, nobody}
	w, err := s.WatchedAddresses(ctx, paywatch.TRC20, addrs, []string{hashA, hashB}, nil)
	require.NoError(t, err)

	var all []string
	for _, ws := range w {
		all = append(all, ids(ws)...)
	}
	for _, p := range []*store.Payment{pending, confirming, partial, lateOK} {
		assert.Contains(t, ids(w[p.Address]), p.ID, "watched: %s", p.ExternalRef)
	}
	for _, p := range []*store.Payment{lateGone, paid, cancelled, puPay} {
		assert.NotContains(t, all, p.ID, "not watched: %s", p.ExternalRef)
	}
	assert.Len(t, all, 4+2+1)
	assert.ElementsMatch(t, []string{m1.ID, m2.ID}, ids(w[m1.Address]), "a pool address is shared")
	require.Equal(t, t1.Address, t2.Address)
	require.Equal(t, []string{t1.ID}, ids(w[t1.Address]), "only the txid payment that claimed a batch hash")
	assert.True(t, w[t1.Address][0].TxidOnly)
	assert.Equal(t, []string{hashA}, w[t1.Address][0].ClaimedTxHashes)
	assert.NotContains(t, w, nobody, "an address nobody watches")

	got := w[pending.Address][0]
	assert.Equal(t, paywatch.USDT, got.Token)
	assert.True(t, got.Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: "x", BlockNumber: got.StartBlock}))
	assert.False(t, got.Accepts(paywatch.Transfer{Token: paywatch.USDC, TxHash: "x", BlockNumber: got.StartBlock}), "another token")
	txw := w[t1.Address][0]
	assert.True(t, txw.Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: hashA}))
	assert.False(t, txw.Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: hashB, BlockNumber: 0}), "a hash the payment did not claim")

	w, err = s.WatchedAddresses(ctx, paywatch.TRC20, []string{t1.Address}, []string{hashB}, nil)
	require.NoError(t, err)
	assert.Empty(t, w, "no claimed hash in the batch: no txid payment")
	w, err = s.WatchedAddresses(ctx, paywatch.BEP20, addrs, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, w, "the network must match")
}

// perUserXPubTron is a Tron account xPub other than testXPubTron: an xPub,
// and so the addresses it derives, belongs to one project only.
const perUserXPubTron = "xpub6ByFDymkPaVqJvsTLsSFKqxedCn33Y2SZWACasWzQ3XJ1mCx3TM4aSBMwfoFJeh9y7A6JXfLLYvcz2WmPc1xsJC9B6X4G48NP1S2SFrNmUZ"

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}

func TestStartBlockComesFromTheCursorAndBoundsMatching(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	_, ok, err := s.EarliestWatchedBlock(ctx, paywatch.TRC20)
	require.NoError(t, err)
	assert.False(t, ok)

	hd := project(t, s, "hd", store.ProjectSettings{}, hdWallet())
	early, _, err := s.CreatePayment(ctx, newPayment(hd, "early", "10"))
	require.NoError(t, err)
	_, ok, err = s.EarliestWatchedBlock(ctx, paywatch.TRC20)
	require.NoError(t, err)
	assert.False(t, ok, "start block 0 (no scan yet) is unknown")

	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: 500, BlockHash: "h500", Head: 510}, nil)
	require.NoError(t, err)
	late, _, err := s.CreatePayment(ctx, newPayment(hd, "late", "10"))
	require.NoError(t, err)
	assert.Equal(t, uint64(511), late.StartBlock, "without a chain to ask, a payment starts after the newest block a scanner saw")
	first, ok, err := s.EarliestWatchedBlock(ctx, paywatch.TRC20)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(511), first)

	w, err := s.WatchedAddresses(ctx, paywatch.TRC20, []string{early.Address, late.Address}, nil, nil)
	require.NoError(t, err)
	lw := w[late.Address][0]
	assert.Equal(t, uint64(511), lw.StartBlock)
	assert.False(t, lw.Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: "x", BlockNumber: 510}), "a transfer before the address was assigned")
	assert.True(t, lw.Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: "x", BlockNumber: 511}))
}

// A start block is the chain's head when the address is assigned, not the
// scanner's cursor: a scanner lagging far behind must not let an older
// transfer to a shared pool address count for a new payment.
func TestStartBlockIsTheChainHeadAtAssignment(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.TRC20
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	defer d.Close()
	dn, _ := d.Network(n)
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{dn.RPCURL}, Contracts: dn.Tokens})
	require.NoError(t, err)
	defer set.Close()
	heads := chains.NewHeads(set, func(paywatch.Network) time.Duration { return time.Nanosecond })
	s, _ := newStore(t, store.WithChainHeads(heads))

	// The scanner read up to block 2 and stopped there.
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 2, BlockHash: "h2", Head: 2}, nil)
	require.NoError(t, err)
	addr := paywatch.TronAddressFromEVMBytes(bytes.Repeat([]byte{7}, 20))
	prj := project(t, s, "pool", pool(paywatch.MatchMicroAmount, 3), staticWallet("TRC20", addr))
	old, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	_, err = d.Mine(ctx, n, 5)
	require.NoError(t, err)
	// The newest block, the head at assignment, holds a transfer too.
	last, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	dn, _ = d.Network(n)
	require.Equal(t, dn.Head, last.BlockNumber)

	p, _, err := s.CreatePayment(ctx, newPayment(prj, "c1", "10"))
	require.NoError(t, err)
	assert.Equal(t, dn.Head+1, p.StartBlock, "the first block after the head")
	w, err := s.WatchedAddresses(ctx, n, []string{addr}, nil, nil)
	require.NoError(t, err)
	require.Len(t, w[addr], 1)
	assert.False(t, w[addr][0].Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: old.TxHash, BlockNumber: old.BlockNumber}), "mined before the address was assigned")
	assert.False(t, w[addr][0].Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: last.TxHash, BlockNumber: last.BlockNumber}), "mined in the head block, before the assignment")
	assert.True(t, w[addr][0].Accepts(paywatch.Transfer{Token: paywatch.USDT, TxHash: "0x" + strings.Repeat("ab", 32), BlockNumber: dn.Head + 1}), "mined after the assignment")

	// A chain that cannot be asked does not stop creation: the newest block
	// a scanner saw stands in.
	dead, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{"127.0.0.1:1"}, Contracts: dn.Tokens})
	require.NoError(t, err)
	defer dead.Close()
	s = store.New(s.Pool(), store.WithChainHeads(chains.NewHeads(dead, func(paywatch.Network) time.Duration { return 0 })))
	p, _, err = s.CreatePayment(ctx, newPayment(prj, "c2", "10"))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), p.StartBlock, "after the scanner's newest block")
}

// transfer is a recorded transfer fixture.
func transfer(hash string, logIndex uint32, block uint64, blockHash string, units int64) paywatch.Transfer {
	return paywatch.Transfer{
		TxHash: hash, LogIndex: logIndex, BlockNumber: block, BlockHash: blockHash, Token: paywatch.USDT,
		From: tronAddrs[0], To: tronAddrs[1], Amount: big.NewInt(units),
	}
}

func TestRecordScanRecordsOnceWithTheCursor(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20, paywatch.ERC20}))
	ctx := context.Background()
	n := paywatch.TRC20

	st, err := s.ChainStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, []store.ChainStatus{{Network: paywatch.TRC20}, {Network: paywatch.ERC20}}, st, "offered networks, not scanned yet")

	a := transfer("aa", 0, 100, "h100", 5_000_000)
	b := transfer("bb", 3, 102, "h102", 7_000_000)
	var inside bool
	res, err := s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 110, BlockHash: "h110", Head: 150,
		Transfers: []paywatch.Transfer{a, b, a}}, func(ctx context.Context, _ []store.ClaimedTransfer) error {
		// The batch is visible inside the transaction only.
		_, ok, err := s.ChainTransferByKey(context.Background(), n, a.Key())
		require.NoError(t, err)
		inside = !ok
		return nil
	})
	require.NoError(t, err)
	assert.True(t, inside, "nothing is visible before the commit")
	assert.Equal(t, store.RecordResult{Inserted: 2}, res, "a duplicate in a batch is recorded once")
	cur, ok, err := s.ChainCursor(ctx, n)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(110), cur.Height)
	assert.Equal(t, "h110", cur.BlockHash)
	assert.Equal(t, uint64(150), cur.Head)

	// Scanning the same blocks again changes nothing.
	res, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 110, BlockHash: "h110", Head: 150,
		Transfers: []paywatch.Transfer{a, b}}, nil)
	require.NoError(t, err)
	assert.Equal(t, store.RecordResult{}, res)

	// A failure before the commit records nothing and keeps the cursor.
	c := transfer("cc", 0, 120, "h120", 1)
	boom := errors.New("signal failed")
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 130, BlockHash: "h130", Head: 150,
		Transfers: []paywatch.Transfer{c}}, func(context.Context, []store.ClaimedTransfer) error { return boom })
	require.ErrorIs(t, err, boom)
	_, ok, err = s.ChainTransferByKey(ctx, n, c.Key())
	require.NoError(t, err)
	assert.False(t, ok)
	cur, _, err = s.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Equal(t, uint64(110), cur.Height)

	// A reorg: b is marked removed, then re-mined in another block.
	recent, err := s.RecentTransfers(ctx, n, 101)
	require.NoError(t, err)
	require.Len(t, recent, 1)
	assert.Equal(t, b.Key(), recent[0].Key())
	assert.Equal(t, big.NewInt(7_000_000), recent[0].Amount)
	require.NoError(t, s.MarkTransfersRemoved(ctx, n, []paywatch.TransferKey{b.Key(), {TxHash: "unknown"}}))
	recent, err = s.RecentTransfers(ctx, n, 0)
	require.NoError(t, err)
	require.Len(t, recent, 1, "removed transfers are not recent")
	assert.Equal(t, a.Key(), recent[0].Key())

	b2 := transfer("bb", 3, 104, "h104b", 7_000_000)
	res, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 112, BlockHash: "h112", Head: 150,
		Transfers: []paywatch.Transfer{b2}}, nil)
	require.NoError(t, err)
	assert.Equal(t, store.RecordResult{Moved: 1}, res)
	got, ok, err := s.ChainTransferByKey(ctx, n, b.Key())
	require.NoError(t, err)
	require.True(t, ok)
	assert.False(t, got.Removed)
	assert.Equal(t, uint64(104), got.BlockNumber)
	assert.Equal(t, "h104b", got.BlockHash)

	var rows int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
	assert.Equal(t, 2, rows, "each transfer is stored once")

	st, err = s.ChainStatus(ctx)
	require.NoError(t, err)
	require.Len(t, st, 2)
	assert.Equal(t, paywatch.TRC20, st[0].Network)
	assert.Equal(t, uint64(150), st[0].Head)
	assert.Equal(t, uint64(112), st[0].Scanned)
	assert.Equal(t, uint64(38), st[0].LagBlocks)
	assert.False(t, st[0].UpdatedAt.IsZero())
	assert.Equal(t, store.ChainStatus{Network: paywatch.ERC20}, st[1])

	require.NoError(t, s.ResetChainCursor(ctx, n))
	_, ok, err = s.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.False(t, ok)
}

// The final check reads what the scanner recorded for one address, up to
// the cursor it read together with it.
func TestRecordedTransfersToStopsAtTheCursor(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	n := paywatch.TRC20
	to := tronAddrs[1]

	got, err := s.RecordedTransfersTo(ctx, n, paywatch.USDT, to, 0)
	require.NoError(t, err)
	assert.Equal(t, store.RecordedTransfers{}, got, "never scanned")

	other := transfer("other", 0, 101, "h101", 1)
	other.To = tronAddrs[2]
	usdc := transfer("usdc", 1, 101, "h101", 1)
	usdc.Token = paywatch.USDC
	gone := transfer("gone", 0, 103, "h103", 1)
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 110, BlockHash: "h110", Head: 120, Transfers: []paywatch.Transfer{
		transfer("late", 0, 105, "h105", 7_000_000),
		transfer("early", 0, 90, "h90", 1),
		transfer("first", 2, 100, "h100", 5_000_000),
		transfer("second", 1, 100, "h100", 6_000_000),
		other, usdc, gone,
	}}, nil)
	require.NoError(t, err)
	require.NoError(t, s.MarkTransfersRemoved(ctx, n, []paywatch.TransferKey{gone.Key()}))
	// The scanner went back (a reorg) and re-recorded a transfer above its
	// new cursor: that block is the chain's to read again.
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 104, BlockHash: "h104b", Head: 120}, nil)
	require.NoError(t, err)

	got, err = s.RecordedTransfersTo(ctx, n, paywatch.USDT, to, 95)
	require.NoError(t, err)
	assert.True(t, got.Scanned)
	assert.Equal(t, uint64(104), got.Height)
	var hashes []string
	for _, tr := range got.Transfers {
		hashes = append(hashes, tr.TxHash)
	}
	assert.Equal(t, []string{"second", "first"}, hashes,
		"in chain order; not before the start block, above the cursor, removed, of another token or to another address")
	want := transfer("second", 1, 100, "h100", 6_000_000)
	want.Network = n // a recorded transfer reads back with its network
	assert.Equal(t, want, got.Transfers[0])

	got, err = s.RecordedTransfersTo(ctx, n, paywatch.USDT, to, 105)
	require.NoError(t, err)
	assert.Equal(t, s.Now().UTC(), got.RecordedAt.UTC(), "when the scanner last moved the cursor")
	got.RecordedAt = time.Time{}
	assert.Equal(t, store.RecordedTransfers{Scanned: true, Height: 104}, got, "a start block above the cursor")
	got, err = s.RecordedTransfersTo(ctx, paywatch.ERC20, paywatch.USDT, to, 0)
	require.NoError(t, err)
	assert.False(t, got.Scanned, "another network's cursor")
}

// A scanner whose signal finds no workflow asks whether the payment's
// workflow ended or has not started yet.
func TestPaymentsWithoutWorkflow(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	hd := project(t, s, "hd", store.ProjectSettings{}, hdWallet())
	waiting, _, err := s.CreatePayment(ctx, newPayment(hd, "a", "10"))
	require.NoError(t, err)
	clk.Add(time.Minute)
	started, _, err := s.CreatePayment(ctx, newPayment(hd, "b", "10"))
	require.NoError(t, err)
	require.NoError(t, s.MarkWorkflowStarted(ctx, started.ID))

	got, err := s.PaymentsWithoutWorkflow(ctx, []string{waiting.ID, started.ID, "00000000-0000-0000-0000-000000000000"})
	require.NoError(t, err)
	require.Len(t, got, 1, "a started workflow and an unknown payment are not listed")
	assert.True(t, got[waiting.ID].Equal(waiting.CreatedAt), "with the row's creation time")

	got, err = s.PaymentsWithoutWorkflow(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}
