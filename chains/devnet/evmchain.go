package devnet

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/paywatch/paywatch"
)

// Gas handling. go-ethereum 1.17's dev chain config enables forks whose gas
// rules mainnet does not have yet (a first transfer to a new holder costs
// about 148k), so every transaction's gas is estimated, given headroom, and
// its receipt status checked: a transaction that runs out of gas "succeeds"
// with status 0 and no logs, which must never pass silently.
const (
	gasHeadroomPercent = 30
	// failedTransferGas is the limit of TransferFailed's transaction, which
	// cannot be estimated because it reverts.
	failedTransferGas = 300_000
)

// devBalance is the native coin every dev account starts with: 1,000,000
// ETH (or BNB, POL) in wei.
var devBalance = new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))

// evmChain is one in-process go-ethereum chain: the machinery of
// ethclient/simulated (a node with an in-memory database, no peers, and a
// simulated beacon that seals blocks on demand), assembled here rather than
// through simulated.NewBackend for three things that one hides: the chain id,
// the HTTP endpoint, and the transaction pool, which a reorg must empty.
type evmChain struct {
	info   paywatch.NetworkInfo
	stack  *node.Node
	eth    *eth.Ethereum
	beacon *catalyst.SimulatedBeacon
	client *ethclient.Client // in process, not over HTTP
	signer types.Signer
	url    string
	tokens map[paywatch.Token]common.Address
	// setupHead is the last block made at start (deployment, funding);
	// a reorg must not replace it.
	setupHead uint64

	mu sync.Mutex // serialises block production, transfers and reorgs
}

// startEVM starts the chain of network info and deploys its tokens.
func startEVM(ctx context.Context, info paywatch.NetworkInfo, logRangeLimit uint64) (_ *evmChain, err error) {
	chainConfig := *params.AllDevChainProtocolChanges
	chainConfig.ChainID = big.NewInt(info.ChainID)

	alloc := core.SystemContractAllocs()
	for _, a := range accounts {
		alloc[a.addr] = types.Account{Balance: devBalance}
	}

	nodeConf := node.DefaultConfig
	nodeConf.Name = "paywatch-devnet"
	nodeConf.DataDir = "" // in-memory database
	nodeConf.P2P = p2p.Config{NoDiscovery: true}
	nodeConf.HTTPHost = "127.0.0.1"
	nodeConf.HTTPPort = 0 // a free port
	nodeConf.HTTPVirtualHosts = []string{"*"}
	nodeConf.HTTPModules = []string{"eth", "net", "web3"}
	nodeConf.Logger = nil

	ethConf := ethconfig.Defaults
	ethConf.Genesis = &core.Genesis{
		Config:   &chainConfig,
		GasLimit: ethconfig.Defaults.Miner.GasCeil,
		Alloc:    alloc,
	}
	ethConf.SyncMode = ethconfig.FullSync
	ethConf.TxPool.NoLocals = true
	ethConf.LogNoHistory = true // no log index: scans of a small chain need none, and it costs CPU
	// Small caches: the defaults are sized for mainnet (gigabytes).
	ethConf.DatabaseCache = 16
	ethConf.TrieCleanCache = 16
	ethConf.TrieDirtyCache = 16
	ethConf.SnapshotCache = 16
	ethConf.FilterLogCacheSize = 8
	// Keep state history (what a rewind needs) for a little more than the
	// deepest reorg rather than mainnet's 90,000 blocks: it is most of
	// what an idle chain grows by.
	ethConf.StateHistory = 2 * MaxReorgDepth

	stack, err := node.New(&nodeConf)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			stack.Close()
		}
	}()
	backend, err := eth.New(stack, &ethConf)
	if err != nil {
		return nil, err
	}
	filterSystem := filters.NewFilterSystem(backend.APIBackend, filters.Config{RangeLimit: logRangeLimit})
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(filterSystem)}})
	if err := stack.Start(); err != nil {
		return nil, err
	}
	beacon, err := catalyst.NewSimulatedBeacon(0, common.Address{}, backend)
	if err != nil {
		return nil, err
	}
	// As simulated.NewBackend does: settle the fork choice on genesis.
	if err := beacon.Fork(backend.BlockChain().GetCanonicalHash(0)); err != nil {
		return nil, err
	}
	c := &evmChain{
		info:   info,
		stack:  stack,
		eth:    backend,
		beacon: beacon,
		client: ethclient.NewClient(stack.Attach()),
		signer: types.LatestSignerForChainID(chainConfig.ChainID),
		url:    stack.HTTPEndpoint(),
		tokens: map[paywatch.Token]common.Address{},
	}
	if err := c.setup(ctx); err != nil {
		c.client.Close()
		beacon.Stop()
		return nil, err
	}
	return c, nil
}

// setup deploys the test tokens from the faucet (block 1) and funds the
// other dev accounts (block 2).
func (c *evmChain) setup(ctx context.Context) error {
	faucet := accounts[0]
	nonce, err := c.client.PendingNonceAt(ctx, faucet.addr)
	if err != nil {
		return err
	}
	var txs []*types.Transaction
	// Every token has one nonce of the faucet, and so one address, on
	// every chain: a chain without the token spends its nonce on an empty
	// transfer to itself.
	for _, t := range paywatch.TokenSlots() {
		var tx *types.Transaction
		if slices.Contains(c.info.Tokens, t) {
			args, err := testTokenABI.Pack("", paywatch.TokenName(t), string(t), uint8(paywatch.Decimals(c.info.Network, t)))
			if err != nil {
				return err
			}
			tx, err = c.send(ctx, faucet, nonce, nil, append(append([]byte{}, testTokenBin...), args...), 0)
			if err != nil {
				return fmt.Errorf("deploy %s: %w", t, err)
			}
			c.tokens[t] = crypto.CreateAddress(faucet.addr, nonce)
		} else {
			self := faucet.addr
			if tx, err = c.send(ctx, faucet, nonce, &self, nil, params.TxGas); err != nil {
				return fmt.Errorf("skip the nonce of %s: %w", t, err)
			}
		}
		txs = append(txs, tx)
		nonce++
	}
	if err := c.mineAndCheck(ctx, txs, true); err != nil {
		return err
	}
	txs = txs[:0]
	for _, t := range c.info.Tokens {
		whole := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(paywatch.Decimals(c.info.Network, t))), nil)
		amount := whole.Mul(whole, big.NewInt(devAccountFunding))
		for _, a := range accounts[1:] {
			data, err := testTokenABI.Pack("transfer", a.addr, amount)
			if err != nil {
				return err
			}
			token := c.tokens[t]
			tx, err := c.send(ctx, faucet, nonce, &token, data, 0)
			if err != nil {
				return fmt.Errorf("fund %s: %w", a.addr, err)
			}
			txs = append(txs, tx)
			nonce++
		}
	}
	if err := c.mineAndCheck(ctx, txs, true); err != nil {
		return err
	}
	c.setupHead = c.head()
	return nil
}

// send signs and submits one transaction from a with the given nonce. A
// zero gas means estimate it (and add headroom).
func (c *evmChain) send(ctx context.Context, a account, nonce uint64, to *common.Address, data []byte, gas uint64) (*types.Transaction, error) {
	if gas == 0 {
		est, err := c.client.EstimateGas(ctx, ethereum.CallMsg{From: a.addr, To: to, Data: data})
		if err != nil {
			return nil, err
		}
		gas = est + est*gasHeadroomPercent/100
	}
	head := c.eth.BlockChain().CurrentBlock()
	tip := big.NewInt(params.GWei)
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx, err := types.SignNewTx(a.key, c.signer, &types.DynamicFeeTx{
		ChainID:   c.signer.ChainID(),
		Nonce:     nonce,
		GasTipCap: tip,
		GasFeeCap: feeCap,
		Gas:       gas,
		To:        to,
		Data:      data,
	})
	if err != nil {
		return nil, err
	}
	// Straight into the pool, waiting for promotion: over RPC the pool
	// promotes in the background, and a block sealed right after can miss
	// the transaction.
	if err := c.eth.TxPool().Add([]*types.Transaction{tx}, true)[0]; err != nil {
		return nil, err
	}
	return tx, nil
}

// head returns the number of the newest block.
func (c *evmChain) head() uint64 {
	return c.eth.BlockChain().CurrentBlock().Number.Uint64()
}

// commit seals one block and checks that the head moved up by one: the
// simulated beacon only logs its failures.
func (c *evmChain) commit() error {
	before := c.head()
	c.beacon.Commit()
	if after := c.head(); after != before+1 {
		return fmt.Errorf("sealing block %d failed (head is %d)", before+1, after)
	}
	return nil
}

// mineAndCheck seals one block and checks that every tx is in it with the
// expected receipt status (1, or 0 when wantSuccess is false).
func (c *evmChain) mineAndCheck(ctx context.Context, txs []*types.Transaction, wantSuccess bool) error {
	if err := c.commit(); err != nil {
		c.eth.TxPool().Clear() // don't leave the transactions for the next block
		return err
	}
	head := c.head()
	for _, tx := range txs {
		r, err := c.client.TransactionReceipt(ctx, tx.Hash())
		if err != nil {
			c.eth.TxPool().Clear()
			return fmt.Errorf("transaction %s was not mined: %w", tx.Hash().Hex(), err)
		}
		if r.BlockNumber.Uint64() != head {
			return fmt.Errorf("transaction %s mined in block %d, want %d", tx.Hash().Hex(), r.BlockNumber, head)
		}
		if ok := r.Status == types.ReceiptStatusSuccessful; ok != wantSuccess {
			return fmt.Errorf("transaction %s: receipt status %d (gas used %d of %d)", tx.Hash().Hex(), r.Status, r.GasUsed, tx.Gas())
		}
	}
	return nil
}

// status implements chain.
func (c *evmChain) status() NetworkStatus {
	head := c.head() // no lock: the head is atomic, and a long Mine must not block status
	tokens := make(map[paywatch.Token]string, len(c.tokens))
	for t, a := range c.tokens {
		tokens[t] = a.Hex()
	}
	return NetworkStatus{
		Network: c.info.Network,
		ChainID: c.info.ChainID,
		Head:    head,
		RPCURL:  c.url,
		Tokens:  tokens,
	}
}

// transfer implements chain.
func (c *evmChain) transfer(ctx context.Context, reqs []TransferRequest, failed bool) ([]TransferResult, error) {
	type parsed struct {
		to     common.Address
		amount paywatch.Amount
		from   account
	}
	ps := make([]parsed, len(reqs))
	for i, req := range reqs {
		to, amount, from, err := parseRequest(paywatch.FamilyEVM, req)
		if err != nil {
			return nil, err
		}
		ps[i] = parsed{common.HexToAddress(to), amount, from}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	nonces := map[common.Address]uint64{}
	var txs []*types.Transaction
	for i, req := range reqs {
		p := ps[i]
		nonce, ok := nonces[p.from.addr]
		if !ok {
			n, err := c.client.PendingNonceAt(ctx, p.from.addr)
			if err != nil {
				c.eth.TxPool().Clear()
				return nil, err
			}
			nonce = n
		}
		token := c.tokens[req.Token]
		var data []byte
		var gas uint64
		var err error
		if failed {
			// transferFrom without an allowance always reverts.
			data, err = testTokenABI.Pack("transferFrom", p.from.addr, p.to, p.amount.Units())
			gas = failedTransferGas
		} else {
			data, err = testTokenABI.Pack("transfer", p.to, p.amount.Units())
		}
		if err != nil {
			return nil, err
		}
		tx, err := c.send(ctx, p.from, nonce, &token, data, gas)
		if err != nil {
			c.eth.TxPool().Clear() // all or nothing
			if strings.Contains(err.Error(), "execution reverted") {
				return nil, paywatch.Errorf(paywatch.EINVALID, "transfer %d of %s %s from %s: %s",
					i+1, p.amount, req.Token, p.from.addr.Hex(), revertReason(err))
			}
			return nil, err
		}
		nonces[p.from.addr] = nonce + 1
		txs = append(txs, tx)
	}
	if err := c.mineAndCheck(ctx, txs, !failed); err != nil {
		return nil, fmt.Errorf("%s: %w", c.info.Network, err)
	}
	head := c.head()
	out := make([]TransferResult, len(reqs))
	for i, req := range reqs {
		out[i] = TransferResult{
			TxHash:      txs[i].Hash().Hex(),
			BlockNumber: head,
			Network:     req.Network,
			Token:       req.Token,
			From:        ps[i].from.addr.Hex(),
			To:          ps[i].to.Hex(),
			Amount:      ps[i].amount.String(),
		}
	}
	return out, nil
}

// revertReason turns "execution reverted: TestToken: insufficient balance"
// into "insufficient balance".
func revertReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "TestToken: "); i >= 0 {
		return msg[i+len("TestToken: "):]
	}
	return msg
}

// mine implements chain.
func (c *evmChain) mine(ctx context.Context, count int) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range count {
		if err := ctx.Err(); err != nil {
			return c.head(), err
		}
		if err := c.commit(); err != nil {
			return c.head(), fmt.Errorf("%s: %w", c.info.Network, err)
		}
	}
	return c.head(), nil
}

// close implements chain.
func (c *evmChain) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.client.Close()
	err := c.beacon.Stop()
	return errors.Join(err, c.stack.Close())
}
