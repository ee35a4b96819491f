package activities_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
	"github.com/paywatch/paywatch/workflows"
)

// BenchmarkScanCatchUp measures the scanner catching up after an outage
// through its batch path (chain reads, the one matching query per batch,
// the recording transaction with the cursor, the signals to a recording
// Signaler) over blocks already on a devnet chain, with every block full of
// transfers. It reports blocks per second and RPC calls per block, with 10
// and with 100,000 watched addresses: the same 10 of the chain's recipients
// are watched in both cases (so the matches are the same), and the 99,990
// others never receive anything. The calls per block must not depend on the
// number of watched addresses.
func BenchmarkScanCatchUp(b *testing.B) {
	for _, tc := range []struct {
		network          paywatch.Network
		blocks, perBlock int
	}{
		{paywatch.POLYGON, 200, 50},
		{paywatch.TRC20, 200, 100},
	} {
		b.Run(fmt.Sprintf("%s/%dx%d", tc.network, tc.blocks, tc.perBlock), func(b *testing.B) {
			ctx := context.Background()
			n := tc.network
			d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
			require.NoError(b, err)
			b.Cleanup(func() { _ = d.Close() })
			recipients := make([]string, 100)
			for i := range recipients {
				recipients[i] = randomAddress(b, n)
			}
			st, _ := d.Network(n)
			from := st.Head + 1
			k := 0
			for range tc.blocks {
				reqs := make([]devnet.TransferRequest, tc.perBlock)
				for j := range reqs {
					reqs[j] = devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: recipients[k%len(recipients)], Amount: "1.5"}
					k++
				}
				_, err := d.TransferBatch(ctx, reqs)
				require.NoError(b, err)
			}
			to := from + uint64(tc.blocks) - 1
			set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{st.RPCURL}, Contracts: st.Tokens})
			require.NoError(b, err)
			b.Cleanup(set.Close)
			client, _ := set.Client(n)

			for _, watched := range []int{10, 100_000} {
				b.Run(fmt.Sprintf("watched=%d", watched), func(b *testing.B) {
					db := newScanDB(b)
					for _, r := range recipients[:10] {
						db.watch(b, n, paywatch.USDT, r, 0)
					}
					if extra := watched - 10; extra > 0 {
						addr := `'0x' || lpad(to_hex(i), 40, '0')`
						if n == paywatch.TRC20 {
							addr = `'T' || substr(md5(i::text), 1, 33)`
						}
						_, err := db.pool.Exec(ctx, `
							INSERT INTO payments (id, project_id, address_mode, network, token, address, amount, decimals, external_ref, expires_at, start_block)
							SELECT gen_random_uuid(), $1, 'per_payment', $2, 'USDT', `+addr+`, 10000000, 6, 'bulk', now() + interval '1 hour', 0
							FROM generate_series(1, $3) AS i`, db.projectID, string(n), extra)
						require.NoError(b, err)
						_, err = db.pool.Exec(ctx, `ANALYZE payments`)
						require.NoError(b, err)
					}
					sig := &signalLog{}
					s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig})
					calls := chains.Calls(client)
					var elapsed time.Duration
					var runs int
					var last activities.ScanStats
					for b.Loop() {
						b.StopTimer()
						_, err := db.pool.Exec(ctx, `TRUNCATE chain_transfers; DELETE FROM chain_cursors`)
						require.NoError(b, err)
						b.StartTimer()
						began := time.Now()
						last, err = s.ScanRange(ctx, n, from, to)
						elapsed += time.Since(began)
						require.NoError(b, err)
						runs++
					}
					require.Equal(b, tc.blocks*tc.perBlock, last.Transfers)
					require.Equal(b, tc.blocks*tc.perBlock/10, last.Matched, "the 10 watched recipients get a tenth of the transfers")
					blocks := float64(runs * tc.blocks)
					b.ReportMetric(blocks/elapsed.Seconds(), "blocks/s")
					b.ReportMetric(float64(chains.Calls(client)-calls)/blocks, "calls/block")
					b.ReportMetric(float64(last.Matched), "matched/op")
				})
			}
		})
	}
}

// BenchmarkScanFollow measures the scanner at the head, where it spends its
// life: each iteration mines one block and runs one poll of the scan
// (Scanner.Run's step, with its head, hash, transfer and reorg reads), and
// it reports the RPC calls (HTTP requests; a JSON-RPC batch is one) per
// block. "transfers" blocks hold 5 token transfers each, "empty" blocks
// none, and "saturated" blocks none behind a proxy that sets every bit of
// their logsBloom, as on busy chains: the worst case of bloom false
// positives.
func BenchmarkScanFollow(b *testing.B) {
	for _, tc := range []struct {
		name      string
		perBlock  int
		saturated bool
	}{
		{"transfers", 5, false},
		{"empty", 0, false},
		{"saturated", 0, true},
	} {
		b.Run("POLYGON/"+tc.name, func(b *testing.B) {
			ctx := context.Background()
			n := paywatch.POLYGON
			d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
			require.NoError(b, err)
			b.Cleanup(func() { _ = d.Close() })
			st, _ := d.Network(n)
			url := st.RPCURL
			if tc.saturated {
				p := faultproxy.Start(faultproxy.Config{Upstream: url, SaturateBlooms: true})
				b.Cleanup(p.Close)
				url = p.URL
			}
			set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{url}, Contracts: st.Tokens})
			require.NoError(b, err)
			b.Cleanup(set.Close)
			client, _ := set.Client(n)
			db := newScanDB(b)
			recipients := make([]string, 10)
			for i := range recipients {
				recipients[i] = randomAddress(b, n)
				db.watch(b, n, paywatch.USDT, recipients[i], 0)
			}
			s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: &signalLog{}})
			_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 10 * time.Millisecond}, nil)
			require.NoError(b, err)

			var calls uint64
			blocks := 0
			for b.Loop() {
				b.StopTimer()
				if tc.perBlock > 0 {
					reqs := make([]devnet.TransferRequest, tc.perBlock)
					for j := range reqs {
						reqs[j] = devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: recipients[(blocks+j)%len(recipients)], Amount: "1"}
					}
					_, err = d.TransferBatch(ctx, reqs)
				} else {
					_, err = d.Mine(ctx, n, 1)
				}
				require.NoError(b, err)
				before := chains.Calls(client)
				b.StartTimer()
				// One poll: the run ends at its deadline right after it.
				p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: time.Millisecond}, nil)
				b.StopTimer()
				require.NoError(b, err)
				calls += chains.Calls(client) - before
				blocks++
				head, _ := d.Network(n)
				require.Equal(b, head.Head, p.Height, "the poll read the new block")
				b.StartTimer()
			}
			b.ReportMetric(float64(calls)/float64(blocks), "calls/block")
		})
	}
}
