package activities_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// BenchmarkRPCCost runs the devnet chains of every network at their real
// block times (network.go), with background token transfers, and a scanner
// per network through a counting proxy (JSON-RPC for EVM, the FullNode
// HTTP API for TRC20, TON Center's API v3 for TON), first with nothing open, then with 1,000 expired
// payments in their late windows, then with one open payment per network,
// then with 1,000 more, some of which get paid. It prints, per network and
// scenario, the requests and bytes received per block and per day (the
// day at this block time), and the latency the scanner adds at a paid
// transfer's confirming block: from the moment the devnet made that block
// to the scanner's TransferConfirmed signal (the recording Signaler plays
// the payment workflow's part: it records the transfer as awaited, as the
// workflow's state save does). PAYWATCH_RPC_BENCH_WINDOW sets each
// scenario's length (default 3m). `make bench-rpc` runs it.
//
// On SOLANA the merchant has one registered wallet from the start (the
// scanner reads its token accounts, nothing else), the payments are memo
// payments on that one wallet, each paid with its reference, and the
// latency is measured from the moment the transfer's slot was finalized
// (a transfer counts then), not from a block at a depth. TON is read
// the same way, per owner, its memo payments paid with their comments.
func BenchmarkRPCCost(b *testing.B) {
	window := 3 * time.Minute
	if v := os.Getenv("PAYWATCH_RPC_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(b, err)
		window = d
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The devnet makes no blocks of its own: the bench makes every block
	// (blockMaker), one per slot of the network's block time.
	d, err := devnet.Start(ctx, devnet.Config{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = d.Close() })
	db := newScanDB(b)

	nets := paywatch.Networks()
	proxies := map[paywatch.Network]*countingProxy{}
	var cfgs []chains.Config
	for _, info := range nets {
		st, _ := d.Network(info.Network)
		up, base := st.RPCURL, ""
		switch info.Family {
		case paywatch.FamilyTron:
			up = st.HTTPURL
		case paywatch.FamilyTON:
			// A REST API under a base path the client adds its paths
			// to: the proxy passes paths through.
			u, err := url.Parse(up)
			require.NoError(b, err)
			base, u.Path = u.Path, ""
			up = u.String()
		}
		p := newCountingProxy(b, up)
		proxies[info.Network] = p
		cfgs = append(cfgs, chains.Config{Network: info.Network, URLs: []string{p.URL + base}, Contracts: st.Tokens})
	}
	set, err := chains.DialSet(ctx, cfgs...)
	require.NoError(b, err)
	b.Cleanup(set.Close)

	// When each block was first there, for the latency at the confirming block.
	seen := newBlockTimes()
	for _, info := range nets {
		go seen.follow(ctx, d, info.Network)
	}
	maker := &blockMaker{tb: b, d: d, pay: map[paywatch.Network][]payee{}, next: map[paywatch.Network]int{}}
	for _, info := range nets {
		go maker.run(ctx, info)
	}

	// SOLANA and TON: the merchant's wallet; SOLANA: when each slot was
	// finalized.
	memoWallets := map[paywatch.Network]string{}
	final := newBlockTimes()
	for _, info := range nets {
		if paywatch.NewMemo(info.Network) != "" {
			memoWallets[info.Network] = db.ownWallet(b, info.Network)
		}
		st, _ := d.Network(info.Network)
		direct, err := chains.Dial(ctx, chains.Config{Network: info.Network, URLs: []string{st.RPCURL}, Contracts: st.Tokens})
		require.NoError(b, err)
		b.Cleanup(direct.Close)
		if fr, ok := direct.(chains.FinalityReader); ok {
			go final.followFinality(ctx, info.Network, fr)
		}
	}
	sig := &awaitingSignaler{db: db, seen: seen, final: final}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig})
	run := func(scenario string, pay func(ctx context.Context)) {
		before := map[paywatch.Network][2]int64{}
		heads := map[paywatch.Network]uint64{}
		for _, info := range nets {
			before[info.Network] = proxies[info.Network].counts()
			st, _ := d.Network(info.Network)
			heads[info.Network] = st.Head
		}
		sig.reset()
		rctx, rcancel := context.WithTimeout(ctx, window)
		var wg sync.WaitGroup
		for _, info := range nets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = s.Run(rctx, workflows.ScanInput{Network: info.Network}, nil)
			}()
		}
		if pay != nil {
			go pay(rctx)
		}
		began := time.Now()
		wg.Wait()
		rcancel()
		elapsed := time.Since(began)
		fmt.Printf("\nBenchmarkRPCCost %s (%s at each network's block time; requests are HTTP requests, a JSON-RPC batch is one):\n", scenario, elapsed.Round(time.Second))
		fmt.Printf("| network | block time | blocks | requests/block | requests/day | MB received/day | latency at the confirming block p50 / max (n) |\n|---|---|---|---|---|---|---|\n")
		for _, info := range nets {
			n := info.Network
			now := proxies[n].counts()
			reqs, bytes := now[0]-before[n][0], now[1]-before[n][1]
			st, _ := d.Network(n)
			blocks := max(st.Head-heads[n], 1)
			day := float64(24*time.Hour) / float64(elapsed)
			lat := sig.latencies(n)
			latency := "-"
			if len(lat) > 0 {
				latency = fmt.Sprintf("%s / %s (%d)", lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), len(lat))
			}
			fmt.Printf("| %s | %s | %d | %.2f | %.0f | %.1f | %s |\n", n, info.BlockTime, blocks,
				float64(reqs)/float64(blocks), float64(reqs)*day, float64(bytes)*day/1e6, latency)
		}
	}
	for b.Loop() {
		run("nothing open", nil)
		// 1,000 abandoned checkouts per network: expired an hour ago,
		// inside their 24-hour late windows (issue 37: they no longer keep
		// their network at block pace; before, this cost as much as the
		// open payments below).
		var expired []string
		for _, info := range nets {
			st, _ := d.Network(info.Network)
			for range 1000 {
				if w, ok := memoWallets[info.Network]; ok {
					expired = append(expired, db.watchMemo(b, info.Network, info.Tokens[0], w, paywatch.NewMemo(info.Network), st.Head))
					continue
				}
				expired = append(expired, db.watch(b, info.Network, info.Tokens[0], randomAddress(b, info.Network), st.Head))
			}
		}
		_, err := db.pool.Exec(ctx, `UPDATE payments SET status = 'expired', expires_at = now() - interval '1 hour', late_by_chain = true
			WHERE id = ANY($1::uuid[])`, expired)
		require.NoError(b, err)
		run("1,000 expired payments per network, in their late windows", nil)
		// One open payment per network: block pace, the cost 1,000 open
		// ones are compared with (on SOLANA they must cost the same: the
		// scanner reads the wallet's accounts whatever it holds open).
		for _, info := range nets {
			st, _ := d.Network(info.Network)
			if w, ok := memoWallets[info.Network]; ok {
				db.watchMemo(b, info.Network, info.Tokens[0], w, paywatch.NewMemo(info.Network), st.Head)
				continue
			}
			db.watch(b, info.Network, info.Tokens[0], randomAddress(b, info.Network), st.Head)
		}
		run("1 open payment per network", nil)
		// 1,000 open payments per network; one of them gets paid every
		// 20 blocks.
		addrs := map[paywatch.Network][]payee{}
		for _, info := range nets {
			st, _ := d.Network(info.Network)
			for range 1000 {
				if w, ok := memoWallets[info.Network]; ok {
					memo := paywatch.NewMemo(info.Network)
					db.watchMemo(b, info.Network, info.Tokens[0], w, memo, st.Head)
					addrs[info.Network] = append(addrs[info.Network], payee{w, memo})
					continue
				}
				a := randomAddress(b, info.Network)
				db.watch(b, info.Network, info.Tokens[0], a, st.Head)
				addrs[info.Network] = append(addrs[info.Network], payee{to: a})
			}
		}
		run("1,000 open payments per network", func(ctx context.Context) {
			maker.payEvery20Blocks(addrs)
			<-ctx.Done()
			maker.payEvery20Blocks(nil)
		})
	}
}

// blockMaker makes every block of the bench's chains itself, one per slot
// of the network's block time, as a mainnet chain does: slots follow a
// fixed grid (as Ethereum's 12 s slots, TRON's 3 s ones and the
// sequencers' ticks do), and each block comes within ±10% of a block of
// its slot's start, as propagation varies; the time mining takes
// stretches nothing. The transfers due go into the slot's block, and a
// slot with none gets an empty block. Every 5th block holds 3 transfers to strangers; while
// payments are paid, every 20th block, starting with the first, holds one
// to the next open payment's address. (The devnet's own Transfer mines a
// block at once, off the schedule: 20-40% more blocks than the block time
// gives, at random moments, which no mainnet makes.)
type blockMaker struct {
	tb   testing.TB
	d    *devnet.Devnet
	mu   sync.Mutex
	pay  map[paywatch.Network][]payee // the payments to pay, in order
	next map[paywatch.Network]int     // blocks made since paying started
}

// payee is where a payment is paid: its address, and its memo if it is a
// memo payment.
type payee struct{ to, memo string }

// payEvery20Blocks starts paying addrs' addresses, one every 20 blocks, or
// stops with nil.
func (m *blockMaker) payEvery20Blocks(addrs map[paywatch.Network][]payee) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pay = map[paywatch.Network][]payee{}
	for n, a := range addrs {
		m.pay[n] = slices.Clone(a)
	}
	m.next = map[paywatch.Network]int{}
}

// due returns the payment a block of network n holds, if any.
func (m *blockMaker) due(n paywatch.Network) (payee, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pay[n]) == 0 {
		return payee{}, false
	}
	k := m.next[n]
	m.next[n]++
	if k%20 != 0 {
		return payee{}, false
	}
	a := m.pay[n][0]
	m.pay[n] = m.pay[n][1:]
	return a, true
}

func (m *blockMaker) run(ctx context.Context, info paywatch.NetworkInfo) {
	start := time.Now()
	for k := 1; ; k++ {
		// Slot k's block, within ±10% of a block of its slot's start.
		next := start.Add(time.Duration(float64(info.BlockTime) * (float64(k) - 0.1 + 0.2*rand.Float64())))
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var reqs []devnet.TransferRequest
		if k%5 == 0 {
			for range 3 {
				reqs = append(reqs, devnet.TransferRequest{Network: info.Network, Token: info.Tokens[0], To: randomAddress(m.tb, info.Network), Amount: "2"})
			}
		}
		if p, ok := m.due(info.Network); ok {
			reqs = append(reqs, devnet.TransferRequest{Network: info.Network, Token: info.Tokens[0], To: p.to, Amount: "10", Memo: p.memo})
		}
		if len(reqs) == 0 {
			_, _ = m.d.Mine(ctx, info.Network, 1)
		} else {
			_, _ = m.d.TransferBatch(ctx, reqs)
		}
	}
}

// countingProxy forwards to a node and counts the requests and the bytes
// of the answers.
type countingProxy struct {
	URL             string
	requests, bytes atomic.Int64
}

func newCountingProxy(b testing.TB, upstream string) *countingProxy {
	u, err := url.Parse(upstream)
	require.NoError(b, err)
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		r.Body = &countingBody{r.Body, &p.bytes}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if u.Path != "" && u.Path != "/" && !strings.HasPrefix(r.URL.Path, u.Path) {
			r.URL.Path = u.Path
		}
		rp.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *countingProxy) counts() [2]int64 { return [2]int64{p.requests.Load(), p.bytes.Load()} }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// blockTimes records when each block of each network was first there.
type blockTimes struct {
	mu sync.Mutex
	at map[paywatch.Network]map[uint64]time.Time
}

func newBlockTimes() *blockTimes {
	return &blockTimes{at: map[paywatch.Network]map[uint64]time.Time{}}
}

func (t *blockTimes) follow(ctx context.Context, d *devnet.Devnet, n paywatch.Network) {
	var last uint64
	for ctx.Err() == nil {
		st, ok := d.Network(n)
		if ok && st.Head > last {
			now := time.Now()
			t.mu.Lock()
			if t.at[n] == nil {
				t.at[n] = map[uint64]time.Time{}
			}
			for h := last + 1; h <= st.Head; h++ {
				t.at[n][h] = now
			}
			t.mu.Unlock()
			last = st.Head
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// followFinality records when each slot of n was first finalized, as
// its direct client (no counting proxy) reads it.
func (t *blockTimes) followFinality(ctx context.Context, n paywatch.Network, fr chains.FinalityReader) {
	var last uint64
	for ctx.Err() == nil {
		fin, err := fr.Finalized(ctx)
		if err == nil && fin > last {
			now := time.Now()
			t.mu.Lock()
			if t.at[n] == nil {
				t.at[n] = map[uint64]time.Time{}
			}
			for h := last + 1; h <= fin; h++ {
				t.at[n][h] = now
			}
			t.mu.Unlock()
			last = fin
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (t *blockTimes) when(n paywatch.Network, h uint64) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.at[n][h]
	return at, ok
}

// awaitingSignaler records signals as the payment workflows would act on
// them: a seen transfer becomes an awaited confirmation (the workflow's
// state save), and a confirmation is timed against its confirming block.
type awaitingSignaler struct {
	db   *scanDB
	seen *blockTimes
	// final has when each slot was finalized, on networks that name
	// their final block (SOLANA): the latency runs from there.
	final *blockTimes
	mu    sync.Mutex
	lat   map[paywatch.Network][]time.Duration
}

func (a *awaitingSignaler) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lat = map[paywatch.Network][]time.Duration{}
}

func (a *awaitingSignaler) SignalWorkflow(ctx context.Context, workflowID, _, name string, arg any) error {
	now := time.Now()
	id := strings.TrimPrefix(workflowID, "payment/")
	var n string
	if err := a.db.pool.QueryRow(context.WithoutCancel(ctx), `SELECT network FROM payments WHERE id = $1`, id).Scan(&n); err != nil {
		return err
	}
	switch name {
	case workflows.SignalTransferSeen:
		tx := arg.(paywatch.Transaction)
		_, err := a.db.pool.Exec(context.WithoutCancel(ctx), `
			INSERT INTO awaited_confirmations (payment_id, network, tx_hash, log_index, block_number, block_hash)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
			id, n, tx.TxHash, int64(tx.LogIndex), int64(tx.BlockNumber), tx.BlockHash)
		return err
	case workflows.SignalTransfersConfirmed:
		network := paywatch.Network(n)
		info, _ := paywatch.LookupNetwork(network)
		for _, c := range arg.(workflows.TransfersConfirmed).Transfers {
			at, ok := a.seen.when(network, c.BlockNumber+uint64(info.Confirmations)-1)
			if ft, final := a.final.when(network, c.BlockNumber); final {
				at, ok = ft, true
			}
			if !ok || !c.Canonical {
				continue
			}
			a.mu.Lock()
			a.lat[network] = append(a.lat[network], now.Sub(at))
			a.mu.Unlock()
		}
	}
	return nil
}

func (a *awaitingSignaler) latencies(n paywatch.Network) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Clone(a.lat[n])
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
