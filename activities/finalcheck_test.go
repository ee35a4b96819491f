package activities_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// budgetProxy forwards JSON-RPC requests to a node until its budget is
// spent, then answers 503: a provider or a worker that dies mid-way
// through a long read.
type budgetProxy struct {
	URL    string
	budget atomic.Int64
	served atomic.Int64
}

func startBudgetProxy(t *testing.T, upstream string) *budgetProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &budgetProxy{}
	p.budget.Store(1 << 40)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.budget.Add(-1) < 0 {
			http.Error(w, "provider gone", http.StatusServiceUnavailable)
			return
		}
		p.served.Add(1)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// finalCheckAttempts is the final check's attempts per try of the payment
// workflow (workflows' chainOptions: MaximumAttempts 4).
const finalCheckAttempts = 4

// A day on ARBITRUM is 345,600 blocks; the final check reads its window
// from the chain (one eth_getLogs per MaxBlockRange blocks). Here each
// attempt of the activity can make only a few calls before it dies, as an
// attempt of one minute against a provider answering in 200 ms can read
// about 300 of the 346 ranges of such a day (here: five of seven). An attempt that starts over
// never finishes; the final check resumes each attempt from the last one's
// heartbeat, and finds the transfers at both ends of the window.
func TestFinalCheckFitsAWindowLongerThanOneAttempt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n := paywatch.ARBITRUM
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	defer d.Close()
	st, _ := d.Network(n)
	proxy := startBudgetProxy(t, st.RPCURL)
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{proxy.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)

	addr := randomAddress(t, n)
	start := st.Head + 1
	first, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "3"})
	require.NoError(t, err)
	for range 3 {
		_, err = d.Mine(ctx, n, 2000)
		require.NoError(t, err)
	}
	last, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "4"})
	require.NoError(t, err)
	head, err := d.Mine(ctx, n, 2)
	require.NoError(t, err)
	window := head - start + 1 // about 6,000 blocks: 7 eth_getLogs of 1,000 blocks

	acts := activities.New(activities.Deps{Store: db.store, Chains: set})
	in := workflows.FinalCheckInput{Network: n, Token: paywatch.USDT, Address: addr, StartBlock: start}
	var (
		res      workflows.FinalCheckResult
		answered bool
		details  json.RawMessage
		attempts int
	)
	for attempts < finalCheckAttempts && !answered {
		attempts++
		env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
		env.RegisterActivity(acts.FinalCheck)
		if details != nil {
			env.SetHeartbeatDetails(details) // what Temporal hands a retry
		}
		env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
			var raw json.RawMessage
			if d.HasValues() && d.Get(&raw) == nil {
				details = raw
			}
		})
		proxy.budget.Store(6) // a head and five ranges
		v, err := env.ExecuteActivity(acts.FinalCheck, in)
		if err != nil {
			t.Logf("attempt %d: %v", attempts, err)
			continue
		}
		require.NoError(t, v.Get(&res))
		answered = true
	}
	require.True(t, answered, "the final check of a %d-block window never answered in %d attempts", window, attempts)
	var got []string
	for _, tr := range res.Transfers {
		got = append(got, tr.TxHash)
	}
	assert.Equal(t, []string{first.TxHash, last.TxHash}, got, "the transfers at both ends of the window")
	assert.Equal(t, head, res.Head)
	assert.Equal(t, 2, attempts, "the second attempt resumed where the first one's heartbeat left off")
}

// A payment whose start block is unknown (0: its address was assigned
// while the chain's head could not be read and no scanner had run) is
// checked from about its assignment, never from genesis: a transfer to the
// same address long before the payment existed does not count for it.
func TestFinalCheckWithoutAStartBlockReadsFromTheAssignment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n := paywatch.ARBITRUM
	d, set := devnetChain(ctx, t, n)
	c, err := set.Client(n)
	require.NoError(t, err)
	db := newScanDB(t)

	addr := randomAddress(t, n) // a static address: it was paid before
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	for range 3 {
		_, err = d.Mine(ctx, n, 2000)
		require.NoError(t, err)
	}
	id := db.watch(t, n, paywatch.USDT, addr, 0)
	_, err = db.pool.Exec(ctx, `UPDATE payments SET start_block = NULL, address_assigned_at = now() WHERE id = $1`, id)
	require.NoError(t, err)
	paid, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "10"})
	require.NoError(t, err)
	_, err = d.Mine(ctx, n, 2)
	require.NoError(t, err)

	acts := activities.New(activities.Deps{Store: db.store, Chains: set})
	before := chains.Calls(c)
	res, err := acts.FinalCheck(ctx, workflows.FinalCheckInput{PaymentID: id, Network: n, Token: paywatch.USDT, Address: addr})
	require.NoError(t, err)
	require.Len(t, res.Transfers, 1, "only the transfer made after the address was assigned")
	assert.Equal(t, paid.TxHash, res.Transfers[0].TxHash)
	assert.Less(t, chains.Calls(c)-before, uint64(7), "not the 7 eth_getLogs from genesis")
}

// TestFinalCheckTimeOfALongWindow measures the final check of a window of
// PAYWATCH_MEASURE_FINALCHECK_BLOCKS blocks (a day on ARBITRUM is 345,600)
// on the devnet, with a transfer at each end. It runs only when that
// variable is set: mining the blocks takes about 2 ms each.
func TestFinalCheckTimeOfALongWindow(t *testing.T) {
	blocks, _ := strconv.Atoi(os.Getenv("PAYWATCH_MEASURE_FINALCHECK_BLOCKS"))
	if blocks <= 0 {
		t.Skip("set PAYWATCH_MEASURE_FINALCHECK_BLOCKS to measure")
	}
	ctx := context.Background()
	n := paywatch.ARBITRUM
	d, set := devnetChain(ctx, t, n)
	st, _ := d.Network(n)
	c, err := set.Client(n)
	require.NoError(t, err)
	addr := randomAddress(t, n)
	start := st.Head + 1
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "3"})
	require.NoError(t, err)
	for left := blocks; left > 0; left -= devnet.MaxMine {
		_, err = d.Mine(ctx, n, min(left, devnet.MaxMine))
		require.NoError(t, err)
	}
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "4"})
	require.NoError(t, err)
	acts := activities.New(activities.Deps{Store: newScanDB(t).store, Chains: set})
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(acts.FinalCheck)
	beats := 0
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats++ })
	before := chains.Calls(c)
	began := time.Now()
	v, err := env.ExecuteActivity(acts.FinalCheck, workflows.FinalCheckInput{Network: n, Token: paywatch.USDT, Address: addr, StartBlock: start})
	took := time.Since(began)
	require.NoError(t, err)
	var res workflows.FinalCheckResult
	require.NoError(t, v.Get(&res))
	require.Len(t, res.Transfers, 2)
	t.Logf("final check of %d blocks: %v, %d RPC calls, %d heartbeats", res.Head-start+1, took, chains.Calls(c)-before, beats)
}

// Issue 37, item 1: the check at a late window's end (Until) lists the
// transfers mined before that end, by their blocks' timestamps, however
// late it runs, and none mined after it; while the chain's newest block is
// older than the end, it fails, to be tried again, rather than read a
// window that is not over. On EVM (anvil) and on TRC20, whose window the
// check reads after the scanner's cursor.
func TestFinalCheckUntilTheLateWindowsEnd(t *testing.T) {
	for _, n := range []paywatch.Network{paywatch.ARBITRUM, paywatch.TRC20} {
		t.Run(string(n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			d, set := devnetChain(ctx, t, n)
			c, err := set.Client(n)
			require.NoError(t, err)
			st, _ := d.Network(n)
			db := newScanDB(t)
			addr := randomAddress(t, n)
			start := st.Head + 1
			id := db.watch(t, n, paywatch.USDT, addr, start)

			before, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "50"})
			require.NoError(t, err)
			mined, err := c.(chains.BlockTimer).BlockTime(ctx, before.BlockNumber)
			require.NoError(t, err)
			end := mined.Add(time.Second) // the window ends a second after the paying block
			time.Sleep(1100 * time.Millisecond)
			after, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "50"})
			require.NoError(t, err)
			_, err = d.Mine(ctx, n, 2)
			require.NoError(t, err)

			acts := activities.New(activities.Deps{Store: db.store, Chains: set})
			in := workflows.FinalCheckInput{PaymentID: id, Network: n, Token: paywatch.USDT, Address: addr, StartBlock: start, Until: end}
			res, err := acts.FinalCheck(ctx, in)
			require.NoError(t, err)
			require.Len(t, res.Transfers, 1, "the transfer before the end, not the one after it")
			assert.Equal(t, before.TxHash, res.Transfers[0].TxHash)
			assert.Less(t, end, mustBlockTime(ctx, t, c, after.BlockNumber).Add(time.Nanosecond), "the later transfer is past the end")

			// The scanner's records cover the window: its blocks are not
			// read from the chain again, only a few block times.
			_, err = db.pool.Exec(ctx, `INSERT INTO chain_cursors (network, height, block_hash, head, updated_at) VALUES ($1, $2, 'h', $2, now())`,
				string(n), int64(mustHead(t, d, n)))
			require.NoError(t, err)
			calls := chains.Calls(c)
			res, err = acts.FinalCheck(ctx, in)
			require.NoError(t, err)
			require.Len(t, res.Transfers, 1, "the transfer the first check found and recorded")
			assert.Equal(t, before.TxHash, res.Transfers[0].TxHash)
			assert.LessOrEqual(t, chains.Calls(c)-calls, uint64(12), "a head and a search of block times, no window read")

			if n.Family() == paywatch.FamilyTron {
				// A scanner at work, behind the window's last block: the
				// check waits for it rather than read the blocks itself;
				// a scanner that stopped (its cursor 20 minutes old) is
				// not waited for.
				_, err = db.pool.Exec(ctx, `UPDATE chain_cursors SET height = $2 WHERE network = $1`, string(n), int64(start-1))
				require.NoError(t, err)
				_, err = acts.FinalCheck(ctx, in)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "the scanner has read up to block")
				// The workflow that has waited long enough reads the chain.
				noWait := in
				noWait.NoWait = true
				res, err = acts.FinalCheck(ctx, noWait)
				require.NoError(t, err)
				require.Len(t, res.Transfers, 1)
				_, err = db.pool.Exec(ctx, `UPDATE chain_cursors SET updated_at = now() - interval '20 minutes' WHERE network = $1`, string(n))
				require.NoError(t, err)
				res, err = acts.FinalCheck(ctx, in)
				require.NoError(t, err)
				require.Len(t, res.Transfers, 1, "read from the chain after the stopped scanner's cursor")
				assert.Equal(t, before.TxHash, res.Transfers[0].TxHash)
			}

			in.Until = time.Now().Add(time.Hour)
			_, err = acts.FinalCheck(ctx, in)
			require.Error(t, err, "the chain has no block past an end an hour away")
			assert.Contains(t, err.Error(), "the window is not over on chain yet")
		})
	}
}

func mustBlockTime(ctx context.Context, t *testing.T, c chains.Client, n uint64) time.Time {
	t.Helper()
	bt, err := c.(chains.BlockTimer).BlockTime(ctx, n)
	require.NoError(t, err)
	return bt
}
