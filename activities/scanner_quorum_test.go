package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
	"github.com/paywatch/paywatch/workflows"
)

// A scanner over a quorum of 2 endpoints, one of which lies about the
// amounts of Transfer logs: while it lies, the scanner records and
// signals nothing and its cursor stays before the block; once both
// endpoints agree, the transfer counts, with the true amount.
func TestScannerWithAQuorumIgnoresALyingEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := paywatch.POLYGON
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{n}})
	require.NoError(t, err)
	defer d.Close()
	st, _ := d.Network(n)
	honest := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL})
	defer honest.Close()
	liar := faultproxy.Start(faultproxy.Config{Upstream: st.RPCURL, Rewrite: func(method string, _ []json.RawMessage, result json.RawMessage) json.RawMessage {
		if method != "eth_getLogs" {
			return nil
		}
		var logs []map[string]any
		if json.Unmarshal(result, &logs) != nil || len(logs) == 0 {
			return nil
		}
		for _, l := range logs {
			l["data"] = fmt.Sprintf("0x%064x", 700_000_000) // 700 USDT instead of 7
		}
		b, _ := json.Marshal(logs)
		return b
	}})
	defer liar.Close()
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{honest.URL, liar.URL}, Contracts: st.Tokens, Quorum: 2})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)
	addr := randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, addr, st.Head)
	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{
		Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 20 * time.Millisecond},
	})
	_, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 200 * time.Millisecond}, nil)
	require.NoError(t, err)

	sent, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: addr, Amount: "7"})
	require.NoError(t, err)
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 1500 * time.Millisecond}, nil)
	require.NoError(t, err)
	require.Positive(t, liar.Rewritten(), "the liar answered")
	assert.Less(t, p.Height, sent.BlockNumber, "the endpoints disagree on the block: the scan waits")
	cur, _, err := db.store.ChainCursor(ctx, n)
	require.NoError(t, err)
	assert.Less(t, cur.Height, sent.BlockNumber)
	assert.Empty(t, sig.signals(), "nothing signalled")

	liar.SetRewrite(nil)
	p, err = s.Run(ctx, workflows.ScanInput{Network: n, RunFor: 1500 * time.Millisecond}, nil)
	require.NoError(t, err)
	assert.Equal(t, sent.BlockNumber, p.Height)
	got := sig.signals()
	require.Len(t, got, 1)
	assert.Equal(t, workflows.PaymentWorkflowID(id), got[0].WorkflowID)
	seen := got[0].Arg.(paywatch.Transaction)
	assert.Equal(t, sent.TxHash, seen.TxHash)
	assert.Equal(t, "7.00", seen.Amount.String())
}
