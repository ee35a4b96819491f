package activities_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// slowSignals is a signalLog whose signals take a while, as over a
// network: a scan then spends long enough inside its batches for a second
// scanner of the network to start while the first is mid-way.
type slowSignals struct {
	*signalLog
	delay time.Duration
}

func (s slowSignals) SignalWorkflow(ctx context.Context, id, runID, name string, arg any) error {
	time.Sleep(s.delay)
	return s.signalLog.SignalWorkflow(ctx, id, runID, name, arg)
}

// In a cluster a retried scan activity can start while the attempt it
// replaces still runs (its worker is cut off, not dead). The older scan's
// writes are refused from the moment the newer one starts: every transfer
// is signalled once, and the cursor never moves backwards.
func TestTwoScannersOfOneNetworkFenceTheOlder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := paywatch.ARBITRUM
	d, set := devnetChain(ctx, t, n)
	st, _ := d.Network(n)
	db := newScanDB(t)

	// Every cursor write, as the database saw it.
	_, err := db.pool.Exec(ctx, `
		CREATE TABLE cursor_writes (seq BIGSERIAL PRIMARY KEY, old_height BIGINT, new_height BIGINT NOT NULL);
		CREATE FUNCTION log_cursor_write() RETURNS trigger AS $$
		BEGIN
			INSERT INTO cursor_writes (old_height, new_height)
			VALUES (CASE WHEN TG_OP = 'UPDATE' THEN OLD.height END, NEW.height);
			RETURN NEW;
		END $$ LANGUAGE plpgsql;
		CREATE TRIGGER chain_cursors_log AFTER INSERT OR UPDATE ON chain_cursors
			FOR EACH ROW EXECUTE FUNCTION log_cursor_write();`)
	require.NoError(t, err)

	start := st.Head + 1
	addr := randomAddress(t, n)
	db.watch(t, n, paywatch.USDT, addr, start)
	const transfers = 16
	for i := range transfers {
		_, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: fmt.Sprint(i + 1)})
		require.NoError(t, err)
		_, err = d.Mine(ctx, n, 3)
		require.NoError(t, err)
	}

	sig := &signalLog{}
	newScanner := func() *activities.Scanner {
		return activities.NewScanner(activities.ScannerDeps{
			Store: db.store, Chains: set, Signaler: slowSignals{sig, 30 * time.Millisecond},
			PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond},
			BatchBlocks:  map[paywatch.Network]uint64{n: 4}, // one transfer per batch
		})
	}
	run := func(s *activities.Scanner) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 4 * time.Second}, nil)
			done <- err
		}()
		return done
	}
	older := run(newScanner())
	// The newer attempt starts once the older one has recorded a batch.
	require.Eventually(t, func() bool {
		cur, ok, err := db.store.ChainCursor(ctx, n)
		return err == nil && ok && cur.Height >= start+4
	}, time.Minute, 5*time.Millisecond)
	newer := run(newScanner())

	var wg sync.WaitGroup
	var olderErr, newerErr error
	wg.Add(2)
	go func() { defer wg.Done(); olderErr = <-older }()
	go func() { defer wg.Done(); newerErr = <-newer }()
	wg.Wait()
	require.NoError(t, newerErr)
	assertOlderScanFenced(t, olderErr)

	head, _ := d.Network(n)
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Equal(t, head.Head, cur.Height, "the newer scan reached the head")

	seen := map[string]int{}
	for _, g := range sig.signals() {
		if g.Name == workflows.SignalTransferSeen {
			seen[g.Arg.(paywatch.Transaction).TxHash]++
		}
	}
	assert.Len(t, seen, transfers)
	for h, c := range seen {
		assert.Equal(t, 1, c, "transfer %s signalled %d times", h, c)
	}
	var recorded int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(*) FROM chain_transfers WHERE network = $1`, string(n)).Scan(&recorded))
	assert.Equal(t, transfers, recorded)

	rows, err := db.pool.Query(ctx, `SELECT seq, old_height, new_height FROM cursor_writes WHERE new_height < old_height ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var seq, old, neu int64
		require.NoError(t, rows.Scan(&seq, &old, &neu))
		t.Errorf("cursor write %d moved the cursor backwards from %d to %d", seq, old, neu)
	}
	require.NoError(t, rows.Err())
}

// assertOlderScanFenced checks that the older scan stopped when its write
// was refused.
func assertOlderScanFenced(t *testing.T, err error) {
	t.Helper()
	assert.ErrorIs(t, err, store.ErrScanLeaseLost, "the older scan stops once fenced")
}
