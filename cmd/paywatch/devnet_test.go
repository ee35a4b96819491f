package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

// devnetCLI runs `paywatch devnet ...` against baseURL.
func devnetCLI(baseURL string) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		env := map[string]string{"PAYWATCH_BASE_URL": baseURL}
		code := run(context.Background(), append([]string{"devnet"}, args...), func(k string) string { return env[k] }, &out, &errOut)
		return code, out.String(), errOut.String()
	}
}

func TestDevnetCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.ARBITRUM, paywatch.BASE}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	cli := devnetCLI(srv.URL)

	code, out, errOut := cli("status")
	require.Equal(t, 0, code, errOut)
	var status struct {
		Networks []struct {
			Network string            `json:"network"`
			Head    uint64            `json:"head"`
			RPCURL  string            `json:"rpc_url"`
			Tokens  map[string]string `json:"tokens"`
		} `json:"networks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &status))
	require.Len(t, status.Networks, 3)
	assert.Equal(t, "TRC20", status.Networks[0].Network)
	assert.Equal(t, devnet.TronUSDTContract, status.Networks[0].Tokens["USDT"])

	// A transfer, read back through the chain client the scanners use.
	to := "0x00000000000000000000000000000000000000aa"
	code, out, errOut = cli("send", "--network", "arbitrum", "--token", "usdc", "--to", to, "--amount", "10.5")
	require.Equal(t, 0, code, errOut)
	var sent struct {
		TxHash      string `json:"tx_hash"`
		BlockNumber uint64 `json:"block_number"`
		Network     string `json:"network"`
		Token       string `json:"token"`
		From        string `json:"from"`
		To          string `json:"to"`
		Amount      string `json:"amount"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sent))
	assert.Equal(t, "ARBITRUM", sent.Network)
	assert.Equal(t, "USDC", sent.Token)
	assert.Equal(t, "10.50", sent.Amount)
	assert.Equal(t, devnet.Accounts()[0].EVM, sent.From, "the faucet by default")
	assert.True(t, strings.HasPrefix(out, "{\n  \""), "indented JSON")
	st, _ := d.Network(paywatch.ARBITRUM)
	c, err := chains.Dial(ctx, chains.Config{Network: paywatch.ARBITRUM, URLs: []string{st.RPCURL}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer c.Close()
	ts, err := c.Transfers(ctx, sent.BlockNumber, sent.BlockNumber)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, sent.TxHash, ts[0].TxHash)
	assert.Equal(t, "10500000", ts[0].Amount.String())
	assert.Equal(t, paywatch.USDC, ts[0].Token)

	from := devnet.Accounts()[1].Tron
	code, out, errOut = cli("send", "--network", "TRC20", "--to", devnet.Accounts()[2].Tron, "--amount", "1", "--from", from)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"from": "`+from+`"`)
	assert.Contains(t, out, `"token": "USDT"`, "USDT by default")

	code, out, errOut = cli("blocks", "--network", "ARBITRUM", "--count", "5")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `{"network": "ARBITRUM", "head": `+itoa(sent.BlockNumber+5)+`}`, out)

	code, out, errOut = cli("reorg", "--network", "ARBITRUM", "--depth", "6")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, sent.TxHash, "the transfer was in the replaced blocks")

	// --reinclude: the dropped transfer is mined again, with its hash, in
	// the block after the new branch's tip.
	code, out, errOut = cli("send", "--network", "ARBITRUM", "--to", to, "--amount", "2")
	require.Equal(t, 0, code, errOut)
	var again struct {
		TxHash      string `json:"tx_hash"`
		BlockNumber uint64 `json:"block_number"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &again))
	code, out, errOut = cli("reorg", "--network", "ARBITRUM", "--depth", "1", "--reinclude")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `{"network": "ARBITRUM", "head": `+itoa(again.BlockNumber+2)+`, "dropped": ["`+again.TxHash+`"]}`, out)
	ts, found, err := c.TransactionTransfers(ctx, again.TxHash)
	require.NoError(t, err)
	require.True(t, found, "mined again")
	assert.Equal(t, again.BlockNumber+2, ts[0].BlockNumber)

	// Every pair of BASE; without --token, a network's first token (USDC
	// there, where USDT is not served); DAI to its 18th decimal.
	code, out, errOut = cli("send", "--network", "BASE", "--to", to, "--amount", "3")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &sent))
	assert.Equal(t, "BASE", sent.Network)
	assert.Equal(t, "USDC", sent.Token)
	code, out, errOut = cli("send", "--network", "BASE", "--token", "DAI", "--to", to, "--amount", "0.000000000000000001")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &sent))
	assert.Equal(t, "DAI", sent.Token)
	assert.Equal(t, "0.000000000000000001", sent.Amount)
	code, _, errOut = cli("send", "--network", "BASE", "--token", "USDT", "--to", to, "--amount", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "USDT is not supported on BASE")

	// Refusals of the devnet: exit 1 with its message.
	code, _, errOut = cli("send", "--network", "ERC20", "--to", to, "--amount", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no devnet chain for network ERC20 (HTTP 404)")
	code, _, errOut = cli("send", "--network", "ARBITRUM", "--to", to, "--amount", "1", "--from", to)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "is not a devnet account")
	code, _, errOut = cli("send", "--network", "TRC20", "--token", "USDC", "--to", from, "--amount", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "USDC is not supported on TRC20")

	// Usage errors: exit 2.
	for _, args := range [][]string{
		{"send", "--network", "ARBITRUM", "--amount", "1"},
		{"send", "--network", "ARBITRUM", "--to", to},
		{"blocks", "--count", "2"},
		{"blocks", "--network", "ARBITRUM", "--count", "x"},
		{"reorg", "--network", "ARBITRUM"},
		{"status", "extra"},
		{"explode"},
	} {
		code, _, errOut = cli(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "Usage: paywatch devnet", args)
	}
	code, out, _ = cli("help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "paywatch devnet <command>")
	code, _, _ = cli()
	assert.Equal(t, 2, code)

	// No service: exit 1 with a hint.
	code, _, errOut = devnetCLI("http://" + freeAddr(t))("status")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "is \"paywatch dev\" running")
	// A service without devnet chains answers 404.
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	code, _, errOut = devnetCLI(plain.URL)("status")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no devnet chains run")
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestStartChainsRunsDevnetForNetworksWithoutRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{
		Devnet:              true,
		DevnetBlockInterval: 500 * time.Millisecond,
		RPCURLs:             map[paywatch.Network][]string{paywatch.ERC20: {"http://" + freeAddr(t)}},
		Contracts:           map[paywatch.Network]map[paywatch.Token]string{paywatch.TRC20: {paywatch.USDT: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"}},
	}
	rt, err := startChains(ctx, cfg, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.Close()) })

	all := []paywatch.Network{paywatch.TRC20, paywatch.BEP20, paywatch.ERC20, paywatch.POLYGON, paywatch.ARBITRUM, paywatch.BASE, paywatch.SOLANA, paywatch.TON}
	assert.Equal(t, all, rt.Networks, "offered: an RPC URL or a devnet chain")
	assert.Equal(t, []paywatch.Network{paywatch.TRC20, paywatch.BEP20, paywatch.POLYGON, paywatch.ARBITRUM, paywatch.BASE, paywatch.SOLANA, paywatch.TON}, rt.DevnetNetworks)
	for _, n := range all {
		_, err := rt.Set.Client(n)
		require.NoError(t, err, n)
	}
	assert.NotContains(t, rt.PollIntervals, paywatch.ERC20)
	assert.Equal(t, 500*time.Millisecond, rt.PollIntervals[paywatch.TRC20], "devnet chains are polled at their block interval")

	// The start-up block names each devnet chain with its RPC URL and
	// tokens, and gives every contract: on the chain's line, or once below
	// the chains for a token at one address on several of them. The
	// devnet's own contracts win over overrides.
	assert.Contains(t, rt.StartupLines[0], "a block every 500ms")
	assert.Contains(t, rt.StartupLines[0], "paywatch devnet send")
	block := strings.Join(rt.StartupLines, "\n")
	for i, n := range rt.DevnetNetworks {
		st, ok := rt.Devnet.Network(n)
		require.True(t, ok)
		line := rt.StartupLines[i+1]
		assert.True(t, strings.HasPrefix(strings.TrimSpace(line), string(n)+" "), line)
		assert.Contains(t, line, st.RPCURL)
		for tok, c := range st.Tokens {
			assert.Contains(t, line, string(tok), line)
			assert.Contains(t, block, string(tok)+" "+c)
		}
	}
	assert.Contains(t, rt.StartupLines[1], "USDT "+devnet.TronUSDTContract, "Tron's USDT is at an address of its own")
	// Without ERC20, only ARBITRUM carries PYUSD: its contract is on its line.
	assert.Contains(t, rt.StartupLines[4], "PYUSD 0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9")
	assert.Equal(t, []string{
		"  Token contracts of the chains above that name a token alone:",
		"    USDT 0x5FbDB2315678afecb367f032d93F642f64180aa3",
		"    USDC 0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
		"    DAI 0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0",
	}, rt.StartupLines[len(rt.DevnetNetworks)+1:])

	// The hosted page offers no wallet link on a devnet chain (its
	// contracts under a mainnet chain id), nor on a network whose endpoint
	// did not answer the chain id check at start; Tron has none at all.
	assert.Empty(t, rt.WalletTokens)

	// The devnet chains make blocks and serve the /devnet endpoints.
	tron, err := rt.Set.Client(paywatch.TRC20)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		h, err := tron.Head(ctx)
		return err == nil && h >= 1
	}, 10*time.Second, 50*time.Millisecond)
	rec := httptest.NewRecorder()
	rt.DevnetHandler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/devnet", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), `"network":"ARBITRUM"`)

	// A devnet run clears the devnet networks' chain state, not the
	// others'.
	st := store.New(storetest.NewPool(t))
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.ERC20} {
		_, err := st.RecordScan(ctx, store.ScanBatch{Network: n, Height: 5000, Head: 5000}, nil)
		require.NoError(t, err)
	}
	require.NoError(t, rt.StartDevnetRuns(ctx, st, nil))
	_, ok, err := st.ChainCursor(ctx, paywatch.TRC20)
	require.NoError(t, err)
	assert.False(t, ok)
	_, ok, err = st.ChainCursor(ctx, paywatch.ERC20)
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestStartChainsWithoutDevnet(t *testing.T) {
	rt, err := startChains(context.Background(), Config{Devnet: false, RPCURLs: map[paywatch.Network][]string{
		paywatch.POLYGON: {"http://" + freeAddr(t), "http://" + freeAddr(t)},
	}}, nil, nil)
	require.NoError(t, err)
	defer rt.Close()
	assert.Equal(t, []paywatch.Network{paywatch.POLYGON}, rt.Networks, "no RPC URL and no devnet: not offered")
	assert.Empty(t, rt.WalletTokens, "no endpoint said which chain it serves: no wallet link")
	assert.Nil(t, rt.DevnetHandler)
	assert.Nil(t, rt.Devnet)
	assert.Empty(t, rt.StartupLines)
	_, err = rt.Set.Client(paywatch.TRC20)
	assert.ErrorIs(t, err, chains.ErrNotOffered)

	_, err = startChains(context.Background(), Config{RPCURLs: map[paywatch.Network][]string{paywatch.TRC20: {"not an address"}}}, nil, nil)
	assert.Error(t, err)

	assert.Equal(t, map[paywatch.Token]string{
		paywatch.USDT:  "0x0000000000000000000000000000000000000001",
		paywatch.USDC:  paywatch.DefaultContract(paywatch.ERC20, paywatch.USDC),
		paywatch.DAI:   paywatch.DefaultContract(paywatch.ERC20, paywatch.DAI),
		paywatch.PYUSD: paywatch.DefaultContract(paywatch.ERC20, paywatch.PYUSD),
	}, contractsOf(paywatch.ERC20, map[paywatch.Token]string{paywatch.USDT: "0x0000000000000000000000000000000000000001"}),
		"an override replaces one token's contract, the others stay mainnet")
}

func TestDevnetCommandWithoutService(t *testing.T) {
	code, _, errOut := devnetCLI("http://" + freeAddr(t))("status")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `cannot reach http://`)
	assert.Contains(t, errOut, `is "paywatch dev" running with devnet chains?`)
}
