package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/devnet/faultproxy"
	"github.com/paywatch/paywatch/chains/tron"
)

// tronKey is the TRON-PRO-API-KEY the check tests' devnet requires.
const tronKey = "0b5e3f6a-9c1d-4e2f-8a7b-c6d5e4f3a2b1"

// checkDevnet starts all five devnet chains, the TRC20 one behind a key,
// with 30 blocks on BEP20 so that a small log range limit shows.
func checkDevnet(t *testing.T, logRangeLimit uint64) *devnet.Devnet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Config{
		RequireHeaders: http.Header{"Tron-Pro-Api-Key": {tronKey}},
		LogRangeLimit:  logRangeLimit,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	_, err = d.Mine(ctx, paywatch.BEP20, 30)
	require.NoError(t, err)
	return d
}

// check runs `paywatch check` with env and returns its exit code and output.
func check(t *testing.T, env map[string]string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"check"}, envOf(env), &out, &errOut)
	t.Logf("paywatch check (exit %d):\n%s%s", code, out.String(), errOut.String())
	return code, out.String() + errOut.String()
}

// An operator with every endpoint right gets a table and exit 0; the
// TronGrid-style key goes in a header and never shows.
func TestCheckAllGood(t *testing.T) {
	d := checkDevnet(t, 0)
	env := map[string]string{}
	for _, st := range d.Networks() {
		env["PAYWATCH_"+string(st.Network)+"_RPC_URL"] = st.RPCURL
	}
	trc, _ := d.Network(paywatch.TRC20)
	env["PAYWATCH_TRC20_RPC_URL"] = trc.HTTPURL + ",grpc://" + trc.RPCURL
	env["PAYWATCH_TRC20_RPC_HEADERS"] = "TRON-PRO-API-KEY=" + tronKey
	for _, st := range d.Networks() {
		for tok, addr := range st.Tokens {
			env["PAYWATCH_"+string(st.Network)+"_"+string(tok)+"_CONTRACT"] = addr
		}
	}
	code, out := check(t, env)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "All 9 endpoint(s) are fit to watch.")
	assert.Regexp(t, `note: SOLANA http://127\.0\.0\.1:\d+: getSignaturesForAddress history: reaches back to genesis`, out,
		"how far back a Solana endpoint's history reaches")
	assert.Contains(t, out, "the paywatch devnet")
	assert.Contains(t, out, "chain id 56 (BNB Smart Chain mainnet)")
	assert.Contains(t, out, "USDT ok (18)", "BEP20's USDT has 18 decimals")
	assert.Contains(t, out, "USDT ok (6)")
	assert.Contains(t, out, "chain id 8453 (Base mainnet)")
	assert.Contains(t, out, "DAI ok (18)")
	assert.Contains(t, out, "PYUSD ok (6)")
	assert.Contains(t, out, "logs by block hash (EIP-234): ok")
	assert.NotContains(t, out, tronKey)
	assert.NotContains(t, out, "problem:")
}

// Each check has a case that fails it, and the exit code says so.
func TestCheckFindsEachProblem(t *testing.T) {
	d := checkDevnet(t, 10)
	st := func(n paywatch.Network) devnet.NetworkStatus { s, _ := d.Network(n); return s }
	contracts := func(env map[string]string, n paywatch.Network) {
		for tok, addr := range st(n).Tokens {
			env["PAYWATCH_"+string(n)+"_"+string(tok)+"_CONTRACT"] = addr
		}
	}
	nile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/wallet/getblockbynum" && strings.Contains(string(body), `"num":0`) {
			_, _ = io.WriteString(w, `{"blockID":"`+tron.NileGenesisID+`","block_header":{"raw_data":{"txTrieRoot":"00","parentHash":"00"}}}`)
			return
		}
		_, _ = io.WriteString(w, `{"blockID":"0000000003e8c3a1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","block_header":{"raw_data":{"number":65586081,"timestamp":`+
			itoa(uint64(time.Now().UnixMilli()))+`}}}`)
	}))
	defer nile.Close()
	noByHash := faultproxy.Start(faultproxy.Config{Upstream: st(paywatch.ARBITRUM).RPCURL, RefuseByHash: true})
	defer noByHash.Close()
	noBatch := faultproxy.Start(faultproxy.Config{Upstream: st(paywatch.POLYGON).RPCURL, RefuseBatches: true})
	defer noBatch.Close()
	limited := faultproxy.Start(faultproxy.Config{Upstream: st(paywatch.POLYGON).RPCURL, RateLimitEvery: 2})
	defer limited.Close()
	// The ERC20 devnet's tokens have 6 decimals; behind a proxy that says
	// chain 56 it passes for BSC, whose tokens have 18.
	sixDecimals := faultproxy.Start(faultproxy.Config{Upstream: st(paywatch.ERC20).RPCURL, ChainID: 56})
	defer sixDecimals.Close()
	stale := faultproxy.Start(faultproxy.Config{Upstream: st(paywatch.ERC20).RPCURL, HeadAge: time.Hour})
	defer stale.Close()

	for name, tc := range map[string]struct {
		env  map[string]string
		want []string
		code int
	}{
		"unreachable": {
			env:  map[string]string{"PAYWATCH_ERC20_RPC_URL": "http://" + freeAddr(t) + "/v3/infura-project-key"},
			want: []string{"problem: ERC20 http://127.0.0.1:", "/…: unreachable"}, code: 1,
		},
		"another network's chain": {
			env:  map[string]string{"PAYWATCH_ERC20_RPC_URL": st(paywatch.BEP20).RPCURL},
			want: []string{"serves chain id 56 (BNB Smart Chain mainnet), not chain id 1"}, code: 1,
		},
		"a TRON testnet": {
			env:  map[string]string{"PAYWATCH_TRC20_RPC_URL": nile.URL},
			want: []string{"serves Nile testnet, not TRON mainnet"}, code: 1,
		},
		"a wrong key": {
			env:  map[string]string{"PAYWATCH_TRC20_RPC_URL": st(paywatch.TRC20).HTTPURL, "PAYWATCH_TRC20_RPC_HEADERS": "TRON-PRO-API-KEY=not-" + tronKey},
			want: []string{"problem: TRC20", "unreachable", "HTTP 401"}, code: 1,
		},
		"no token contract": {
			env:  map[string]string{"PAYWATCH_POLYGON_RPC_URL": st(paywatch.POLYGON).RPCURL},
			want: []string{"USDT missing", "no token contract at that address"}, code: 1,
		},
		"no logs by hash": {
			env:  map[string]string{"PAYWATCH_ARBITRUM_RPC_URL": noByHash.URL},
			want: []string{"logs by block hash (EIP-234): refused", "eth_getLogs by blockHash refused"}, code: 1,
		},
		"tokens with other decimals": {
			env: map[string]string{"PAYWATCH_BEP20_RPC_URL": sixDecimals.URL,
				"PAYWATCH_BEP20_USDT_CONTRACT": st(paywatch.ERC20).Tokens[paywatch.USDT], "PAYWATCH_BEP20_USDC_CONTRACT": st(paywatch.ERC20).Tokens[paywatch.USDC]},
			want: []string{"USDT 6 decimals (want 18)", "has 6 decimals, paywatch expects 18"}, code: 1,
		},
		"a node that stopped syncing": {
			env:  map[string]string{"PAYWATCH_ERC20_RPC_URL": stale.URL},
			want: []string{"old: the node is not synced"}, code: 1,
		},
		"rate limits": {
			env:  map[string]string{"PAYWATCH_POLYGON_RPC_URL": limited.URL},
			want: []string{"rate-limit answers during the check"}, code: 1,
		},
		"no batches, a short log range": {
			env:  map[string]string{"PAYWATCH_POLYGON_RPC_URL": noBatch.URL, "PAYWATCH_BEP20_RPC_URL": st(paywatch.BEP20).RPCURL},
			want: []string{"note: POLYGON", "JSON-RPC batches: refused", "note: BEP20", "eth_getLogs range: refused", "All 2 endpoint(s) are fit to watch."}, code: 0,
		},
	} {
		t.Run(name, func(t *testing.T) {
			for _, n := range []paywatch.Network{paywatch.POLYGON, paywatch.ARBITRUM, paywatch.BEP20, paywatch.ERC20} {
				if tc.env["PAYWATCH_"+string(n)+"_RPC_URL"] != "" && name != "no token contract" && name != "tokens with other decimals" {
					contracts(tc.env, n)
				}
			}
			if name == "no token contract" {
				tc.env["PAYWATCH_POLYGON_USDT_CONTRACT"] = "0x00000000000000000000000000000000000000aa"
				tc.env["PAYWATCH_POLYGON_USDC_CONTRACT"] = st(paywatch.POLYGON).Tokens[paywatch.USDC]
			}
			if name == "a TRON testnet" || name == "a wrong key" {
				tc.env["PAYWATCH_TRC20_USDT_CONTRACT"] = st(paywatch.TRC20).Tokens[paywatch.USDT]
			}
			code, out := check(t, tc.env)
			assert.Equal(t, tc.code, code)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.NotContains(t, out, "infura-project-key")
			assert.NotContains(t, out, tronKey)
		})
	}
	code, out := check(t, map[string]string{})
	assert.Equal(t, 2, code)
	assert.Contains(t, out, "no PAYWATCH_<NETWORK>_RPC_URL is set")
	code, out = check(t, map[string]string{"PAYWATCH_TRC20_RPC_URL": st(paywatch.TRC20).HTTPURL, "PAYWATCH_TRC20_RPC_HEADERS": "no equals sign " + tronKey})
	assert.Equal(t, 2, code)
	assert.Contains(t, out, "PAYWATCH_TRC20_RPC_HEADERS: entry 1 is not Name=value")
	assert.NotContains(t, out, tronKey)
}

// serve and worker refuse to start when an endpoint serves another chain
// than its network's, and start when one is only down.
func TestStartRefusesTheWrongChain(t *testing.T) {
	d := checkDevnet(t, 0)
	bsc, _ := d.Network(paywatch.BEP20)
	rt, err := startChains(context.Background(), Config{RPCURLs: map[paywatch.Network][]string{
		paywatch.BEP20: {bsc.RPCURL},
	}}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Network]map[paywatch.Token]string{paywatch.BEP20: contractsOf(paywatch.BEP20, nil)}, rt.WalletTokens,
		"the endpoint says it serves chain id 56: wallet links on BEP20")
	rt.Close()

	_, err = startChains(context.Background(), Config{RPCURLs: map[paywatch.Network][]string{
		paywatch.ERC20: {bsc.RPCURL},
	}}, nil, nil)
	require.ErrorIs(t, err, chains.ErrWrongChain)
	assert.Contains(t, err.Error(), "serves chain id 56")
	assert.Contains(t, err.Error(), "paywatch check")
	rt, err = startChains(context.Background(), Config{AllowOtherChains: true, RPCURLs: map[paywatch.Network][]string{
		paywatch.ERC20: {bsc.RPCURL},
	}}, nil, nil)
	require.NoError(t, err, "PAYWATCH_ALLOW_OTHER_CHAINS: a warning, not a refusal")
	assert.NotContains(t, rt.WalletTokens, paywatch.ERC20, "its chain id is not known: no wallet link")
	rt.Close()

	trc, _ := d.Network(paywatch.TRC20)
	rt, err = startChains(context.Background(), Config{
		RPCURLs:    map[paywatch.Network][]string{paywatch.TRC20: {trc.HTTPURL}, paywatch.POLYGON: {"http://" + freeAddr(t)}},
		RPCHeaders: map[paywatch.Network][]http.Header{paywatch.TRC20: {{"TRON-PRO-API-KEY": {tronKey}}}},
	}, nil, nil)
	require.NoError(t, err, "the devnet's TRON chain is accepted, and a down endpoint only warns")
	assert.NotContains(t, rt.WalletTokens, paywatch.POLYGON, "its chain id is not known: no wallet link")
	rt.Close()
}
