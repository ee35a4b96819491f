package chains_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
)

// BenchmarkCatchUp measures a scan over blocks already on chain, as after an
// outage: blocks per second and RPC calls per block, over loopback to the
// devnet nodes, with transfers in every block. The calls per block depend
// only on the range and the batch size, never on how many addresses the
// caller watches: the client returns every transfer and matching is the
// caller's business.
func BenchmarkCatchUp(b *testing.B) {
	for _, tc := range []struct {
		network          paywatch.Network
		blocks, perBlock int
		batch            uint64
	}{
		{paywatch.POLYGON, 200, 20, 1000},
		{paywatch.TRC20, 200, 100, 100},
	} {
		b.Run(fmt.Sprintf("%s/%dx%d", tc.network, tc.blocks, tc.perBlock), func(b *testing.B) {
			d := startDevnet(b, devnet.Config{Networks: []paywatch.Network{tc.network}})
			ctx := ctxT(b)
			recipients := make([]string, 50)
			for i := range recipients {
				recipients[i] = newAddress(b, tc.network)
			}
			st, _ := d.Network(tc.network)
			from := st.Head + 1
			k := 0
			for range tc.blocks {
				reqs := make([]devnet.TransferRequest, tc.perBlock)
				for j := range reqs {
					reqs[j] = devnet.TransferRequest{Network: tc.network, Token: paywatch.USDT, To: recipients[k%len(recipients)], Amount: "1.5"}
					k++
				}
				_, err := d.TransferBatch(ctx, reqs)
				require.NoError(b, err)
			}
			to := from + uint64(tc.blocks) - 1
			c := dial(b, d, tc.network, tc.batch)

			calls := chains.Calls(c)
			start := time.Now()
			b.ResetTimer()
			n := 0
			for b.Loop() {
				ts, err := c.Transfers(ctx, from, to)
				require.NoError(b, err)
				require.Len(b, ts, tc.blocks*tc.perBlock)
				n++
			}
			elapsed := time.Since(start)
			b.ReportMetric(float64(n*tc.blocks)/elapsed.Seconds(), "blocks/s")
			b.ReportMetric(float64(chains.Calls(c)-calls)/float64(n*tc.blocks), "calls/block")
		})
	}
}
