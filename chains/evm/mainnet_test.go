package evm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/evm"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// mainnetCase is one recorded mainnet block (testdata/mainnet/<dir>, see
// the SOURCE.md there) and the transfers its explorer shows, written out
// by hand rather than decoded by the code under test.
type mainnetCase struct {
	network paywatch.Network
	dir     string
	block   uint64
	hash    string
	want    []wantTransfer
}

type wantTransfer struct {
	tx       string
	logIndex uint32
	token    paywatch.Token
	contract string
	from, to string
	amount   string // base units
}

var mainnetCases = []mainnetCase{
	{
		network: paywatch.ERC20, dir: "erc20", block: 21925176,
		hash: "0x92dabfa3f61ff1c349d12f5fd0dd4c99760a0a41b77dee8f0a80f83efdcb307a",
		want: []wantTransfer{
			{
				tx: "0x4e0b19e0745b5fd42edcde56a89c3c446d52ad03d23a0197f8e1e74616e85e77", logIndex: 202,
				token: paywatch.USDT, contract: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
				from: "0xc7bBeC68d12a0d1830360F8Ec58fA599bA1b0e9b", to: "0x000000000004444c5dc75cB358380D2e3dE08A90",
				amount: "4298598947",
			},
			{
				tx: "0xcb5fcd03b1bc04ebf327399d9c8b2e3f92edaaa371edc8d63c65ce262567b99d", logIndex: 208,
				token: paywatch.USDC, contract: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
				from: "0x28C6c06298d514Db089934071355E5743bf21d60", to: "0x0236Cf642f114645443016AD2DdFd0aBB6071c0b",
				amount: "2071066600",
			},
			{
				tx: "0xb577222d0a95bbe16bf70d944a89089897188438beaae572297a0dd488a355e4", logIndex: 209,
				token: paywatch.USDC, contract: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
				from: "0xDFd5293D8e347dFe59E90eFd55b2956a1343963d", to: "0xCeaf4f788f0a9DA83D471d0Ab0205Da41b8AaAA7",
				amount: "2997000000",
			},
		},
	},
	{
		network: paywatch.BASE, dir: "base", block: 4999983,
		hash: "0xaa6741346f8f812a3cf24f68193bd8d784618a57c782908534c97b37d345a5cc",
		want: []wantTransfer{
			{
				tx: "0x2350912778a6d27107182f5e093c2128df2a50de2b3fcd606279f8cdc6f33b6a", logIndex: 3,
				token: paywatch.DAI, contract: "0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb",
				from: "0xdcC8A6bA71A6C0053cBB32F935e9B4B64d465ea3", to: "0xEEc019764ca2098a93E0177A3AE02a5bEc599756",
				amount: "706964899278176643945",
			},
		},
	},
}

// TestMainnetRecordedBlocks drives the real client against recorded
// mainnet JSON-RPC answers served by a fake node: Transfers and ReadBatch
// must read every transfer exactly as the explorer shows it.
func TestMainnetRecordedBlocks(t *testing.T) {
	for _, mc := range mainnetCases {
		t.Run(string(mc.network), func(t *testing.T) {
			node := newRecordedNode(t, mc.dir)
			require.Equal(t, mc.block, node.number, "block.json is block %d", mc.block)
			require.Equal(t, mc.hash, node.hash)

			c := dialRecorded(t, mc.network, node)
			ctx := context.Background()

			head, err := c.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, mc.block, head)

			hash, err := c.BlockHash(ctx, mc.block)
			require.NoError(t, err)
			assert.Equal(t, mc.hash, hash)

			got, err := c.Transfers(ctx, mc.block, mc.block)
			require.NoError(t, err)
			assertTransfers(t, mc, got)

			// The block is the head, so ReadBatch also checks its logs
			// against its logsBloom, which admits the token contracts.
			read, err := c.ReadBatch(ctx, chainapi.BatchQuery{From: mc.block, To: mc.block, Head: mc.block})
			require.NoError(t, err)
			assert.Equal(t, mc.hash, read.Hash)
			assert.Empty(t, read.CursorHash)
			assertTransfers(t, mc, read.Transfers)
			assert.Positive(t, node.calls("eth_getLogs", false), "logs read by range")
		})
	}
}

// A provider whose log index lags behind its head answers [] for the
// block's range while its logsBloom names the token contracts: ReadBatch
// asks again by block hash (EIP-234), gets the real logs, and refuses
// the batch as incomplete rather than pass the block as empty.
func TestMainnetRecordedBlockLaggingLogIndex(t *testing.T) {
	for _, mc := range mainnetCases {
		t.Run(string(mc.network), func(t *testing.T) {
			node := newRecordedNode(t, mc.dir)
			node.lagging = true
			c := dialRecorded(t, mc.network, node)

			_, err := c.ReadBatch(context.Background(), chainapi.BatchQuery{From: mc.block, To: mc.block, Head: mc.block})
			require.ErrorIs(t, err, chainapi.ErrIncompleteRead)
			assert.Contains(t, err.Error(), "left out its")
			assert.Positive(t, node.calls("eth_getLogs", true), "logs asked for by block hash")
		})
	}
}

// TestMainnetRecordedBaseUSDCLog reads a Base USDC Transfer log recorded
// without its block's header (testdata/mainnet/base-usdc-log): a newer
// node's log object, with a blockTimestamp field older nodes do not send.
func TestMainnetRecordedBaseUSDCLog(t *testing.T) {
	mc := mainnetCase{
		network: paywatch.BASE, block: 50542634,
		hash: "0x9831c921c8c827d4aafa3c3815a3779458cb07368a02d3cc5d89295f1f23030e",
		want: []wantTransfer{
			{
				tx: "0x2c2a53ce984c5d359e1c10cb5f09f33153460730dcbcb4c8cc18efe8d5a1d1f0", logIndex: 1436,
				token: paywatch.USDC, contract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
				from: "0x1d7f97D26ae2C01F9b01Fc252B73Cf0Db3397E95", to: "0x3cDCE9661F6d8475DfDd8Bc3470Ae1434e6977AF",
				amount: "360960",
			},
		},
	}
	node := newRecordedNode(t, "base-usdc-log")
	require.Nil(t, node.block, "the recording has no header")
	require.Equal(t, mc.block, node.number)
	require.Equal(t, mc.hash, node.hash)
	require.Len(t, node.logs, 1)
	require.Contains(t, string(node.logs[0].raw), `"blockTimestamp":"0x6a90cd37"`)

	c := dialRecorded(t, mc.network, node)
	ctx := context.Background()
	got, err := c.Transfers(ctx, mc.block, mc.block)
	require.NoError(t, err)
	assertTransfers(t, mc, got)
	assert.Equal(t, 1, node.calls("eth_getLogs", false))

	// The recipient's topic filter matches the log too.
	got, err = c.AddressTransfersIn(ctx, mc.want[0].to, mc.block, mc.block)
	require.NoError(t, err)
	assertTransfers(t, mc, got)
}

func assertTransfers(t *testing.T, mc mainnetCase, got []paywatch.Transfer) {
	t.Helper()
	require.Len(t, got, len(mc.want))
	for i, w := range mc.want {
		g := got[i]
		amount, ok := new(big.Int).SetString(w.amount, 10)
		require.True(t, ok)
		assert.Equal(t, mc.network, g.Network, "transfer %d", i)
		assert.Equal(t, w.token, g.Token, "transfer %d", i)
		assert.Equal(t, w.contract, g.Contract, "transfer %d", i)
		assert.Equal(t, w.tx, g.TxHash, "transfer %d", i)
		assert.Equal(t, w.logIndex, g.LogIndex, "transfer %d", i)
		assert.Equal(t, mc.block, g.BlockNumber, "transfer %d", i)
		assert.Equal(t, mc.hash, g.BlockHash, "transfer %d", i)
		assert.Equal(t, w.from, g.From, "transfer %d", i)
		assert.Equal(t, w.to, g.To, "transfer %d", i)
		assert.Zero(t, amount.Cmp(g.Amount), "transfer %d: amount %s, want %s", i, g.Amount, amount)
		assert.False(t, g.Removed, "transfer %d", i)
	}
}

func dialRecorded(t *testing.T, n paywatch.Network, node *recordedNode) *evm.Client {
	t.Helper()
	srv := httptest.NewServer(node)
	t.Cleanup(srv.Close)
	c, err := evm.Dial(context.Background(), chainapi.Config{Network: n, URLs: []string{srv.URL}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// recordedNode is a JSON-RPC node that knows one block: it answers from
// the recorded block.json and logs.json, matching each call on its method
// and parameters, and answers as a node does for anything else (null, an
// empty list, or "method not found"). A recording without block.json
// (logs whose header was not found) has the logs' block as its head and
// answers null for every header.
type recordedNode struct {
	number uint64
	hash   string
	block  json.RawMessage // the result object of block.json; nil without one
	logs   []recordedLog

	// lagging makes range queries of eth_getLogs answer [] while queries
	// by block hash still answer the logs.
	lagging bool

	mu     sync.Mutex
	called map[string]int
}

type recordedLog struct {
	raw     json.RawMessage
	address string // lowercase
	topics  []string
}

func newRecordedNode(t *testing.T, dir string) *recordedNode {
	t.Helper()
	base := filepath.Join("testdata", "mainnet", dir)
	n := &recordedNode{called: map[string]int{}}
	if _, err := os.Stat(filepath.Join(base, "block.json")); err == nil {
		var block struct {
			Result json.RawMessage `json:"result"`
		}
		readJSON(t, filepath.Join(base, "block.json"), &block)
		var header struct {
			Hash   string         `json:"hash"`
			Number hexutil.Uint64 `json:"number"`
		}
		require.NoError(t, json.Unmarshal(block.Result, &header))
		// The recording is the chain's own: its fields hash to its hash.
		var full types.Header
		require.NoError(t, json.Unmarshal(block.Result, &full))
		require.Equal(t, header.Hash, full.Hash().Hex(), "%s: the header's fields hash to its hash", dir)
		n.number, n.hash, n.block = uint64(header.Number), header.Hash, block.Result
	} else {
		require.ErrorIs(t, err, fs.ErrNotExist)
	}

	var logs struct {
		Result []json.RawMessage `json:"result"`
	}
	readJSON(t, filepath.Join(base, "logs.json"), &logs)
	require.True(t, n.block != nil || len(logs.Result) > 0, "%s: no block.json and no logs", dir)
	for _, raw := range logs.Result {
		var l struct {
			Address     string         `json:"address"`
			Topics      []string       `json:"topics"`
			BlockHash   string         `json:"blockHash"`
			BlockNumber hexutil.Uint64 `json:"blockNumber"`
		}
		require.NoError(t, json.Unmarshal(raw, &l))
		if n.block == nil && len(n.logs) == 0 {
			n.number, n.hash = uint64(l.BlockNumber), l.BlockHash
		}
		require.Equal(t, n.hash, l.BlockHash, "every recorded log is of the recorded block")
		require.Equal(t, n.number, uint64(l.BlockNumber), "every recorded log is of the recorded block")
		for i := range l.Topics {
			l.Topics[i] = strings.ToLower(l.Topics[i])
		}
		n.logs = append(n.logs, recordedLog{raw: raw, address: strings.ToLower(l.Address), topics: l.Topics})
	}
	return n
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), path)
}

// calls counts eth_getLogs calls by range (byHash false) or by block hash.
func (n *recordedNode) calls(method string, byHash bool) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if byHash {
		return n.called[method+"/hash"]
	}
	return n.called[method]
}

type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (n *recordedNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		var reqs []rpcRequest
		if err := json.Unmarshal(trimmed, &reqs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resps := make([]rpcResponse, len(reqs))
		for i, req := range reqs {
			resps[i] = n.answer(req)
		}
		_ = json.NewEncoder(w).Encode(resps)
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_ = json.NewEncoder(w).Encode(n.answer(req))
}

func (n *recordedNode) answer(req rpcRequest) rpcResponse {
	resp := rpcResponse{JSONRPC: "2.0", ID: req.ID}
	n.mu.Lock()
	n.called[req.Method]++
	n.mu.Unlock()
	switch req.Method {
	case "eth_blockNumber":
		resp.Result = mustJSON(hexutil.Uint64(n.number))
	case "eth_getBlockByNumber":
		var num string
		var full bool
		if len(req.Params) != 2 || json.Unmarshal(req.Params[0], &num) != nil || json.Unmarshal(req.Params[1], &full) != nil {
			return invalidParams(resp, "want [number, bool]")
		}
		if full {
			return invalidParams(resp, "the recording holds transaction hashes only")
		}
		resp.Result = json.RawMessage("null")
		if v, err := hexutil.DecodeUint64(num); err == nil && v == n.number && n.block != nil {
			resp.Result = n.block
		}
	case "eth_getLogs":
		return n.getLogs(req, resp)
	default:
		resp.Error = &rpcError{Code: -32601, Message: "the method " + req.Method + " does not exist/is not available"}
	}
	return resp
}

// getLogs answers eth_getLogs as a node does: the recorded logs that
// match the filter's block range or block hash, addresses and topic 0.
func (n *recordedNode) getLogs(req rpcRequest, resp rpcResponse) rpcResponse {
	var f struct {
		FromBlock *string         `json:"fromBlock"`
		ToBlock   *string         `json:"toBlock"`
		BlockHash *string         `json:"blockHash"`
		Address   json.RawMessage `json:"address"`
		Topics    [][]string      `json:"topics"`
	}
	if len(req.Params) != 1 || json.Unmarshal(req.Params[0], &f) != nil {
		return invalidParams(resp, "want one filter object")
	}
	var addrs []string
	if len(f.Address) > 0 {
		if json.Unmarshal(f.Address, &addrs) != nil {
			var one string
			if json.Unmarshal(f.Address, &one) != nil {
				return invalidParams(resp, "bad address")
			}
			addrs = []string{one}
		}
	}
	for i := range addrs {
		addrs[i] = strings.ToLower(addrs[i])
	}
	inBlock := false
	switch {
	case f.BlockHash != nil:
		if f.FromBlock != nil || f.ToBlock != nil {
			return invalidParams(resp, "blockHash with fromBlock/toBlock")
		}
		n.mu.Lock()
		n.called["eth_getLogs/hash"]++
		n.called["eth_getLogs"]--
		n.mu.Unlock()
		inBlock = strings.EqualFold(*f.BlockHash, n.hash)
	case f.FromBlock != nil && f.ToBlock != nil:
		from, err1 := hexutil.DecodeUint64(*f.FromBlock)
		to, err2 := hexutil.DecodeUint64(*f.ToBlock)
		if err1 != nil || err2 != nil {
			return invalidParams(resp, "bad block range")
		}
		inBlock = from <= n.number && n.number <= to && !n.lagging
	default:
		return invalidParams(resp, "want fromBlock and toBlock, or blockHash")
	}
	out := []json.RawMessage{}
	if inBlock {
		for _, l := range n.logs {
			if len(addrs) > 0 && !slices.Contains(addrs, l.address) {
				continue
			}
			if !topicsMatch(f.Topics, l.topics) {
				continue
			}
			out = append(out, l.raw)
		}
	}
	resp.Result = mustJSON(out)
	return resp
}

// topicsMatch applies an eth_getLogs topic filter: position i matches
// when its list is empty or holds the log's topic i.
func topicsMatch(filter [][]string, topics []string) bool {
	for i, alts := range filter {
		if len(alts) == 0 {
			continue
		}
		if i >= len(topics) || !slices.ContainsFunc(alts, func(a string) bool { return strings.EqualFold(a, topics[i]) }) {
			return false
		}
	}
	return true
}

func invalidParams(resp rpcResponse, msg string) rpcResponse {
	resp.Result = nil
	resp.Error = &rpcError{Code: -32602, Message: "invalid params: " + msg}
	return resp
}

// mustJSON marshals a value that always marshals; it runs on the
// server's goroutines, where a test must not stop.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
