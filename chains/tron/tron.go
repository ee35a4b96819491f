// Package tron is the chains.Client of TRC20: a Tron full node's Wallet
// API, over gRPC (gotron-sdk's protobufs; plaintext or TLS) or over the
// FullNode HTTP API (as java-tron and TronGrid serve it), chosen per
// endpoint by its URL (node.go). One list of endpoints may mix them.
//
// Tron's API has no log filter, so a scan reads whole blocks: per batch
// of at most 100 blocks one GetBlockByLimitNext (block ids and transaction
// ids) plus one GetTransactionInfoByBlockNum per block that has transactions
// (the logs), a few in flight at once. The cost per block is the same whatever the number of
// watched addresses, and the caller matches recipients itself.
//
// A node must answer a block's transaction infos in full: one that returns
// fewer infos than the block has transactions (no transaction history, or
// lagging behind its own blocks) fails the call like an unreachable node,
// so it fails over to the next endpoint or the scan retries the batch,
// rather than reading the block as one without transfers.
//
// Only successful transactions count: TransactionInfo.Result SUCESS (sic)
// and Receipt.Result SUCCESS. Log addresses and topic addresses are 20 bytes
// without the 0x41 prefix, as java-tron reports them.
package tron

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// TransferTopic is topic 0 of the TRC-20 (ERC-20) Transfer event.
var TransferTopic = crypto.Keccak256([]byte("Transfer(address,address,uint256)"))

// callTimeout bounds one gRPC call when the caller's context has no earlier
// deadline.
const callTimeout = 30 * time.Second

// constantCaller is the owner address of read-only contract calls: the
// zero account, as TronGrid's examples use.
var constantCaller = append([]byte{0x41}, make([]byte, 20)...)

// errEmptyHead is a node's empty answer to a head query.
var errEmptyHead = errors.New("node returned an empty block for its head")

// Client reads TRC20. It is safe for concurrent use.
type Client struct {
	network     paywatch.Network
	batch       uint64
	concurrency int
	contracts   map[[20]byte]chainapi.Contract
	eps         *chainapi.Endpoints[node]
	transports  []string // per endpoint, for Check
	calls       atomic.Uint64
}

var (
	_ chainapi.Client             = (*Client)(nil)
	_ chainapi.AddressRangeReader = (*Client)(nil)
)

// Dial returns a Client for cfg. cfg.URLs are full nodes, each over gRPC
// or the HTTP API as its URL says (parseEndpoint), tried in order with
// failover; cfg.Headers go with each endpoint's calls. It does no I/O.
func Dial(_ context.Context, cfg chainapi.Config) (*Client, error) {
	cfg, contracts, err := chainapi.Prepare(cfg, paywatch.FamilyTron)
	if err != nil {
		return nil, err
	}
	c := &Client{
		network:     cfg.Network,
		batch:       cfg.MaxBlockRange,
		concurrency: cfg.Concurrency,
		contracts:   make(map[[20]byte]chainapi.Contract, len(contracts)),
	}
	for _, ct := range contracts {
		b, err := paywatch.TronAddressBytes(ct.Address)
		if err != nil {
			return nil, fmt.Errorf("tron: %s contract: %w", ct.Token, err)
		}
		c.contracts[[20]byte(b[1:])] = ct
	}
	var nodes []node
	var names []chainapi.Redactor
	for i, raw := range cfg.URLs {
		name := chainapi.NewRedactor(raw, cfg.HeadersOf(i))
		n, err := c.dialNode(cfg, i, name)
		if err != nil {
			closeAll(nodes)
			return nil, fmt.Errorf("tron: %s %w", cfg.Network, name.Error(err))
		}
		nodes = append(nodes, n)
		names = append(names, name)
		ep, _ := parseEndpoint(raw, name.Name())
		c.transports = append(c.transports, ep.transport)
	}
	c.eps = chainapi.NewEndpoints(nodes, names, cfg.Observe)
	return c, nil
}

// Network returns TRC20.
func (c *Client) Network() paywatch.Network { return c.network }

// Calls returns the number of gRPC and HTTP calls issued so far.
func (c *Client) Calls() uint64 { return c.calls.Load() }

// Close closes the connections of every endpoint.
func (c *Client) Close() { closeAll(c.eps.All()) }

// Head returns the number of the newest block.
func (c *Client) Head(ctx context.Context) (uint64, error) {
	b, err := c.nowBlock(ctx)
	if err != nil {
		return 0, err
	}
	return b.num, nil
}

// nowBlock returns the newest block, its id checked.
func (c *Client) nowBlock(ctx context.Context) (blockHead, error) {
	var b blockHead
	err := c.do(ctx, func(ctx context.Context, n node) (err error) {
		b, err = n.nowBlock(ctx)
		if err == nil {
			err = checkBlockID(b.id, b.num)
		}
		return err
	})
	if err != nil {
		return blockHead{}, fmt.Errorf("tron: head: %w", err)
	}
	return b, nil
}

// BlockHash returns the id of block n as 64 lowercase hex digits.
func (c *Client) BlockHash(ctx context.Context, n uint64) (string, error) {
	b, err := c.blockAt(ctx, n)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b.id), nil
}

// checkBlockID verifies that id is a block id of height n: 32 bytes whose
// first 8 are n, big-endian.
func checkBlockID(id []byte, n uint64) error {
	if len(id) != 32 {
		return fmt.Errorf("tron: block %d: id has %d bytes, want 32", n, len(id))
	}
	var num uint64
	for _, b := range id[:8] {
		num = num<<8 | uint64(b)
	}
	if num != n {
		return fmt.Errorf("tron: block %d: node returned block %d", n, num)
	}
	return nil
}

// block is what a scan needs of one block.
type block struct {
	num uint64
	id  string
	txs map[string]bool // transaction ids, hex
}

// Transfers returns the successful TRC20 transfers of the configured
// contracts in blocks [from, to], in chain order.
func (c *Client) Transfers(ctx context.Context, from, to uint64) ([]chainapi.Transfer, error) {
	var out []chainapi.Transfer
	for start := from; start <= to; {
		end := to
		if to-start >= c.batch {
			end = start + c.batch - 1
		}
		ts, err := c.batchTransfers(ctx, start, end)
		if err != nil && end > start && ctx.Err() == nil &&
			(errors.Is(err, chainapi.ErrRangeTooLarge) || errors.Is(err, context.DeadlineExceeded)) {
			// Busy mainnet blocks run to ~1 KB of JSON per transaction: a
			// batch whose answer is over the size cap or outlasts the call's
			// timeout is read in halves, so that catching up after an
			// outage can't stall on it.
			to := end
			end = start + (end-start)/2
			var rest []chainapi.Transfer
			if ts, err = c.Transfers(ctx, start, end); err == nil {
				rest, err = c.Transfers(ctx, end+1, to)
				ts = append(ts, rest...)
				end = to
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
		if end == to {
			break
		}
		start = end + 1
	}
	return out, nil
}

// batchTransfers reads blocks [from, to] (at most 100): their ids in one
// call, then their transaction infos, concurrently.
func (c *Client) batchTransfers(ctx context.Context, from, to uint64) ([]chainapi.Transfer, error) {
	blocks, err := c.blocks(ctx, from, to)
	if err != nil {
		return nil, err
	}
	perBlock := make([][]chainapi.Transfer, len(blocks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.concurrency)
	for i, b := range blocks {
		if len(b.txs) == 0 {
			continue // nothing to log; idle devnet and testnet blocks are mostly empty
		}
		g.Go(func() (err error) {
			perBlock[i], err = c.blockTransfers(gctx, b)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []chainapi.Transfer
	for _, ts := range perBlock {
		out = append(out, ts...)
	}
	return out, nil
}

// blocks returns blocks [from, to] (at most 100) from one
// GetBlockByLimitNext, checking that the node returned all of them in order.
func (c *Client) blocks(ctx context.Context, from, to uint64) ([]block, error) {
	var got []blockHead
	err := c.do(ctx, func(ctx context.Context, n node) (err error) {
		got, err = n.blockRange(ctx, from, to)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tron: blocks %d-%d: %w", from, to, err)
	}
	if uint64(len(got)) != to-from+1 {
		return nil, fmt.Errorf("tron: blocks %d-%d: node returned %d blocks (is %d past its head?): %w",
			from, to, len(got), to, chainapi.ErrBlockNotFound)
	}
	out := make([]block, len(got))
	for i, b := range got {
		n := from + uint64(i)
		if err := checkBlockID(b.id, n); err != nil {
			return nil, err
		}
		txs := make(map[string]bool, len(b.txids))
		for _, id := range b.txids {
			txs[hex.EncodeToString(id)] = true
		}
		out[i] = block{num: n, id: hex.EncodeToString(b.id), txs: txs}
	}
	return out, nil
}

// errMissingInfos means a node answered GetTransactionInfoByBlockNum with
// fewer infos than the block has transactions: a node that keeps no
// transaction history, or a lagging one that has the block but not yet its
// infos. Reading nothing there would pass the block's transfers by, so it
// is an endpoint failure: the call fails over to the next endpoint, and
// with none left the caller retries later.
var errMissingInfos = errors.New("node returned fewer transaction infos than the block has transactions")

// blockInfos returns the transaction infos of block b, in block order: one
// for each of its transactions, or an error.
func (c *Client) blockInfos(ctx context.Context, b block) ([]txInfo, error) {
	var infos []txInfo
	err := c.do(ctx, func(ctx context.Context, n node) (err error) {
		infos, err = n.blockInfos(ctx, b.num)
		if err != nil {
			return err
		}
		// Every transaction's info, counted by id (a repeated info must
		// not stand in for a missing one); inside the attempt, so that
		// another endpoint is asked.
		seen := make(map[string]bool, len(infos))
		for _, info := range infos {
			if id := hex.EncodeToString(info.id); b.txs[id] {
				seen[id] = true
			}
		}
		if len(seen) < len(b.txs) {
			return fmt.Errorf("%w: %d of %d", errMissingInfos, len(seen), len(b.txs))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tron: transaction infos of block %d: %w", b.num, err)
	}
	return infos, nil
}

// decodeBlock returns the transfers of the configured contracts in one
// block's transaction infos, numbering logs across the whole block. If only
// is set it keeps the transfers of that transaction alone.
func (c *Client) decodeBlock(b block, infos []txInfo, only string) []chainapi.Transfer {
	var out []chainapi.Transfer
	var index uint32
	for _, info := range infos {
		txid := hex.EncodeToString(info.id)
		ok := info.ok && (only == "" || txid == only)
		for _, l := range info.logs {
			i := index
			index++
			if !ok {
				continue
			}
			if t, ok := c.decodeLog(l); ok {
				t.TxHash = txid
				t.LogIndex = i
				t.BlockNumber = b.num
				t.BlockHash = b.id
				out = append(out, t)
			}
		}
	}
	return out
}

// decodeLog decodes a Transfer log of a configured contract; it fills
// everything but the transaction and block fields.
func (c *Client) decodeLog(l txLog) (chainapi.Transfer, bool) {
	addr := l.address
	if len(addr) == 21 && addr[0] == 0x41 { // tolerate nodes that add the prefix
		addr = addr[1:]
	}
	if len(addr) != 20 {
		return chainapi.Transfer{}, false
	}
	ct, ok := c.contracts[[20]byte(addr)]
	topics := l.topics
	if !ok || len(topics) != 3 || !bytes.Equal(topics[0], TransferTopic) ||
		len(topics[1]) != 32 || len(topics[2]) != 32 || len(l.data) != 32 {
		return chainapi.Transfer{}, false
	}
	return chainapi.Transfer{
		Network:  c.network,
		Token:    ct.Token,
		Contract: ct.Address,
		From:     paywatch.TronAddressFromEVMBytes(topics[1][12:]),
		To:       paywatch.TronAddressFromEVMBytes(topics[2][12:]),
		Amount:   new(big.Int).SetBytes(l.data),
	}, true
}

// TransactionTransfers returns the TRC20 transfers of one transaction. found
// is false when the node knows no such transaction (java-tron answers an
// empty TransactionInfo), when it failed, or when its block no longer
// contains it.
//
// Besides GetTransactionInfoById it reads the transaction's block (its id)
// and the block's transaction infos (to number the logs as Transfers does).
func (c *Client) TransactionTransfers(ctx context.Context, txHash string) ([]chainapi.Transfer, bool, error) {
	norm, err := paywatch.NormalizeTxHash(c.network, txHash)
	if err != nil {
		return nil, false, err
	}
	id, _ := hex.DecodeString(norm)
	var info txInfo
	var found bool
	err = c.do(ctx, func(ctx context.Context, n node) (err error) {
		info, found, err = n.txInfo(ctx, id)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("tron: transaction %s: %w", norm, err)
	}
	if !found || !bytes.Equal(info.id, id) || !info.ok || info.blockNumber <= 0 {
		return nil, false, nil
	}
	n := uint64(info.blockNumber)
	blocks, err := c.blocks(ctx, n, n)
	if errors.Is(err, chainapi.ErrBlockNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !blocks[0].txs[norm] {
		return nil, false, nil // reorged out since the info was read
	}
	infos, err := c.blockInfos(ctx, blocks[0])
	if err != nil {
		return nil, false, err
	}
	return c.decodeBlock(blocks[0], infos, norm), true, nil
}

// AddressTransfers returns the transfers to addr in blocks [from, head].
// Tron's gRPC API cannot filter by address, so this reads every block of
// the range like Transfers: about one call per block.
func (c *Client) AddressTransfers(ctx context.Context, addr string, from uint64) ([]chainapi.Transfer, error) {
	head, err := c.Head(ctx)
	if err != nil {
		return nil, err
	}
	if from > head {
		return nil, nil
	}
	return c.AddressTransfersIn(ctx, addr, from, head)
}

// AddressTransfersIn returns the transfers to addr in blocks [from, to],
// reading every block of the range like Transfers.
func (c *Client) AddressTransfersIn(ctx context.Context, addr string, from, to uint64) ([]chainapi.Transfer, error) {
	norm, err := paywatch.NormalizeAddress(paywatch.FamilyTron, addr)
	if err != nil {
		return nil, err
	}
	if from > to {
		return nil, nil
	}
	all, err := c.Transfers(ctx, from, to)
	if err != nil {
		return nil, err
	}
	var out []chainapi.Transfer
	for _, t := range all {
		if t.To == norm {
			out = append(out, t)
		}
	}
	return out, nil
}

// do runs call with failover over the endpoints, bounding each attempt by
// callTimeout.
func (c *Client) do(ctx context.Context, call func(context.Context, node) error) error {
	return c.eps.Do(ctx, classify, func(n node) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		err := call(cctx, n)
		if status.Code(err) == codes.ResourceExhausted {
			return fmt.Errorf("%w: %w", chainapi.ErrRateLimited, err)
		}
		return err
	})
}

// classify decides whether an error moves on to the next endpoint:
// unreachable, overloaded or broken nodes do; answers about the request
// (invalid argument, not found) do not.
func classify(err error) chainapi.Failure {
	if errors.Is(err, chainapi.ErrRateLimited) {
		return chainapi.Limited
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.OutOfRange, codes.FailedPrecondition,
		codes.AlreadyExists, codes.Canceled:
		return chainapi.Final
	default: // Unavailable, DeadlineExceeded, Internal, Unknown, Unimplemented, and every HTTP status but 200:
		// java-tron answers a request it can't take with 200 and {"Error": ...}, so a 4xx comes from
		// the endpoint's own setup (a refused key, a proxy, a retired path), which another may not share
		return chainapi.Failover
	}
}

// validPort reports whether p is a TCP port number.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}

// closeAll closes the endpoints' connections.
func closeAll(nodes []node) {
	for _, n := range nodes {
		n.close()
	}
}
