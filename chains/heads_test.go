package chains_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
)

// A head read that failed is kept like a head, so creations during an RPC
// outage do not each wait for the timeout; a read the caller abandoned
// says nothing of the chain and is not kept.
func TestHeadsCacheFailuresButNotCancellations(t *testing.T) {
	n := paywatch.POLYGON
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	st, _ := d.Network(n)
	upstream, err := url.Parse(st.RPCURL)
	require.NoError(t, err)
	var down atomic.Bool
	rp := httputil.NewSingleHostReverseProxy(upstream)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{srv.URL}, Contracts: st.Tokens})
	require.NoError(t, err)
	t.Cleanup(set.Close)
	hour := func(paywatch.Network) time.Duration { return time.Hour }

	down.Store(true)
	h := chains.NewHeads(set, hour)
	_, err = h.Head(ctx, n)
	require.Error(t, err)
	down.Store(false)
	_, err = h.Head(ctx, n)
	assert.Error(t, err, "the failure is kept for the interval")

	h = chains.NewHeads(set, hour)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = h.Head(cancelled, n)
	require.Error(t, err)
	head, err := h.Head(ctx, n)
	require.NoError(t, err, "an abandoned read is not kept")
	assert.Equal(t, st.Head, head)
}
