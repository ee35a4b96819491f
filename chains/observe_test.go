package chains_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
)

// outcomes counts what a client tells Config.Observe.
type outcomes struct {
	mu sync.Mutex
	n  map[chains.RPCOutcome]int
}

func (o *outcomes) observe(r chains.RPCOutcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[chains.RPCOutcome]int{}
	}
	o.n[r]++
}

func (o *outcomes) counts() map[chains.RPCOutcome]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[chains.RPCOutcome]int{}
	for k, v := range o.n {
		out[k] = v
	}
	return out
}

// Every request to an endpoint is reported with its outcome, the failed
// ones a failover skips included, on both client families.
func TestRequestOutcomesAreObserved(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.ERC20}})
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	defer limited.Close()

	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.ERC20} {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			st := mustNetwork(t, d, n)
			dead := deadAddr(t)
			urls := []string{dead, st.RPCURL}
			if n != paywatch.TRC20 {
				urls = []string{"http://" + dead, limited.URL, st.RPCURL}
			}
			var got outcomes
			c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: urls, Contracts: st.Tokens, Observe: got.observe})
			require.NoError(t, err)
			defer c.Close()

			_, err = c.Head(ctx)
			require.NoError(t, err)
			want := map[chains.RPCOutcome]int{chains.RPCError: 1, chains.RPCOK: 1}
			if n != paywatch.TRC20 {
				want[chains.RPCRateLimited] = 1
			}
			assert.Equal(t, want, got.counts())

			// An answer about the request is the endpoint working: the
			// remembered endpoint answers "not found" at once.
			_, found, err := c.TransactionTransfers(ctx, missingHash(n))
			require.NoError(t, err)
			assert.False(t, found)
			want[chains.RPCOK]++
			assert.Equal(t, want, got.counts())
		})
	}
}
