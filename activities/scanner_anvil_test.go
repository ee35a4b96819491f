package activities_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/workflows"
)

// The EVM scanner against an EVM node no one here wrote: anvil (Foundry),
// from npm's @foundry-rs/anvil, installed by
//
//	npm ci --prefix chains/evm/testdata/anvil
//
// (`make test` does it, through .ci/setup). ANVIL_BIN overrides the path.
// Without the binary the test fails: a missing tool never passes as a skip.

// anvilBinary finds the anvil executable.
func anvilBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ANVIL_BIN"); p != "" {
		return p
	}
	// The platform package's binary itself, not the node wrapper in
	// node_modules/.bin, so that killing it stops the node.
	pattern := filepath.Join(repoRoot(t), "chains", "evm", "testdata", "anvil", "node_modules", "@foundry-rs", "anvil-*", "bin", "anvil")
	matches, _ := filepath.Glob(pattern)
	if len(matches) == 0 {
		t.Fatal("anvil is not installed: run make test-deps, or npm ci --prefix chains/evm/testdata/anvil (or set ANVIL_BIN)")
	}
	return matches[0]
}

// startAnvil runs anvil on a free loopback port with chain id 1 and returns
// its JSON-RPC URL.
func startAnvil(t *testing.T, ctx context.Context) string {
	t.Helper()
	bin := anvilBinary(t)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--chain-id", "1", "--silent")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start(), "start %s", bin)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("anvil output:\n%s", logs.String())
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	require.Eventually(t, func() bool {
		c, err := ethclient.DialContext(ctx, url)
		if err != nil {
			return false
		}
		defer c.Close()
		id, err := c.ChainID(ctx)
		return err == nil && id.Int64() == 1
	}, 30*time.Second, 50*time.Millisecond, "anvil answers on %s", url)
	return url
}

// anvilSend signs a transaction from anvil's first default account (the
// devnet faucet's well-known key), waits for its receipt and checks it
// succeeded.
func anvilSend(t *testing.T, ctx context.Context, c *ethclient.Client, to *common.Address, data []byte) *types.Receipt {
	t.Helper()
	key, err := crypto.HexToECDSA(devnet.Accounts()[0].PrivateKey)
	require.NoError(t, err)
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := c.PendingNonceAt(ctx, from)
	require.NoError(t, err)
	gas, err := c.EstimateGas(ctx, ethereum.CallMsg{From: from, To: to, Data: data})
	require.NoError(t, err)
	tip, err := c.SuggestGasTipCap(ctx)
	require.NoError(t, err)
	head, err := c.HeaderByNumber(ctx, nil)
	require.NoError(t, err)
	chainID, err := c.ChainID(ctx)
	require.NoError(t, err)
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip),
		Gas:       gas * 12 / 10, To: to, Data: data,
	})
	require.NoError(t, err)
	require.NoError(t, c.SendTransaction(ctx, tx))
	var r *types.Receipt
	require.Eventually(t, func() bool {
		r, err = c.TransactionReceipt(ctx, tx.Hash())
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "anvil mines the transaction")
	require.Equal(t, types.ReceiptStatusSuccessful, r.Status)
	return r
}

func TestEVMScannerAgainstAnvil(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := startAnvil(t, ctx)
	ec, err := ethclient.DialContext(ctx, url)
	require.NoError(t, err)
	defer ec.Close()

	// Deploy the devnet's test token, from its committed ABI and bytecode.
	root := repoRoot(t)
	abiJSON, err := os.ReadFile(filepath.Join(root, "chains", "devnet", "contracts", "TestToken.abi"))
	require.NoError(t, err)
	binHex, err := os.ReadFile(filepath.Join(root, "chains", "devnet", "contracts", "TestToken.bin"))
	require.NoError(t, err)
	tokenABI, err := abi.JSON(bytes.NewReader(abiJSON))
	require.NoError(t, err)
	code, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(string(binHex)), "0x"))
	require.NoError(t, err)
	args, err := tokenABI.Pack("", "Tether USD", "USDT", uint8(6))
	require.NoError(t, err)
	deployed := anvilSend(t, ctx, ec, nil, append(code, args...))
	token := deployed.ContractAddress
	require.NotEqual(t, common.Address{}, token)

	n := paywatch.ERC20 // chain id 1, 12 confirmations
	set, err := chains.DialSet(ctx, chains.Config{Network: n, URLs: []string{url},
		Contracts: map[paywatch.Token]string{paywatch.USDT: token.Hex()}})
	require.NoError(t, err)
	defer set.Close()
	db := newScanDB(t)
	start, err := ec.BlockNumber(ctx)
	require.NoError(t, err)
	to := randomAddress(t, n)
	id := db.watch(t, n, paywatch.USDT, to, start)

	data, err := tokenABI.Pack("transfer", common.HexToAddress(to), big.NewInt(12_345_678))
	require.NoError(t, err)
	r := anvilSend(t, ctx, ec, &token, data)
	block := r.BlockNumber.Uint64()
	// anvil_mine: 11 more blocks, so the transfer has exactly 12 confirmations.
	require.NoError(t, ec.Client().CallContext(ctx, nil, "anvil_mine", hexutil.EncodeUint64(11)))
	head, err := ec.BlockNumber(ctx)
	require.NoError(t, err)
	require.Equal(t, block+11, head)

	sig := &signalLog{}
	s := activities.NewScanner(activities.ScannerDeps{Store: db.store, Chains: set, Signaler: sig,
		PollInterval: map[paywatch.Network]time.Duration{n: 50 * time.Millisecond}})
	p, err := s.Run(ctx, workflows.ScanInput{Network: n, RunFor: time.Second}, nil)
	require.NoError(t, err)
	assert.Equal(t, head, p.Height, "scanned to anvil's head")
	got := sig.signals()
	// The transfer came with its 12 confirmations in one burst: one
	// transfer-seen signal, with its depth in the block the batch read.
	require.Len(t, got, 1)
	assert.Equal(t, workflows.PaymentWorkflowID(id), got[0].WorkflowID)
	assert.Equal(t, workflows.SignalTransferSeen, got[0].Name)
	seen := got[0].Arg.(paywatch.Transaction)
	assert.Equal(t, r.TxHash.Hex(), seen.TxHash)
	assert.Equal(t, block, seen.BlockNumber)
	assert.Equal(t, r.BlockHash.Hex(), seen.BlockHash)
	assert.Equal(t, "12.345678", seen.Amount.String(), "the right amount at 6 decimals")
	assert.Equal(t, devnet.Accounts()[0].EVM, seen.From)
	assert.Equal(t, 12, seen.Confirmations, "its depth: exactly the 12 required")

	// The payment workflow's confirmation check counts 12 of 12 required.
	info, _ := paywatch.LookupNetwork(n)
	acts := activities.New(activities.Deps{Store: db.store, Chains: set})
	check, err := acts.CheckTransfers(ctx, workflows.CheckTransfersInput{Network: n, Transfers: []workflows.TransferRef{
		{TxHash: seen.TxHash, LogIndex: seen.LogIndex, BlockNumber: seen.BlockNumber, BlockHash: seen.BlockHash},
	}})
	require.NoError(t, err)
	require.Len(t, check.Transfers, 1)
	assert.Equal(t, info.Confirmations, check.Transfers[0].Confirmations)
	assert.True(t, check.Transfers[0].Canonical)
	require.NoError(t, ec.Client().CallContext(ctx, nil, "anvil_mine", hexutil.EncodeUint64(1)))
	check, err = acts.CheckTransfers(ctx, workflows.CheckTransfersInput{Network: n, Transfers: []workflows.TransferRef{
		{TxHash: seen.TxHash, LogIndex: seen.LogIndex, BlockNumber: seen.BlockNumber, BlockHash: seen.BlockHash},
	}})
	require.NoError(t, err)
	assert.Equal(t, info.Confirmations+1, check.Transfers[0].Confirmations)

	// The recorded transfer is the one anvil reports.
	var amount string
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT amount::text FROM chain_transfers WHERE tx_hash = $1`, seen.TxHash).Scan(&amount))
	assert.Equal(t, "12345678", amount)
}
