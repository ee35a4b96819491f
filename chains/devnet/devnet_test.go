package devnet_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
)

func start(t *testing.T, cfg devnet.Config) *devnet.Devnet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

func TestAccountsAndContractsAreTheDocumentedOnes(t *testing.T) {
	accounts := devnet.Accounts()
	require.Len(t, accounts, 3)
	want := []struct{ evm, tron string }{
		{"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "TYBNgWfhGuNzdLtjKtxXTfskAhTbMcqbaG"},
		{"0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "TLEaY8XoqpBmndLsjcfThgdKLN1ssNuUcF"},
		{"0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", "TFTsyAaajS3DTEbekme2wm9fNcypguDHp4"},
	}
	for i, a := range accounts {
		assert.Equal(t, want[i].evm, a.EVM)
		assert.Equal(t, want[i].tron, a.Tron)
		key, err := crypto.HexToECDSA(a.PrivateKey)
		require.NoError(t, err)
		assert.Equal(t, a.EVM, crypto.PubkeyToAddress(key.PublicKey).Hex())
	}
	usdt := common.HexToAddress("0x5FbDB2315678afecb367f032d93F642f64180aa3")
	assert.Equal(t, paywatch.TronAddressFromEVMBytes(usdt.Bytes()), devnet.TronUSDTContract)
}

func TestStartsEveryNetwork(t *testing.T) {
	began := time.Now()
	d := start(t, devnet.Config{})
	st := d.Networks()
	t.Logf("%d chains started in %v", len(st), time.Since(began))
	require.Len(t, st, 8)
	wantIDs := map[paywatch.Network]int64{paywatch.TRC20: 0, paywatch.BEP20: 56, paywatch.ERC20: 1, paywatch.POLYGON: 137, paywatch.ARBITRUM: 42161, paywatch.BASE: 8453, paywatch.SOLANA: 0, paywatch.TON: devnet.TONGlobalID}
	solanaMints := map[paywatch.Token]string{}
	for _, m := range devnet.DefaultSolanaMints() {
		solanaMints[m.Token] = m.Mint
	}
	// Each token has one address on every EVM devnet, whichever tokens
	// the chain carries (the faucet's nonce n deploys the n-th token).
	evmTokens := map[paywatch.Token]string{
		paywatch.USDT:  "0x5FbDB2315678afecb367f032d93F642f64180aa3",
		paywatch.USDC:  "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
		paywatch.DAI:   "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0",
		paywatch.PYUSD: "0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
	}
	for i, info := range paywatch.Networks() {
		s := st[i]
		assert.Equal(t, info.Network, s.Network, "API order")
		assert.Equal(t, wantIDs[s.Network], s.ChainID)
		switch info.Family {
		case paywatch.FamilyTron:
			assert.Equal(t, map[paywatch.Token]string{paywatch.USDT: devnet.TronUSDTContract}, s.Tokens)
			assert.NotContains(t, s.RPCURL, "://")
			assert.Equal(t, uint64(0), s.Head)
		case paywatch.FamilySolana:
			assert.Equal(t, solanaMints, s.Tokens, "the devnet's own mints, never mainnet's")
			assert.NotEqual(t, paywatch.DefaultContract(s.Network, paywatch.USDC), s.Tokens[paywatch.USDC])
			assert.True(t, strings.HasPrefix(s.RPCURL, "http://127.0.0.1:"), s.RPCURL)
			assert.Equal(t, uint64(0), s.Head, "genesis")
		case paywatch.FamilyTON:
			assert.Equal(t, map[paywatch.Token]string{paywatch.USDT: devnet.TONUSDTMaster()}, s.Tokens, "the devnet's own master")
			assert.NotEqual(t, paywatch.DefaultContract(s.Network, paywatch.USDT), s.Tokens[paywatch.USDT])
			assert.True(t, strings.HasPrefix(s.RPCURL, "http://127.0.0.1:"), s.RPCURL)
			assert.True(t, strings.HasSuffix(s.RPCURL, "/api/v3"), "TON Center's base: %s", s.RPCURL)
			assert.Equal(t, uint64(0), s.Head, "genesis")
		default:
			want := map[paywatch.Token]string{}
			for _, tok := range info.Tokens {
				want[tok] = evmTokens[tok]
			}
			assert.Equal(t, want, s.Tokens)
			assert.True(t, strings.HasPrefix(s.RPCURL, "http://127.0.0.1:"), s.RPCURL)
			assert.Equal(t, uint64(2), s.Head, "deployment and funding blocks")
		}
	}
}

func TestStartSubsetAndUnknown(t *testing.T) {
	d := start(t, devnet.Config{Networks: []paywatch.Network{paywatch.ARBITRUM}})
	require.Len(t, d.Networks(), 1)
	_, ok := d.Network(paywatch.ERC20)
	assert.False(t, ok)
	_, err := d.Mine(context.Background(), paywatch.ERC20, 1)
	assert.Equal(t, paywatch.ENOTFOUND, paywatch.ErrorCode(err))

	_, err = devnet.Start(context.Background(), devnet.Config{Networks: []paywatch.Network{"SUI"}})
	assert.Error(t, err)
}

func TestBlockProducer(t *testing.T) {
	d := start(t, devnet.Config{BlockInterval: 20 * time.Millisecond, Networks: []paywatch.Network{paywatch.TRC20, paywatch.BEP20}})
	assert.Eventually(t, func() bool {
		for _, s := range d.Networks() {
			if s.Head < 5 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond)

	// Transfers and reorgs interleave safely with the producer.
	ctx := context.Background()
	res, err := d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.BEP20, Token: paywatch.USDC, To: devnet.Accounts()[2].EVM, Amount: "0.000000000000000001"})
	require.NoError(t, err)
	assert.Equal(t, "0.000000000000000001", res.Amount)
	_, dropped, err := d.Reorg(ctx, paywatch.TRC20, 2)
	require.NoError(t, err)
	assert.Empty(t, dropped)
}

// Per-network intervals: a network with its own interval makes blocks, one
// set to 0 makes none; MinedAt knows when each block came, in order.
func TestBlockIntervalsAndMinedAt(t *testing.T) {
	d := start(t, devnet.Config{
		BlockInterval:  0,
		BlockIntervals: map[paywatch.Network]time.Duration{paywatch.ARBITRUM: 10 * time.Millisecond},
		BlockJitter:    0.5,
		Networks:       []paywatch.Network{paywatch.ARBITRUM, paywatch.POLYGON},
	})
	polygon, _ := d.Network(paywatch.POLYGON)
	require.Eventually(t, func() bool {
		s, _ := d.Network(paywatch.ARBITRUM)
		return s.Head >= polygon.Head+10
	}, 10*time.Second, 10*time.Millisecond)
	arb, _ := d.Network(paywatch.ARBITRUM)
	var last time.Time
	for h := arb.Head - 8; h <= arb.Head; h++ {
		at, ok := d.MinedAt(paywatch.ARBITRUM, h)
		require.True(t, ok, "block %d", h)
		assert.False(t, at.Before(last), "block %d mined before its parent", h)
		last = at
	}
	still, _ := d.Network(paywatch.POLYGON)
	assert.Equal(t, polygon.Head, still.Head, "no producer for a network set to 0")

	// Explicit blocks are timed too.
	before := time.Now()
	h, err := d.Mine(context.Background(), paywatch.POLYGON, 3)
	require.NoError(t, err)
	for _, b := range []uint64{h - 2, h} {
		at, ok := d.MinedAt(paywatch.POLYGON, b)
		require.True(t, ok)
		assert.False(t, at.Before(before))
	}
	_, ok := d.MinedAt(paywatch.POLYGON, h+1)
	assert.False(t, ok, "not mined yet")
}

func TestTransferFromDevAccounts(t *testing.T) {
	d := start(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.ERC20}})
	ctx := context.Background()
	acc := devnet.Accounts()

	res, err := d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.ERC20, Token: paywatch.USDT, To: strings.ToLower(acc[0].EVM), Amount: "1000000", From: acc[1].EVM})
	require.NoError(t, err, "account 1 starts with 1,000,000 of each token")
	assert.Equal(t, acc[1].EVM, res.From)
	assert.Equal(t, acc[0].EVM, res.To, "addresses are normalised")
	assert.Equal(t, "1000000.00", res.Amount)
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.ERC20, Token: paywatch.USDT, To: acc[0].EVM, Amount: "1", From: acc[1].EVM})
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err), "%v", err)
	assert.ErrorContains(t, err, "insufficient balance")

	res, err = d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.TRC20, Token: paywatch.USDT, To: acc[1].Tron, Amount: "2.5", From: acc[2].Tron})
	require.NoError(t, err)
	assert.Equal(t, acc[2].Tron, res.From)
	assert.Equal(t, uint64(1), res.BlockNumber)
	assert.Regexp(t, "^[0-9a-f]{64}$", res.TxHash)
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.TRC20, Token: paywatch.USDT, To: acc[1].Tron, Amount: "1000000", From: acc[2].Tron})
	assert.ErrorContains(t, err, "insufficient balance")

	// A reorg gives the balance back on Tron too.
	_, dropped, err := d.Reorg(ctx, paywatch.TRC20, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{res.TxHash}, dropped)
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.TRC20, Token: paywatch.USDT, To: acc[1].Tron, Amount: "1000000", From: acc[2].Tron})
	assert.NoError(t, err)

	// The setup blocks of an EVM chain cannot be replaced.
	_, _, err = d.Reorg(ctx, paywatch.ERC20, 2)
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err), "%v", err)
}

// do sends a request to h and decodes the JSON answer.
func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return rec.Code, out
}

func TestHandler(t *testing.T) {
	d := start(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.POLYGON}})
	h := d.Handler()
	to := devnet.Accounts()[1].EVM

	code, body := do(t, h, "GET", "/devnet", "")
	require.Equal(t, http.StatusOK, code)
	nets := body["networks"].([]any)
	require.Len(t, nets, 2)
	tron := nets[0].(map[string]any)
	assert.Equal(t, "TRC20", tron["network"])
	assert.Equal(t, float64(0), tron["chain_id"])
	assert.Equal(t, float64(0), tron["head"])
	assert.Equal(t, map[string]any{"USDT": devnet.TronUSDTContract}, tron["tokens"])
	poly := nets[1].(map[string]any)
	assert.Equal(t, "POLYGON", poly["network"])
	assert.Equal(t, float64(137), poly["chain_id"])
	assert.Equal(t, float64(2), poly["head"])
	assert.Contains(t, poly["rpc_url"], "http://127.0.0.1:")
	assert.Equal(t, map[string]any{"USDT": "0x5FbDB2315678afecb367f032d93F642f64180aa3", "USDC": "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512", "DAI": "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"}, poly["tokens"])

	code, body = do(t, h, "POST", "/devnet/transfers", `{"network":"POLYGON","token":"USDC","to":"`+strings.ToLower(to)+`","amount":"10.5"}`)
	require.Equal(t, http.StatusCreated, code, "%v", body)
	assert.Equal(t, map[string]any{
		"tx_hash":      body["tx_hash"],
		"block_number": float64(3),
		"network":      "POLYGON",
		"token":        "USDC",
		"from":         devnet.Accounts()[0].EVM,
		"to":           to,
		"amount":       "10.50",
	}, body)
	assert.Regexp(t, "^0x[0-9a-f]{64}$", body["tx_hash"])
	txHash := body["tx_hash"]

	// A JSON number is accepted for amount too, and from a dev account.
	code, body = do(t, h, "POST", "/devnet/transfers", `{"network":"TRC20","token":"USDT","to":"`+devnet.Accounts()[1].Tron+`","amount":1.25,"from":"`+devnet.Accounts()[2].Tron+`"}`)
	require.Equal(t, http.StatusCreated, code, "%v", body)
	assert.Equal(t, "1.25", body["amount"])
	assert.Equal(t, float64(1), body["block_number"])

	code, body = do(t, h, "POST", "/devnet/blocks", `{"network":"POLYGON","count":5}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Equal(t, map[string]any{"network": "POLYGON", "head": float64(8)}, body)

	code, body = do(t, h, "POST", "/devnet/reorg", `{"network":"POLYGON","depth":6}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Equal(t, map[string]any{"network": "POLYGON", "head": float64(9), "dropped": []any{txHash}}, body)

	code, body = do(t, h, "POST", "/devnet/reorg", `{"network":"TRC20","depth":1}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Equal(t, float64(2), body["head"])
	assert.Len(t, body["dropped"], 1)

	code, body = do(t, h, "POST", "/devnet/reorg", `{"network":"TRC20","depth":1}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Equal(t, []any{}, body["dropped"], "an empty list, not null")

	for _, tc := range []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"bad json", "/devnet/transfers", `{"network":`, 400, "invalid JSON body"},
		{"missing fields", "/devnet/transfers", `{"network":"POLYGON"}`, 400, "required"},
		{"unknown network", "/devnet/transfers", `{"network":"FOO","token":"USDT","to":"x","amount":"1"}`, 404, "unknown network"},
		{"network not running", "/devnet/transfers", `{"network":"ERC20","token":"USDT","to":"` + to + `","amount":"1"}`, 404, "no devnet chain"},
		{"usdc on tron", "/devnet/transfers", `{"network":"TRC20","token":"USDC","to":"` + devnet.Accounts()[1].Tron + `","amount":"1"}`, 400, "USDC is not supported on TRC20"},
		{"unknown token", "/devnet/transfers", `{"network":"POLYGON","token":"DOGE","to":"` + to + `","amount":"1"}`, 400, "unknown token"},
		{"tron address on evm", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + devnet.Accounts()[1].Tron + `","amount":"1"}`, 400, "to:"},
		{"bad amount", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + to + `","amount":"abc"}`, 400, "amount"},
		{"amount object", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + to + `","amount":{}}`, 400, "amount must be a decimal string"},
		{"negative amount", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + to + `","amount":"-1"}`, 400, "positive"},
		{"too many decimals", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + to + `","amount":"1.0000001"}`, 400, "decimal"},
		{"from not a dev account", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + to + `","amount":"1","from":"0x000000000000000000000000000000000000dEaD"}`, 400, "not a devnet account"},
		{"insufficient balance", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + to + `","amount":"2000000","from":"` + to + `"}`, 400, "insufficient balance"},
		{"memo on evm", "/devnet/transfers", `{"network":"POLYGON","token":"USDT","to":"` + to + `","amount":"1","memo":"x"}`, 400, "memo: POLYGON transfers carry none"},
		{"count zero", "/devnet/blocks", `{"network":"POLYGON","count":0}`, 400, "count"},
		{"count huge", "/devnet/blocks", `{"network":"POLYGON","count":1000000}`, 400, "count"},
		{"count not a number", "/devnet/blocks", `{"network":"POLYGON","count":"5"}`, 400, "count"},
		{"blocks unknown network", "/devnet/blocks", `{"network":"SUI","count":1}`, 404, "unknown network"},
		{"depth missing", "/devnet/reorg", `{"network":"POLYGON"}`, 400, "depth"},
		{"depth zero", "/devnet/reorg", `{"network":"POLYGON","depth":0}`, 400, "depth"},
		{"depth into setup", "/devnet/reorg", `{"network":"POLYGON","depth":9}`, 400, "setup"},
		{"depth into genesis", "/devnet/reorg", `{"network":"TRC20","depth":100}`, 400, "genesis"},
		{"reorg unknown network", "/devnet/reorg", `{"network":"ERC20","depth":1}`, 404, "no devnet chain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, h, "POST", tc.path, tc.body)
			assert.Equal(t, tc.code, code, "%v", body)
			assert.Contains(t, body["error"], tc.msg)
			assert.Len(t, body, 1, "only the error field")
		})
	}

	code, body = do(t, h, "GET", "/devnet/nothing", "")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "Not found", body["error"])
}

// POST /devnet/reorg with reinclude: the dropped transactions are mined
// again, the same signed transactions with the same hashes, in the block
// after the new branch's tip, as when a reorged transaction is still in the
// mempool. A transfer that failed fails again.
func TestReorgReincludeMinesTheDroppedTransfersAgain(t *testing.T) {
	d := start(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.POLYGON}})
	h := d.Handler()
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.POLYGON} {
		t.Run(string(n), func(t *testing.T) {
			ctx := context.Background()
			st, _ := d.Network(n)
			c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{st.RPCURL}, Contracts: st.Tokens})
			require.NoError(t, err)
			defer c.Close()
			to := devnet.Accounts()[2].EVM
			if n == paywatch.TRC20 {
				to = devnet.Accounts()[2].Tron
			}
			req := devnet.TransferRequest{Network: n, Token: paywatch.USDT, To: to, Amount: "5"}
			a, err := d.Transfer(ctx, req)
			require.NoError(t, err)
			failed, err := d.TransferFailed(ctx, req)
			require.NoError(t, err)
			batch, err := d.TransferBatch(ctx, []devnet.TransferRequest{req, req})
			require.NoError(t, err)
			before, err := d.Mine(ctx, n, 1)
			require.NoError(t, err)
			sent := []string{a.TxHash, failed.TxHash, batch[0].TxHash, batch[1].TxHash}

			code, body := do(t, h, "POST", "/devnet/reorg", `{"network":"`+string(n)+`","depth":4,"reinclude":true}`)
			require.Equal(t, http.StatusOK, code, "%v", body)
			head := uint64(body["head"].(float64))
			assert.Equal(t, before+2, head, "the new branch (one block longer), then the block that mines them again")
			var dropped []string
			for _, h := range body["dropped"].([]any) {
				dropped = append(dropped, h.(string))
			}
			assert.Equal(t, sent, dropped, "dropped still lists them")

			ts, err := c.Transfers(ctx, before-3, head)
			require.NoError(t, err)
			require.Len(t, ts, 3, "the successful transfers, once each")
			for i, h := range []string{a.TxHash, batch[0].TxHash, batch[1].TxHash} {
				assert.Equal(t, h, ts[i].TxHash, "the same hash")
				assert.Equal(t, head, ts[i].BlockNumber, "in the block after the new branch's tip")
				got, found, err := c.TransactionTransfers(ctx, h)
				require.NoError(t, err)
				require.True(t, found, "its receipt is in the new block")
				require.Len(t, got, 1)
				assert.Equal(t, head, got[0].BlockNumber)
				hash, err := c.BlockHash(ctx, head)
				require.NoError(t, err)
				assert.Equal(t, hash, got[0].BlockHash)
			}
			_, found, err := c.TransactionTransfers(ctx, failed.TxHash)
			require.NoError(t, err)
			assert.False(t, found, "the failed transfer failed again")

			// From Go, and once more: the block of the mined-again transfers
			// is replaced too, and they come back after the new tip.
			again, dropped, err := d.ReorgReinclude(ctx, n, 1)
			require.NoError(t, err)
			assert.Equal(t, head+2, again)
			assert.Equal(t, sent, dropped)
			got, found, err := c.TransactionTransfers(ctx, a.TxHash)
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, again, got[0].BlockNumber)

			// The chain goes on as usual.
			next, err := d.Transfer(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, again+1, next.BlockNumber)
		})
	}
}

// Every pair of operations.md §9 that the devnet carries moves on it and
// reads back through the chain client with its table's decimals: DAI to
// the last of its 18 decimals, PYUSD and BASE's USDC with 6.
func TestNewPairsTransferAndReadExactly(t *testing.T) {
	d := start(t, devnet.Config{Networks: []paywatch.Network{paywatch.ERC20, paywatch.BASE}})
	ctx := context.Background()
	to := devnet.Accounts()[2].EVM
	for _, tc := range []struct {
		network paywatch.Network
		token   paywatch.Token
		amount  string
		units   string
	}{
		{paywatch.BASE, paywatch.USDC, "25.5", "25500000"},
		{paywatch.BASE, paywatch.DAI, "0.000000000000000001", "1"},
		{paywatch.BASE, paywatch.DAI, "12.345678901234567891", "12345678901234567891"},
		{paywatch.ERC20, paywatch.DAI, "1000000", "1000000000000000000000000"},
		{paywatch.ERC20, paywatch.PYUSD, "0.000001", "1"},
	} {
		t.Run(string(tc.token)+" on "+string(tc.network), func(t *testing.T) {
			st, ok := d.Network(tc.network)
			require.True(t, ok)
			c, err := chains.Dial(ctx, chains.Config{Network: tc.network, URLs: []string{st.RPCURL}, Contracts: st.Tokens})
			require.NoError(t, err)
			defer c.Close()
			res, err := d.Transfer(ctx, devnet.TransferRequest{Network: tc.network, Token: tc.token, To: to, Amount: tc.amount})
			require.NoError(t, err)
			got, err := c.Transfers(ctx, res.BlockNumber, res.BlockNumber)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tc.token, got[0].Token)
			assert.Equal(t, st.Tokens[tc.token], got[0].Contract)
			assert.Equal(t, to, got[0].To)
			assert.Equal(t, tc.units, got[0].Amount.String(), "base units")
		})
	}
	_, err := d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.BASE, Token: paywatch.USDT, To: to, Amount: "1"})
	assert.EqualError(t, err, "USDT is not supported on BASE")
	_, err = d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.ERC20, Token: paywatch.PYUSD, To: to, Amount: "0.0000001"})
	assert.ErrorContains(t, err, "decimal")
}
