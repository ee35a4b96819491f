// Package devnet runs in-process development chains for every network, so
// the service, its tests and a merchant's integration work with no internet
// (operations.md §4). They speak the real protocols on loopback, so the
// service reads them with the same chains clients it uses for real networks:
//
//   - BEP20, ERC20, POLYGON, ARBITRUM and BASE are each a go-ethereum node
//     (the engine of ethclient/simulated: an in-memory database, no peers,
//     blocks sealed on demand) with its mainnet chain id (56, 1, 137,
//     42161, 8453), serving JSON-RPC over HTTP on 127.0.0.1. The test
//     tokens of the network's row (contracts/TestToken.sol, at the row's
//     decimals: 18 for every BEP20 token and for DAI, 6 otherwise) are
//     deployed at start by the faucet, each at the nonce of its place in
//     paywatch.TokenSlots (a chain without it spends that nonce on an empty
//     transfer), so a token has one address on every EVM devnet: USDT
//     0x5FbDB2315678afecb367f032d93F642f64180aa3, USDC
//     0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512, DAI
//     0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0, PYUSD
//     0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9. Block 1 deploys them,
//     block 2 funds the other dev accounts.
//   - TRC20 is a gRPC server implementing the part of the Tron Wallet API
//     that gotron-sdk's client and the scanner use, behaving as java-tron
//     does. It serves USDT only (6 decimals) at TronUSDTContract
//     (TJhSSbZ8dVqtEiLYgva1WWcV4R4NkRCARH) and reports
//     chain id 0 (Tron has no EIP-155 chain id; paywatch.LookupNetwork says
//     0 too).
//
// Each chain makes a block every Config.BlockInterval and one more whenever
// a transfer is sent, so a transfer is mined at once in a block of its own
// and its result carries its block number. The dev accounts are listed in
// Accounts.
package devnet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/paywatch/paywatch"
)

// Config configures Start.
type Config struct {
	// BlockInterval is how often every chain makes a block; 0 makes no
	// automatic blocks (tests mine explicitly). Start's callers usually set
	// it from PAYWATCH_DEVNET_BLOCK_INTERVAL; DefaultBlockInterval is 1s.
	BlockInterval time.Duration
	// BlockIntervals overrides BlockInterval per network (benchmarks run
	// each chain at its mainnet block time).
	BlockIntervals map[paywatch.Network]time.Duration
	// BlockJitter, between 0 and 1, draws each interval uniformly from
	// interval × [1 − BlockJitter, 1 + BlockJitter], as real chains vary;
	// 0 keeps a steady pace.
	BlockJitter float64
	// Networks lists the chains to run; nil runs every network.
	Networks []paywatch.Network
	// LogRangeLimit, if set, makes the EVM chains refuse eth_getLogs over
	// more blocks than this, as public providers do ("exceed maximum block
	// range"). Tests use it to exercise the clients' range halving.
	LogRangeLimit uint64
	// RequireHeaders, if set, makes the TRC20 chain refuse calls without
	// these headers (gRPC metadata, or HTTP headers on its HTTP API), as
	// TronGrid refuses calls without a valid TRON-PRO-API-KEY; tests show
	// a configured header reaching the node.
	RequireHeaders http.Header
	// Logger receives the chains' notable events; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultBlockInterval is the block interval of `paywatch dev`.
const DefaultBlockInterval = time.Second

// NetworkStatus describes one running devnet chain (GET /devnet).
type NetworkStatus struct {
	Network paywatch.Network
	// ChainID is the EIP-155 chain id; 0 for TRC20.
	ChainID int64
	// Head is the number of the newest block.
	Head uint64
	// RPCURL is what chains.Config.URLs takes: an http:// JSON-RPC URL for
	// EVM chains, a gRPC host:port for TRC20.
	RPCURL string
	// HTTPURL is the TRC20 chain's FullNode HTTP API (http://host:port, as
	// java-tron serves it on 8090), which chains.Config.URLs takes too;
	// empty for EVM chains.
	HTTPURL string
	// Tokens maps each token to its contract (EIP-55 or base58).
	Tokens map[paywatch.Token]string
}

// TransferRequest asks for a token transfer on a devnet chain.
type TransferRequest struct {
	Network paywatch.Network
	Token   paywatch.Token
	// To is the recipient, any address of the network's family.
	To string
	// Amount is a positive decimal string in whole tokens, e.g. "10.5".
	Amount string
	// From is optional: empty sends from the faucet, otherwise it must be
	// one of Accounts.
	From string
	// Memo is optional (operations.md §9): on SOLANA the Solana Pay
	// reference added as a read-only account of the transfer, on TON the
	// transfer's text comment; the other chains refuse one.
	Memo string
	// Kind is optional, TON only (the other chains refuse one):
	// "forged_notification" has a contract that is not the recipient's
	// jetton wallet notify the owner of a transfer that never happened;
	// "lookalike_jetton" sends a look-alike jetton (its own master, its
	// metadata USDT's) instead of USDT.
	Kind string
}

// TransferResult describes a mined devnet transfer.
type TransferResult struct {
	TxHash      string // normalised as paywatch.NormalizeTxHash
	BlockNumber uint64
	Network     paywatch.Network
	Token       paywatch.Token
	From, To    string // normalised addresses
	Amount      string // display form, e.g. "10.50"
}

// chain is one running devnet chain.
type chain interface {
	status() NetworkStatus
	// transfer mines the transfers in one new block; failed makes them
	// fail on chain (TransferFailed).
	transfer(ctx context.Context, reqs []TransferRequest, failed bool) ([]TransferResult, error)
	mine(ctx context.Context, count int) (uint64, error)
	// reorg replaces the newest depth blocks; reinclude mines their
	// transactions again in one block after the new branch.
	reorg(ctx context.Context, depth int, reinclude bool) (uint64, []string, error)
	close() error
}

// Devnet is a set of running devnet chains. Its methods are safe for
// concurrent use.
type Devnet struct {
	order  []paywatch.Network
	chains map[paywatch.Network]chain
	log    *slog.Logger
	stop   context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	blocks blockLog
	runID  string
}

// RunID identifies this run of the devnet chains: random, drawn at Start.
// The chains live in memory and start from genesis, so their block
// numbers, and on the EVM chains their transaction hashes, repeat those of
// an earlier run; a service that keeps chain state in a database tells a
// new run's chains from the ones its rows came from by this id.
func (d *Devnet) RunID() string { return d.runID }

// starters start a devnet chain of each address family.
var starters = map[paywatch.Family]func(context.Context, paywatch.NetworkInfo, Config) (chain, error){
	paywatch.FamilyEVM: func(ctx context.Context, info paywatch.NetworkInfo, cfg Config) (chain, error) {
		return startEVM(ctx, info, cfg.LogRangeLimit)
	},
	paywatch.FamilyTron: func(_ context.Context, info paywatch.NetworkInfo, cfg Config) (chain, error) {
		return startTron(info, cfg.RequireHeaders)
	},
	paywatch.FamilySolana: func(_ context.Context, info paywatch.NetworkInfo, _ Config) (chain, error) {
		return startSolana(info.Network, DefaultSolanaMints(), solanaSkipEvery)
	},
	paywatch.FamilyTON: func(_ context.Context, info paywatch.NetworkInfo, _ Config) (chain, error) {
		return startTON(info.Network)
	},
}

// Start starts the chains of cfg and, if cfg.BlockInterval is set, their
// block producers. The chains stop when Close is called (not when ctx ends:
// ctx only bounds the start).
func Start(ctx context.Context, cfg Config) (*Devnet, error) {
	nets := cfg.Networks
	if nets == nil {
		for _, info := range paywatch.Networks() {
			nets = append(nets, info.Network)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("devnet: run id: %w", err)
	}
	d := &Devnet{chains: map[paywatch.Network]chain{}, log: logger, runID: hex.EncodeToString(id[:])}
	type started struct {
		c   chain
		err error
	}
	results := make([]started, len(nets))
	var wg sync.WaitGroup
	for i, n := range nets {
		info, ok := paywatch.LookupNetwork(n)
		if !ok {
			return nil, fmt.Errorf("devnet: unknown network %q", n)
		}
		if slices.Contains(nets[:i], n) {
			return nil, fmt.Errorf("devnet: network %s listed twice", n)
		}
		d.order = append(d.order, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := starters[info.Family](ctx, info, cfg)
			results[i] = started{c, err}
		}()
	}
	wg.Wait()
	var errs []error
	for i, r := range results {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("devnet: %s: %w", nets[i], r.err))
			continue
		}
		d.chains[nets[i]] = r.c
	}
	if len(errs) > 0 {
		d.closeChains()
		return nil, errors.Join(errs...)
	}
	pctx, cancel := context.WithCancel(context.Background())
	d.stop = cancel
	for _, n := range d.order {
		if every := cfg.interval(n); every > 0 {
			d.wg.Add(1)
			go d.produce(pctx, n, every, cfg.BlockJitter)
		}
	}
	return d, nil
}

// produce mines a block on network n every interval (with jitter, a drawn
// interval around it) until ctx ends. Blocks follow a schedule, so the time
// mining takes does not stretch the intervals.
func (d *Devnet) produce(ctx context.Context, n paywatch.Network, interval time.Duration, jitter float64) {
	defer d.wg.Done()
	c := d.chains[n]
	next := time.Now()
	for {
		next = next.Add(nextInterval(interval, jitter))
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			if h, err := c.mine(ctx, 1); err != nil {
				if ctx.Err() == nil {
					d.log.Warn("devnet: block production failed", "network", n, "error", err)
				}
			} else {
				d.blocks.record(n, h, h, time.Now())
			}
		}
	}
}

// Close stops the block producers and every chain.
func (d *Devnet) Close() error {
	var err error
	d.once.Do(func() {
		if d.stop != nil {
			d.stop()
		}
		d.wg.Wait()
		err = d.closeChains()
	})
	return err
}

// closeChains closes every started chain.
func (d *Devnet) closeChains() error {
	var errs []error
	for n, c := range d.chains {
		if err := c.close(); err != nil {
			errs = append(errs, fmt.Errorf("devnet: close %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Networks returns the status of every chain, in API network order.
func (d *Devnet) Networks() []NetworkStatus {
	out := make([]NetworkStatus, 0, len(d.order))
	for _, info := range paywatch.Networks() {
		if c, ok := d.chains[info.Network]; ok {
			out = append(out, c.status())
		}
	}
	return out
}

// Network returns the status of one chain; ok is false if it is not running.
func (d *Devnet) Network(n paywatch.Network) (NetworkStatus, bool) {
	c, ok := d.chains[n]
	if !ok {
		return NetworkStatus{}, false
	}
	return c.status(), true
}

// chain returns the chain of n, or an ENOTFOUND error.
func (d *Devnet) chain(n paywatch.Network) (chain, error) {
	c, ok := d.chains[n]
	if !ok {
		if _, err := paywatch.ParseNetwork(string(n)); err != nil {
			return nil, paywatch.Errorf(paywatch.ENOTFOUND, "%s", paywatch.ErrorMessage(err))
		}
		return nil, paywatch.Errorf(paywatch.ENOTFOUND, "no devnet chain for network %s", n)
	}
	return c, nil
}

// Transfer sends a token transfer and mines it at once in a new block. Bad
// input (unknown token, bad address or amount, From not a dev account,
// insufficient balance) gives a *paywatch.Error with code EINVALID, an
// unknown network one with ENOTFOUND.
func (d *Devnet) Transfer(ctx context.Context, req TransferRequest) (TransferResult, error) {
	rs, err := d.TransferBatch(ctx, []TransferRequest{req})
	if err != nil {
		return TransferResult{}, err
	}
	return rs[0], nil
}

// TransferBatch sends several transfers on one network and mines them all
// in one new block, in order; benchmarks use it to fill blocks with
// realistic transfer counts. Either all are mined or none.
func (d *Devnet) TransferBatch(ctx context.Context, reqs []TransferRequest) ([]TransferResult, error) {
	return d.transfer(ctx, reqs, false)
}

// TransferFailed mines a transfer that fails on chain. It exists for tests
// of the rule that failed transactions never count, and only on devnets:
//
//   - on EVM chains it sends transferFrom(from, to, amount) without an
//     allowance, which reverts: the receipt has status 0 and no logs;
//   - on TRC20 the TransactionInfo says Result FAILED and Receipt.Result
//     REVERT, as java-tron reports a reverted call, but deliberately keeps
//     the Transfer log a successful call would have had (java-tron drops
//     it), so that a client which forgot to check the result would count it.
//
// No balance changes either way.
func (d *Devnet) TransferFailed(ctx context.Context, req TransferRequest) (TransferResult, error) {
	rs, err := d.transfer(ctx, []TransferRequest{req}, true)
	if err != nil {
		return TransferResult{}, err
	}
	return rs[0], nil
}

// transfer checks that reqs are on one network and hands them to its chain.
func (d *Devnet) transfer(ctx context.Context, reqs []TransferRequest, failed bool) ([]TransferResult, error) {
	if len(reqs) == 0 {
		return nil, paywatch.Errorf(paywatch.EINVALID, "no transfers")
	}
	n := reqs[0].Network
	for _, r := range reqs[1:] {
		if r.Network != n {
			return nil, paywatch.Errorf(paywatch.EINVALID, "a batch must be on one network")
		}
	}
	c, err := d.chain(n)
	if err != nil {
		return nil, err
	}
	_, ton := c.(*tonChain)
	for _, r := range reqs {
		if r.Kind != "" && !ton {
			return nil, paywatch.Errorf(paywatch.EINVALID, "kind: %s transfers have no kinds", n)
		}
	}
	res, err := c.transfer(ctx, reqs, failed)
	if err == nil && len(res) > 0 {
		d.blocks.record(n, res[0].BlockNumber, res[0].BlockNumber, time.Now())
	}
	return res, err
}

// MaxMine is the most blocks one Mine call makes.
const MaxMine = 10_000

// MaxReorgDepth is the deepest reorg Reorg makes.
const MaxReorgDepth = 256

// Mine makes count (1..MaxMine) empty blocks on network n at once and
// returns the new head.
func (d *Devnet) Mine(ctx context.Context, n paywatch.Network, count int) (uint64, error) {
	c, err := d.chain(n)
	if err != nil {
		return 0, err
	}
	if count < 1 || count > MaxMine {
		return 0, paywatch.Errorf(paywatch.EINVALID, "count must be between 1 and %d", MaxMine)
	}
	h, err := c.mine(ctx, count)
	if err == nil {
		d.blocks.record(n, h-uint64(count)+1, h, time.Now())
	}
	return h, err
}

// Reorg replaces the newest depth blocks of network n with a longer branch
// of depth+1 empty blocks, as a real reorg does, and returns the new head
// and the hashes of the transactions that were in the replaced blocks (all
// of them token transfers). Those transactions are gone for good: they are
// not mined again (ReorgReinclude mines them again). The blocks made at
// start (token deployment and funding on EVM chains, genesis everywhere)
// cannot be replaced.
func (d *Devnet) Reorg(ctx context.Context, n paywatch.Network, depth int) (uint64, []string, error) {
	return d.reorg(ctx, n, depth, false)
}

// ReorgReinclude is Reorg followed by what happens when the replaced
// blocks' transactions are still in the mempool: they are mined again, the
// same signed transactions with the same hashes and in the same order, in
// one block right after the new branch's tip, which is the head it
// returns (the old head + 2). dropped lists them, as Reorg's does. That
// block is mined even when there is nothing to mine again, so the head
// moves the same way every time.
func (d *Devnet) ReorgReinclude(ctx context.Context, n paywatch.Network, depth int) (uint64, []string, error) {
	return d.reorg(ctx, n, depth, true)
}

// reorg checks a reorg's arguments and hands it to the chain.
func (d *Devnet) reorg(ctx context.Context, n paywatch.Network, depth int, reinclude bool) (uint64, []string, error) {
	c, err := d.chain(n)
	if err != nil {
		return 0, nil, err
	}
	if depth < 1 || depth > MaxReorgDepth {
		return 0, nil, paywatch.Errorf(paywatch.EINVALID, "depth must be between 1 and %d", MaxReorgDepth)
	}
	h, dropped, err := c.reorg(ctx, depth, reinclude)
	if err == nil {
		// The new branch: depth + 1 blocks, and the block that mines the
		// dropped transactions again.
		from := h - uint64(depth)
		if reinclude {
			from--
		}
		d.blocks.record(n, from, h, time.Now())
	}
	return h, dropped, err
}

// parseRequest validates the parts of a transfer request every chain
// checks the same way: token, recipient, amount and sender. decimals are
// the token's.
func parseRequest(f paywatch.Family, req TransferRequest) (to string, units paywatch.Amount, from account, err error) {
	if err := paywatch.ValidatePair(req.Network, req.Token); err != nil {
		return "", paywatch.Amount{}, account{}, err
	}
	if req.Memo != "" {
		return "", paywatch.Amount{}, account{}, paywatch.Errorf(paywatch.EINVALID, "memo: %s transfers carry none (a memo is for SOLANA and TON)", req.Network)
	}
	to, err = paywatch.NormalizeAddress(f, req.To)
	if err != nil {
		return "", paywatch.Amount{}, account{}, paywatch.Errorf(paywatch.EINVALID, "to: %s", paywatch.ErrorMessage(err))
	}
	units, err = paywatch.ParseAmount(req.Amount, paywatch.Decimals(req.Network, req.Token))
	if err != nil {
		return "", paywatch.Amount{}, account{}, err
	}
	from, err = findAccount(f, req.From)
	if err != nil {
		return "", paywatch.Amount{}, account{}, err
	}
	return to, units, from, nil
}
