package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/devnet"
)

// BenchmarkConfirmationLatency measures, on the real `paywatch dev` stack
// (embedded Temporal, PostgreSQL, scanners, webhooks over HTTP), the time
// from the block that gives a transfer its network's last required
// confirmation (on SOLANA: the block whose making finalized the
// transfer's slot, devnet.ConfirmingBlock) to the signed
// payment.completed reaching the merchant's
// receiver, over per_payment payments spread across every network. The
// block's time is when the devnet chain made it available to RPC
// (devnet.MinedAt); the arrival is when the receiver got the request.
//
// The runs:
//   - 1s: every chain makes a block a second (the scanners poll each second);
//   - 1s-jitter50: the same, each interval drawn from 0.5–1.5 s;
//   - mainnet-pace: each chain at its network's mainnet block time, which is
//     also its scanner's poll interval, for the README's table of time to
//     paid beside the physical limit;
//   - 1s-burst: 1 s blocks, and each transfer followed at once by a burst of
//     its network's confirmations (a node catching up, a provider's lag
//     clearing), so the batch that reads the transfer also confirms it.
//
// Each run is one experiment, whatever b.N; it reports p50, p90 and max in
// milliseconds, and logs the figures per network.
func BenchmarkConfirmationLatency(b *testing.B) {
	mainnet := map[paywatch.Network]time.Duration{}
	for _, info := range paywatch.Networks() {
		mainnet[info.Network] = info.BlockTime
	}
	b.Run("1s", func(b *testing.B) { latencyRun(b, latencyCase{interval: time.Second, perNetwork: 8}) })
	b.Run("1s-jitter50", func(b *testing.B) {
		latencyRun(b, latencyCase{interval: time.Second, jitter: 0.5, perNetwork: 8})
	})
	b.Run("mainnet-pace", func(b *testing.B) { latencyRun(b, latencyCase{intervals: mainnet, perNetwork: 6}) })
	b.Run("1s-burst", func(b *testing.B) { latencyRun(b, latencyCase{interval: time.Second, perNetwork: 3, burst: true}) })
}

// latencyCase is one run of BenchmarkConfirmationLatency.
type latencyCase struct {
	interval   time.Duration
	intervals  map[paywatch.Network]time.Duration
	jitter     float64
	perNetwork int
	// burst mines each transfer's confirmations at once after it.
	burst bool
}

// every is network n's block interval in this case.
func (c latencyCase) every(n paywatch.Network) time.Duration {
	if d, ok := c.intervals[n]; ok {
		return d
	}
	return c.interval
}

// arrivals records when each payment's signed payment.completed arrived.
type arrivals struct {
	secret string
	mu     sync.Mutex
	at     map[string]time.Time
	bad    int
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := paywatch.VerifyWebhookRequest(a.secret, r, now)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.bad++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var ev struct {
		Event     string `json:"event"`
		PaymentID string `json:"payment_id"`
	}
	_ = json.Unmarshal(body, &ev)
	if _, seen := a.at[ev.PaymentID]; ev.Event == "payment.completed" && !seen {
		a.at[ev.PaymentID] = now
	}
}

func (a *arrivals) get(id string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[id]
	return t, ok
}

// latencyPayment is one payment of a run and what happened to it.
type latencyPayment struct {
	id      string
	network paywatch.Network
	token   paywatch.Token
	block   uint64        // the transfer's block
	latency time.Duration // confirming block → webhook
	toPaid  time.Duration // the transfer's block → webhook
}

func latencyRun(b *testing.B, c latencyCase) {
	cfg := devConfig(b, b.TempDir())
	cfg.LogLevel = "error"
	cfg.DevnetBlockInterval = c.interval
	cfg.DevnetBlockIntervals = c.intervals
	cfg.DevnetBlockJitter = c.jitter
	m, out := startMain(b, cfg, nil)
	dn := m.chains.Devnet
	api := apiClient{t: b, base: "http://" + m.APIAddr()}
	master := map[string]string{"x-master-key": m.Config.MasterKey}

	sink := &arrivals{at: map[string]time.Time{}}
	receiver := httptest.NewServer(sink)
	b.Cleanup(receiver.Close)
	if code, body := api.do("POST", "/v1/accounts", master, map[string]any{"email": "latency@merchant.test", "plan": "pro"}); code != http.StatusCreated {
		b.Fatalf("create account: %d %v", code, body)
	}
	code, body := api.do("POST", "/v1/projects", master, map[string]any{
		"slug": "latency", "owner_email": "latency@merchant.test", "webhook_url": receiver.URL + "/hooks",
	})
	if code != http.StatusCreated {
		b.Fatalf("create project: %d %v", code, body)
	}
	key := map[string]string{"x-api-key": body["api_key"].(string)}
	sink.mu.Lock()
	sink.secret = body["webhook_secret"].(string)
	sink.mu.Unlock()
	if code, body := api.do("PUT", "/v1/projects/latency/wallet", master, map[string]any{
		"xpubs":     map[string]any{"evm": accountXPub(b, 60), "tron": accountXPub(b, 195)},
		"addresses": map[string]any{"SOLANA": []string{sol.NewWallet().PublicKey().String()}, "TON": []string{newTONWallet(b)}},
	}); code != http.StatusOK {
		b.Fatalf("set wallet: %d %v", code, body)
	}

	// Create every payment first, then pay them one after another, a
	// fraction of a block apart, so the transfers land at every phase of
	// the scanners' polls.
	var ps []*latencyPayment
	var addrs, memos []string
	for i := range c.perNetwork {
		for _, info := range paywatch.Networks() {
			code, body := api.do("POST", "/v1/payments", key, map[string]any{
				"amount": json.Number(fmt.Sprintf("10.%02d", i)), "external_ref": fmt.Sprintf("c-%s-%d", info.Network, i),
				"network": string(info.Network), "token": string(info.Tokens[0]),
			})
			if code != http.StatusCreated {
				b.Fatalf("create payment: %d %v", code, body)
			}
			p := body["payment"].(map[string]any)
			ps = append(ps, &latencyPayment{id: p["id"].(string), network: info.Network, token: info.Tokens[0]})
			addrs = append(addrs, p["address"].(string))
			memo, _ := p["memo"].(string) // SOLANA's payments are memo payments
			memos = append(memos, memo)
		}
	}
	ctx := context.Background()
	var slowest time.Duration
	for i, p := range ps {
		every := c.every(p.network)
		info, _ := paywatch.LookupNetwork(p.network)
		slowest = max(slowest, time.Duration(info.Confirmations)*every)
		res, err := dn.Transfer(ctx, devnet.TransferRequest{Network: p.network, Token: p.token, To: addrs[i],
			Amount: fmt.Sprintf("10.%02d", i/len(paywatch.Networks())), Memo: memos[i]})
		if err != nil {
			b.Fatalf("pay %s: %v", p.id, err)
		}
		p.block = res.BlockNumber
		if c.burst {
			if _, err := dn.Mine(ctx, p.network, info.Confirmations); err != nil {
				b.Fatalf("burst on %s: %v", p.network, err)
			}
		}
		time.Sleep(c.every(paywatch.TRC20) * 37 / 100)
	}

	// Wait for every webhook, then time it against its blocks.
	deadline := time.Now().Add(2*slowest + time.Minute)
	for _, p := range ps {
		var arrived time.Time
		for {
			var ok bool
			if arrived, ok = sink.get(p.id); ok {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s payment %s: no payment.completed (transfer in block %d)\n%s", p.network, p.id, p.block, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		confirming, ok := dn.ConfirmingBlock(p.network, p.block)
		if !ok {
			b.Fatalf("%s: block %d paid but never confirmed", p.network, p.block)
		}
		confirmedAt, ok := dn.MinedAt(p.network, confirming)
		if !ok {
			b.Fatalf("%s: block %d paid but never mined", p.network, confirming)
		}
		minedAt, _ := dn.MinedAt(p.network, p.block)
		if arrived.Before(confirmedAt) {
			b.Fatalf("%s payment %s paid %v before its confirming block %d", p.network, p.id, confirmedAt.Sub(arrived), confirming)
		}
		p.latency, p.toPaid = arrived.Sub(confirmedAt), arrived.Sub(minedAt)
	}
	if sink.bad > 0 {
		b.Fatalf("%d webhooks with a bad signature", sink.bad)
	}

	all := make([]time.Duration, 0, len(ps))
	for _, p := range ps {
		all = append(all, p.latency)
	}
	p50, p90, worst := percentiles(all)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p90), "p90-ms")
	b.ReportMetric(ms(worst), "max-ms")
	// Per network: the latency, and the time from the transfer's block to
	// the webhook beside the time the chain itself took to make the
	// confirming block (the physical limit; other payments' transfers add
	// blocks of their own, so it is measured rather than assumed).
	var lines []string
	for _, info := range paywatch.Networks() {
		var lat, paid, chain []time.Duration
		for _, p := range ps {
			if p.network == info.Network {
				lat, paid, chain = append(lat, p.latency), append(paid, p.toPaid), append(chain, p.toPaid-p.latency)
			}
		}
		l50, l90, lmax := percentiles(lat)
		t50, _, _ := percentiles(paid)
		c50, _, _ := percentiles(chain)
		every := c.every(info.Network)
		lines = append(lines, fmt.Sprintf("%-9s block %-6v × %2d = %6.2f s | chain's own median %6.2f s | paid median %6.2f s | latency p50 %5.0f p90 %5.0f max %5.0f ms",
			info.Network, every, info.Confirmations, (time.Duration(info.Confirmations)*every).Seconds(),
			c50.Seconds(), t50.Seconds(), ms(l50), ms(l90), ms(lmax)))
	}
	b.Logf("%d payments, poll interval = block interval, jitter %.0f%%, bursts %v:\n%s", len(ps), c.jitter*100, c.burst, strings.Join(lines, "\n"))
}

// percentiles returns the p50, p90 and largest of ds.
func percentiles(ds []time.Duration) (p50, p90, worst time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)] }
	return at(0.5), at(0.9), s[len(s)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
