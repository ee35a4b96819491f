package devnet

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/api"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/core"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/paywatch/paywatch"
)

// TronUSDTContract is the address of USDT on the TRC20 devnet: the 20 bytes
// of the EVM devnets' USDT (0x5FbDB2315678afecb367f032d93F642f64180aa3)
// with Tron's 0x41 prefix. Nothing is deployed there; the devnet node
// reports transfers of it as java-tron reports a TRC20 contract's.
const TronUSDTContract = "TJhSSbZ8dVqtEiLYgva1WWcV4R4NkRCARH"

// tronBlockLimit is java-tron's BLOCK_LIMIT_NUM: GetBlockByLimitNext
// answers at most 100 blocks.
const tronBlockLimit = 100

// Energy and bandwidth figures of a typical USDT transfer, reported in
// receipts so they look like java-tron's.
const (
	tronTransferEnergy = 29_631
	tronTransferNet    = 345
	tronFeeLimit       = 100_000_000 // 100 TRX in sun
	tronBlockVersion   = 31
)

// tronTransferSelector is the 4-byte selector of transfer(address,uint256).
var tronTransferSelector = crypto.Keccak256([]byte("transfer(address,uint256)"))[:4]

// tronTransferTopic is topic 0 of the Transfer event.
var tronTransferTopic = crypto.Keccak256([]byte("Transfer(address,address,uint256)"))

// tronTx is one devnet TRC20 transfer.
type tronTx struct {
	id       [32]byte
	tx       *core.Transaction
	from, to common.Address
	amount   *big.Int
	failed   bool
}

// tronBlock is one devnet block.
type tronBlock struct {
	num    uint64
	id     [32]byte
	header *core.BlockHeader
	txs    []*tronTx
}

// tronChain is the TRC20 devnet: an in-memory chain behind a gRPC server
// that implements the Wallet API calls the clients use (GetNowBlock(2),
// GetBlockByNum(2), GetBlockByLimitNext(2), GetBlockByLatestNum2,
// GetBlockById, GetTransactionById, GetTransactionInfoById,
// GetTransactionInfoByBlockNum) the way java-tron answers them: unknown
// blocks and transactions give empty messages, not errors; block ids are
// sha256 of the header with the first 8 bytes replaced by the block number;
// transaction ids are sha256 of the raw transaction; log addresses have 20
// bytes without the 0x41 prefix.
type tronChain struct {
	api.UnimplementedWalletServer

	info     paywatch.NetworkInfo
	contract common.Address // 20 bytes, no 0x41
	srv      *grpc.Server
	addr     string
	httpSrv  *http.Server
	httpURL  string

	mu       sync.RWMutex
	blocks   []*tronBlock // index = number
	txs      map[[32]byte]*tronTx
	txBlock  map[[32]byte]uint64
	balances map[common.Address]*big.Int
	lastTime int64 // ms; every block and transaction gets a later one
}

// startTron starts the TRC20 devnet node: its gRPC Wallet API and its
// FullNode HTTP API, each on a free loopback port. Calls without the
// headers in require (Config.RequireHeaders) are refused: gRPC with
// Unauthenticated, HTTP with 401 and TronGrid's {"Error": ...}.
func startTron(info paywatch.NetworkInfo, require http.Header) (*tronChain, error) {
	contract, err := paywatch.TronAddressBytes(TronUSDTContract)
	if err != nil {
		return nil, err
	}
	c := &tronChain{
		info:     info,
		contract: common.BytesToAddress(contract[1:]),
		txs:      map[[32]byte]*tronTx{},
		txBlock:  map[[32]byte]uint64{},
		balances: map[common.Address]*big.Int{},
	}
	unit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(paywatch.Decimals(info.Network, paywatch.USDT))), nil)
	c.balances[accounts[0].addr] = new(big.Int).Mul(unit, big.NewInt(1e12))
	for _, a := range accounts[1:] {
		c.balances[a.addr] = new(big.Int).Mul(unit, big.NewInt(devAccountFunding))
	}
	c.appendBlock(nil) // genesis

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.addr = lis.Addr().String()
	c.srv = grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		for k, vs := range require {
			if got := md.Get(k); len(got) == 0 || got[0] != vs[0] {
				return nil, status.Errorf(codes.Unauthenticated, "missing or wrong %s", k)
			}
		}
		return h(ctx, req)
	}))
	api.RegisterWalletServer(c.srv, c)
	go c.srv.Serve(lis) //nolint:errcheck // Serve returns when Stop closes the listener

	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.srv.Stop()
		return nil, err
	}
	c.httpURL = "http://" + hl.Addr().String()
	handler := c.httpHandler()
	c.httpSrv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range require {
			if r.Header.Get(k) != vs[0] {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"Error":"ApiKey not exists"}` + "\n"))
				return
			}
		}
		handler.ServeHTTP(w, r)
	})}
	go c.httpSrv.Serve(hl) //nolint:errcheck // Serve returns when Close closes the listener
	return c, nil
}

// now returns a timestamp in ms later than every one given out before, so
// that ids of blocks and transactions made in the same millisecond (or
// replacing each other in a reorg) differ.
func (c *tronChain) now() int64 {
	t := time.Now().UnixMilli()
	if t <= c.lastTime {
		t = c.lastTime + 1
	}
	c.lastTime = t
	return t
}

// head returns the newest block. Callers hold mu.
func (c *tronChain) head() *tronBlock { return c.blocks[len(c.blocks)-1] }

// appendBlock makes the next block with txs. Callers hold mu (or own c).
func (c *tronChain) appendBlock(txs []*tronTx) *tronBlock {
	num := uint64(len(c.blocks))
	var parent [32]byte
	if num > 0 {
		parent = c.head().id
	}
	root := sha256.New()
	for _, tx := range txs {
		root.Write(tx.id[:])
	}
	ts := int64(0) // genesis, as on mainnet: so its id names the devnet (tron.DevnetGenesisID)
	if num > 0 {
		ts = c.now()
	}
	raw := &core.BlockHeaderRaw{
		Timestamp:      ts,
		TxTrieRoot:     root.Sum(nil),
		ParentHash:     parent[:],
		Number:         int64(num),
		WitnessAddress: tronAddress(accounts[0].addr),
		Version:        tronBlockVersion,
	}
	id := sha256.Sum256(marshal(raw))
	binary.BigEndian.PutUint64(id[:8], num)
	sig, err := crypto.Sign(crypto.Keccak256(id[:]), accounts[0].key)
	if err != nil {
		panic(err) // a valid key always signs
	}
	b := &tronBlock{num: num, id: id, header: &core.BlockHeader{RawData: raw, WitnessSignature: sig}, txs: txs}
	c.blocks = append(c.blocks, b)
	for _, tx := range txs {
		c.txs[tx.id] = tx
		c.txBlock[tx.id] = num
	}
	return b
}

// newTx builds a signed TriggerSmartContract transaction calling the
// token's transfer(to, amount) from a. Callers hold mu.
func (c *tronChain) newTx(a account, to common.Address, amount *big.Int, failed bool) *tronTx {
	parent := c.head()
	data := make([]byte, 0, 4+64)
	data = append(data, tronTransferSelector...)
	data = append(data, common.LeftPadBytes(to.Bytes(), 32)...)
	data = append(data, common.LeftPadBytes(amount.Bytes(), 32)...)
	param, err := anypb.New(&core.TriggerSmartContract{
		OwnerAddress:    tronAddress(a.addr),
		ContractAddress: tronAddress(c.contract),
		Data:            data,
	})
	if err != nil {
		panic(err) // marshalling a valid message cannot fail
	}
	ts := c.now()
	raw := &core.TransactionRaw{
		RefBlockBytes: binary.BigEndian.AppendUint64(nil, parent.num)[6:],
		RefBlockHash:  parent.id[8:16],
		Expiration:    ts + 60_000,
		Timestamp:     ts,
		FeeLimit:      tronFeeLimit,
		Contract: []*core.Transaction_Contract{{
			Type:      core.Transaction_Contract_TriggerSmartContract,
			Parameter: param,
		}},
	}
	id := sha256.Sum256(marshal(raw))
	sig, err := crypto.Sign(id[:], a.key)
	if err != nil {
		panic(err)
	}
	ret := core.Transaction_Result_SUCCESS
	if failed {
		ret = core.Transaction_Result_REVERT
	}
	return &tronTx{
		id:     id,
		tx:     &core.Transaction{RawData: raw, Signature: [][]byte{sig}, Ret: []*core.Transaction_Result{{ContractRet: ret}}},
		from:   a.addr,
		to:     to,
		amount: new(big.Int).Set(amount),
		failed: failed,
	}
}

// marshal encodes m deterministically, as ids are hashes of encodings.
func marshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// tronAddress returns the 21-byte form of a (0x41 prefix).
func tronAddress(a common.Address) []byte {
	return append([]byte{0x41}, a.Bytes()...)
}

// status implements chain.
func (c *tronChain) status() NetworkStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return NetworkStatus{
		Network: c.info.Network,
		ChainID: c.info.ChainID,
		Head:    c.head().num,
		RPCURL:  c.addr,
		HTTPURL: c.httpURL,
		Tokens:  map[paywatch.Token]string{paywatch.USDT: TronUSDTContract},
	}
}

// transfer implements chain.
func (c *tronChain) transfer(_ context.Context, reqs []TransferRequest, failed bool) ([]TransferResult, error) {
	type parsed struct {
		to     common.Address
		amount paywatch.Amount
		from   account
	}
	ps := make([]parsed, len(reqs))
	for i, req := range reqs {
		to, amount, from, err := parseRequest(paywatch.FamilyTron, req)
		if err != nil {
			return nil, err
		}
		b, err := paywatch.TronAddressBytes(to)
		if err != nil {
			return nil, err
		}
		ps[i] = parsed{common.BytesToAddress(b[1:]), amount, from}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// Check the balances first, so a batch is all or nothing.
	spent := map[common.Address]*big.Int{}
	if !failed {
		for i, p := range ps {
			s := spent[p.from.addr]
			if s == nil {
				s = new(big.Int)
				spent[p.from.addr] = s
			}
			s.Add(s, p.amount.Units())
			if s.Cmp(c.balance(p.from.addr)) > 0 {
				return nil, paywatch.Errorf(paywatch.EINVALID, "transfer %d of %s USDT from %s: insufficient balance",
					i+1, p.amount, paywatch.TronAddressFromEVMBytes(p.from.addr.Bytes()))
			}
		}
	}
	txs := make([]*tronTx, len(ps))
	for i, p := range ps {
		txs[i] = c.newTx(p.from, p.to, p.amount.Units(), failed)
		if !failed {
			c.move(p.from.addr, p.to, p.amount.Units())
		}
	}
	b := c.appendBlock(txs)
	out := make([]TransferResult, len(reqs))
	for i, req := range reqs {
		out[i] = TransferResult{
			TxHash:      hex.EncodeToString(txs[i].id[:]),
			BlockNumber: b.num,
			Network:     req.Network,
			Token:       req.Token,
			From:        paywatch.TronAddressFromEVMBytes(ps[i].from.addr.Bytes()),
			To:          paywatch.TronAddressFromEVMBytes(ps[i].to.Bytes()),
			Amount:      ps[i].amount.String(),
		}
	}
	return out, nil
}

// balance returns a's USDT balance. Callers hold mu.
func (c *tronChain) balance(a common.Address) *big.Int {
	if b := c.balances[a]; b != nil {
		return b
	}
	return new(big.Int)
}

// move moves amount from one balance to another. Callers hold mu.
func (c *tronChain) move(from, to common.Address, amount *big.Int) {
	c.balances[from] = new(big.Int).Sub(c.balance(from), amount)
	c.balances[to] = new(big.Int).Add(c.balance(to), amount)
}

// mine implements chain.
func (c *tronChain) mine(ctx context.Context, count int) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range count {
		if err := ctx.Err(); err != nil {
			return c.head().num, err
		}
		c.appendBlock(nil)
	}
	return c.head().num, nil
}

// reorg implements chain: it drops the newest depth blocks, undoing their
// transfers, and appends depth+1 empty blocks. With reinclude it then
// appends one block with the dropped transactions, the same signed
// transactions (same ids) in the same order, redoing their transfers.
// Unlike java-tron, the devnet checks neither a transaction's reference
// block (which the reorg may have replaced) nor its expiration.
func (c *tronChain) reorg(_ context.Context, depth int, reinclude bool) (uint64, []string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	head := c.head().num
	if uint64(depth) > head {
		return head, nil, paywatch.Errorf(paywatch.EINVALID,
			"depth %d reaches the genesis block; at most %d blocks can be replaced now", depth, head)
	}
	dropped := []string{}
	keep := len(c.blocks) - depth
	for i := len(c.blocks) - 1; i >= keep; i-- {
		b := c.blocks[i]
		for j := len(b.txs) - 1; j >= 0; j-- {
			tx := b.txs[j]
			if !tx.failed {
				c.move(tx.to, tx.from, tx.amount)
			}
			delete(c.txs, tx.id)
			delete(c.txBlock, tx.id)
		}
	}
	var txs []*tronTx
	for _, b := range c.blocks[keep:] {
		for _, tx := range b.txs {
			dropped = append(dropped, hex.EncodeToString(tx.id[:]))
			txs = append(txs, tx)
		}
	}
	clear(c.blocks[keep:])
	c.blocks = c.blocks[:keep]
	for range depth + 1 {
		c.appendBlock(nil)
	}
	if reinclude {
		// The balances are back to what they were before the dropped
		// blocks, so the transfers go through again in their order.
		for _, tx := range txs {
			if !tx.failed {
				c.move(tx.from, tx.to, tx.amount)
			}
		}
		c.appendBlock(txs)
	}
	return c.head().num, dropped, nil
}

// close implements chain.
func (c *tronChain) close() error {
	c.srv.Stop()
	return c.httpSrv.Close()
}

// String names the node, for logs.
func (c *tronChain) String() string { return fmt.Sprintf("tron devnet at %s", c.addr) }
