package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/migrations"
	"github.com/paywatch/paywatch/store"
)

// A transfer's timeline (issue 27, item 3): recorded, told, then two marks
// by different people. Both marks are kept, oldest first; the list's
// columns show the latest. Another project sees none of it.
func TestTransferTimelineKeepsEveryMark(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "shop", mode(paywatch.ModePerPayment), hdWallet())}
	paid, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	counted := tronTransfer(hashOf('1'), paid.Address, "10", 10)
	f.record(10, paid.ID, counted)
	_, err = s.SavePaymentState(ctx, paidState(paid, 1, counted.TxHash, "10"))
	require.NoError(t, err)
	seen := clk.Now()
	again := tronTransfer(hashOf('2'), paid.Address, "10", 11)
	f.record(40, "", again)
	id := store.TransferID{Network: paywatch.TRC20, TxHash: again.TxHash}

	tl, _, err := s.TransferTimeline(ctx, f.prj.ID, id, store.DefaultTimelineLimit, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TransferEvent{{At: seen, Event: store.TransferEventSeen}}, tl, "not told yet")

	clk.Add(time.Minute)
	told := clk.Now()
	require.Contains(t, tell(t, s), again.TxHash)
	clk.Add(time.Hour)
	first := clk.Now()
	_, err = s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, again.TxHash, nil, "api", "credited to order 7")
	require.NoError(t, err)
	clk.Add(time.Hour)
	second := clk.Now()
	marked, err := s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, again.TxHash, nil, "owner@shop.test", "refunded instead")
	require.NoError(t, err)

	latest := &store.TransferMark{At: second, By: "owner@shop.test", Note: "refunded instead"}
	assert.Equal(t, latest, marked.Handled, "the current mark is the latest")
	assert.Equal(t, latest, f.state(again.TxHash).Handled)
	list, _, err := s.ProjectTransfers(ctx, f.prj.ID, store.TransferFilter{Addresses: []string{paid.Address}})
	require.NoError(t, err)
	for _, tr := range list {
		if tr.TxHash == again.TxHash {
			assert.Equal(t, latest, tr.Handled, "the list shows the latest")
		}
	}

	tl, _, err = s.TransferTimeline(ctx, f.prj.ID, id, store.DefaultTimelineLimit, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TransferEvent{
		{At: seen, Event: store.TransferEventSeen},
		{At: told, Event: store.TransferEventTold, EventID: uuidOf(again.TxHash)},
		{At: first, Event: store.TransferEventHandled, By: "api", Note: "credited to order 7"},
		{At: second, Event: store.TransferEventHandled, By: "owner@shop.test", Note: "refunded instead"},
	}, tl)

	countedID := store.TransferID{Network: paywatch.TRC20, TxHash: counted.TxHash}
	marks, err := s.TransferMarks(ctx, f.prj.ID, []store.TransferID{id, countedID})
	require.NoError(t, err)
	assert.Equal(t, map[store.TransferID][]store.TransferMark{id: {
		{At: first, By: "api", Note: "credited to order 7"},
		{At: second, By: "owner@shop.test", Note: "refunded instead"},
	}}, marks, "a transfer never marked has no marks")

	// Issue 38: the same mark again (a retried request, a double click)
	// adds nothing; a page of the timeline says how many steps there are.
	clk.Add(time.Minute)
	again2, err := s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, again.TxHash, nil, "owner@shop.test", "refunded instead")
	require.NoError(t, err)
	assert.Equal(t, latest, again2.Handled, "the mark is unchanged, its time too")
	page, total, err := s.TransferTimeline(ctx, f.prj.ID, id, 2, 1)
	require.NoError(t, err)
	assert.Equal(t, 4, total, "no fifth step")
	assert.Equal(t, []store.TransferEvent{
		{At: told, Event: store.TransferEventTold, EventID: uuidOf(again.TxHash)},
		{At: first, Event: store.TransferEventHandled, By: "api", Note: "credited to order 7"},
	}, page)
	page, total, err = s.TransferTimeline(ctx, f.prj.ID, id, 2, 10)
	require.NoError(t, err)
	assert.Empty(t, page)
	assert.Equal(t, 4, total, "past the end, still the count")

	other := project(t, s, "other", mode(paywatch.ModeDedicated), staticWallet("TRC20", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"))
	_, _, err = s.TransferTimeline(ctx, other.ID, id, store.DefaultTimelineLimit, 0)
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	marks, err = s.TransferMarks(ctx, other.ID, []store.TransferID{id})
	require.NoError(t, err)
	assert.Empty(t, marks)
}

// A transaction whose first transfer paid a payment and whose later one
// went to the same address unmatched: marked without a log index, the
// unmatched one is marked, where the first (matched) one used to be
// picked and the mark refused (issue 27). The transfer read without a log
// index is still the transaction's first.
func TestMarkWithoutLogIndexTakesTheUnmatchedTransfer(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20}))
	ctx := context.Background()
	f := &unmatchedFixture{t: t, s: s, clk: clk, prj: project(t, s, "shop", mode(paywatch.ModePerPayment), hdWallet())}
	paid, _, err := s.CreatePayment(ctx, newPayment(f.prj, "alice", "10"))
	require.NoError(t, err)
	pays := tronTransfer(hashOf('c'), paid.Address, "10", 10)
	more := tronTransfer(hashOf('c'), paid.Address, "5", 10)
	more.LogIndex = 1
	_, err = s.RecordScan(ctx, store.ScanBatch{Network: paywatch.TRC20, Height: 10, BlockHash: "h10", Head: 10,
		Transfers: []paywatch.Transfer{pays, more}, Claims: []store.TransferClaim{{Transfer: pays, PaymentID: paid.ID}}}, nil)
	require.NoError(t, err)
	_, err = s.SavePaymentState(ctx, paidState(paid, 1, pays.TxHash, "10"))
	require.NoError(t, err)
	f.record(40, "")
	assert.Equal(t, store.TransferMatched, f.state(pays.TxHash).State)
	one := uint32(1)
	got, err := s.ProjectTransfer(ctx, f.prj.ID, paywatch.TRC20, more.TxHash, &one)
	require.NoError(t, err)
	require.Equal(t, store.TransferUnmatched, got.State)

	marked, err := s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, pays.TxHash, nil, "api", "refunded the 5")
	require.NoError(t, err, "an unmatched transfer of the transaction exists")
	assert.Equal(t, uint32(1), marked.LogIndex)
	require.NotNil(t, marked.Handled)
	assert.Equal(t, "refunded the 5", marked.Handled.Note)
	assert.Equal(t, uint32(0), f.state(pays.TxHash).LogIndex, "read without a log index: still the first")
	assert.Nil(t, f.state(pays.TxHash).Handled)

	zero := uint32(0)
	_, err = s.MarkTransferHandled(ctx, f.prj.ID, paywatch.TRC20, pays.TxHash, &zero, "api", "")
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTransferNotUnmatched)
}

// Migration 00034 gives each transfer marked before it its current mark as
// the first of its timeline, and its Down drops the marks.
func TestTransferMarksBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPoolAt(t, 33)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	marked, plain := hashOf('a'), hashOf('b')
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (id, slug, name) VALUES (1, 'old', 'Old')`, nil},
		{`INSERT INTO chain_transfers (network, tx_hash, log_index, block_number, block_hash, token, from_address, to_address, amount,
		                               created_at, project_id, handled_at, handled_by, handled_note)
		  VALUES ('TRC20', $1, 0, 10, 'b1', 'USDT', $3, $4, 10000000, $5, 1, $6, 'owner@old.test', 'refunded'),
		         ('TRC20', $2, 0, 11, 'b2', 'USDT', $3, $4, 10000000, $5, 1, NULL, NULL, NULL)`,
			[]any{marked, plain, tronAddrs[0], tronAddrs[1], at, at.Add(time.Hour)}},
	} {
		_, err := pool.Exec(ctx, q.sql, q.args...)
		require.NoError(t, err, q.sql)
	}
	_, err := store.Migrate(ctx, pool)
	require.NoError(t, err)
	s := store.New(pool)

	tl, _, err := s.TransferTimeline(ctx, 1, store.TransferID{Network: paywatch.TRC20, TxHash: marked}, store.DefaultTimelineLimit, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TransferEvent{
		{At: at, Event: store.TransferEventSeen},
		{At: at.Add(time.Hour), Event: store.TransferEventHandled, By: "owner@old.test", Note: "refunded"},
	}, tl)
	tl, _, err = s.TransferTimeline(ctx, 1, store.TransferID{Network: paywatch.TRC20, TxHash: plain}, store.DefaultTimelineLimit, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TransferEvent{{At: at, Event: store.TransferEventSeen}}, tl)

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithLogger(goose.NopLogger()))
	require.NoError(t, err)
	_, err = p.DownTo(ctx, 33)
	require.NoError(t, err)
	var table *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('chain_transfer_marks')::text`).Scan(&table))
	assert.Nil(t, table)
}
