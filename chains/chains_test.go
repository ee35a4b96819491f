package chains_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fbsobreira/gotron-sdk/pkg/proto/api"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/core"
	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
)

// The clients are tested against the devnet chains over their real
// protocols on loopback: JSON-RPC over HTTP served by go-ethereum nodes, and
// gRPC served by the devnet Tron node.

// allNetworks is every network of the registry, in API order.
var allNetworks = func() []paywatch.Network {
	var out []paywatch.Network
	for _, info := range paywatch.Networks() {
		out = append(out, info.Network)
	}
	return out
}()

// blockNetworks are the networks whose clients read every token transfer
// of a block range (Transfers, ReadTip, a quorum). The others read each
// watched account's history (chains.AccountReader: SOLANA), tested with
// ReadBatch here and in chains/devnet (TestSolanaBatch…).
var blockNetworks = func() []paywatch.Network {
	var out []paywatch.Network
	for _, n := range allNetworks {
		c, err := chains.Dial(context.Background(), chains.Config{Network: n, URLs: []string{"http://127.0.0.1:1"}})
		if err != nil {
			panic(err)
		}
		if _, perAccount := c.(chains.AccountReader); !perAccount {
			out = append(out, n)
		}
		c.Close()
	}
	return out
}()

// anyToken is the first token network n carries (USDT, or USDC on BASE).
func anyToken(n paywatch.Network) paywatch.Token {
	info, _ := paywatch.LookupNetwork(n)
	return info.Tokens[0]
}

// startDevnet starts devnet chains for nets with no automatic blocks.
func startDevnet(t testing.TB, cfg devnet.Config) *devnet.Devnet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

// dial returns a client of network n on d, with the given endpoints before
// and after the devnet's own.
func dial(t testing.TB, d *devnet.Devnet, n paywatch.Network, maxRange uint64, before ...string) chains.Client {
	t.Helper()
	st, ok := d.Network(n)
	require.True(t, ok)
	c, err := chains.Dial(context.Background(), chains.Config{
		Network:       n,
		URLs:          append(before, st.RPCURL),
		Contracts:     st.Tokens,
		MaxBlockRange: maxRange,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newAddress returns a fresh random address of network n's family.
func newAddress(t testing.TB, n paywatch.Network) string {
	t.Helper()
	b := make([]byte, 20)
	_, err := rand.Read(b)
	require.NoError(t, err)
	switch n.Family() {
	case paywatch.FamilyTron:
		return paywatch.TronAddressFromEVMBytes(b)
	case paywatch.FamilySolana:
		return sol.NewWallet().PublicKey().String()
	case paywatch.FamilyTON:
		k := make([]byte, 32)
		_, err := rand.Read(k)
		require.NoError(t, err)
		a, err := paywatch.NormalizeTONWallet("0:" + hex.EncodeToString(k))
		require.NoError(t, err)
		return a
	}
	a, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, "0x"+hex.EncodeToString(b))
	require.NoError(t, err)
	return a
}

// units returns amount in base units of t on n.
func units(t *testing.T, n paywatch.Network, tok paywatch.Token, amount string) *big.Int {
	t.Helper()
	a, err := paywatch.ParseAmount(amount, paywatch.Decimals(n, tok))
	require.NoError(t, err)
	return a.Units()
}

// faucet returns the faucet's address on n.
func faucet(n paywatch.Network) string {
	if n.Family() == paywatch.FamilyTON {
		return devnet.TONFaucet()
	}
	if n == paywatch.TRC20 {
		return devnet.Accounts()[0].Tron
	}
	return devnet.Accounts()[0].EVM
}

// missingHash returns a transaction hash no chain has.
func missingHash(n paywatch.Network) string {
	h := strings.Repeat("ab", 32)
	if n == paywatch.TRC20 || n.Family() == paywatch.FamilyTON {
		return h
	}
	return "0x" + h
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTransfersOnEveryNetwork(t *testing.T) {
	d := startDevnet(t, devnet.Config{})
	for _, n := range blockNetworks {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, d, n, 0)
			assert.Equal(t, n, c.Network())
			st, _ := d.Network(n)
			to := newAddress(t, n)

			var sent []devnet.TransferResult
			info, _ := paywatch.LookupNetwork(n)
			for _, tok := range info.Tokens {
				res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: tok, To: to, Amount: "12.345678"})
				require.NoError(t, err)
				sent = append(sent, res)
			}
			head, err := c.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, sent[len(sent)-1].BlockNumber, head)

			var seen []chains.Transfer
			for _, res := range sent {
				ts, err := c.Transfers(ctx, res.BlockNumber, res.BlockNumber)
				require.NoError(t, err)
				require.Len(t, ts, 1)
				got := ts[0]
				hash, err := c.BlockHash(ctx, res.BlockNumber)
				require.NoError(t, err)
				want := chains.Transfer{
					Network:     n,
					Token:       res.Token,
					Contract:    st.Tokens[res.Token],
					TxHash:      res.TxHash,
					LogIndex:    0,
					BlockNumber: res.BlockNumber,
					BlockHash:   hash,
					From:        faucet(n),
					To:          to,
					Amount:      units(t, n, res.Token, "12.345678"),
				}
				assert.Equal(t, want, got)
				norm, err := paywatch.NormalizeTxHash(n, got.TxHash)
				require.NoError(t, err)
				assert.Equal(t, norm, got.TxHash, "tx hash is normalised")
				if n == paywatch.TRC20 {
					assert.Regexp(t, "^[0-9a-f]{64}$", got.BlockHash)
				} else {
					assert.Regexp(t, "^0x[0-9a-f]{64}$", got.BlockHash)
				}
				seen = append(seen, got)

				// The same transfer through the point look-up.
				byTx, found, err := c.TransactionTransfers(ctx, strings.ToUpper(strings.TrimPrefix(res.TxHash, "0x")))
				require.NoError(t, err)
				assert.True(t, found)
				assert.Equal(t, []chains.Transfer{want}, byTx)
			}

			// The whole range, and the recipient's view of it.
			all, err := c.Transfers(ctx, 0, head)
			require.NoError(t, err)
			for _, s := range seen {
				assert.Contains(t, all, s)
			}
			byAddr, err := c.AddressTransfers(ctx, to, 0)
			require.NoError(t, err)
			assert.Equal(t, seen, byAddr)
			byAddr, err = c.AddressTransfers(ctx, to, head+1)
			require.NoError(t, err)
			assert.Empty(t, byAddr)
			other, err := c.AddressTransfers(ctx, newAddress(t, n), 0)
			require.NoError(t, err)
			assert.Empty(t, other)

			_, found, err := c.TransactionTransfers(ctx, missingHash(n))
			require.NoError(t, err)
			assert.False(t, found)

			_, err = c.BlockHash(ctx, head+1000)
			assert.ErrorIs(t, err, chains.ErrBlockNotFound)
			assert.Positive(t, chains.Calls(c))
		})
	}
}

func TestReorgDropsTransfer(t *testing.T) {
	d := startDevnet(t, devnet.Config{})
	for _, n := range blockNetworks {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, d, n, 0)
			to := newAddress(t, n)
			res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "5"})
			require.NoError(t, err)
			head, err := d.Mine(ctx, n, 2)
			require.NoError(t, err)
			require.Equal(t, res.BlockNumber+2, head)

			before, err := c.BlockHash(ctx, res.BlockNumber)
			require.NoError(t, err)
			ts, err := c.Transfers(ctx, res.BlockNumber, head)
			require.NoError(t, err)
			require.Len(t, ts, 1)
			_, found, err := c.TransactionTransfers(ctx, res.TxHash)
			require.NoError(t, err)
			require.True(t, found)

			newHead, dropped, err := d.Reorg(ctx, n, 3)
			require.NoError(t, err)
			assert.Equal(t, head+1, newHead, "the new branch is one block longer")
			assert.Equal(t, []string{res.TxHash}, dropped)

			_, found, err = c.TransactionTransfers(ctx, res.TxHash)
			require.NoError(t, err)
			assert.False(t, found, "the dropped transaction is gone")
			after, err := c.BlockHash(ctx, res.BlockNumber)
			require.NoError(t, err)
			assert.NotEqual(t, before, after)
			ts, err = c.Transfers(ctx, res.BlockNumber, newHead)
			require.NoError(t, err)
			assert.Empty(t, ts)
			byAddr, err := c.AddressTransfers(ctx, to, 0)
			require.NoError(t, err)
			assert.Empty(t, byAddr)
			gotHead, err := c.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, newHead, gotHead)

			// The chain goes on normally after the reorg.
			res2, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "6"})
			require.NoError(t, err)
			assert.Equal(t, newHead+1, res2.BlockNumber)
			byAddr, err = c.AddressTransfers(ctx, to, 0)
			require.NoError(t, err)
			require.Len(t, byAddr, 1)
			assert.Equal(t, res2.TxHash, byAddr[0].TxHash)
		})
	}
}

// fill makes 100 blocks after the current head, 30 of them with transfers
// (1 to 3 each, to a few recipients), and returns the range and the sent
// transfers.
func fill(t *testing.T, d *devnet.Devnet, n paywatch.Network) (from, to uint64, sent []devnet.TransferResult) {
	t.Helper()
	ctx := ctxT(t)
	st, _ := d.Network(n)
	from = st.Head + 1
	recipients := []string{newAddress(t, n), newAddress(t, n), newAddress(t, n)}
	for i := range 100 {
		if i%10 == 0 || i%10 == 3 || i%10 == 7 {
			var reqs []devnet.TransferRequest
			for j := range i%3 + 1 {
				info, _ := paywatch.LookupNetwork(n)
				tok := info.Tokens[j%len(info.Tokens)]
				reqs = append(reqs, devnet.TransferRequest{
					Network: n, Token: tok, To: recipients[(i+j)%3], Amount: fmt.Sprintf("%d.%02d", i+1, j),
				})
			}
			rs, err := d.TransferBatch(ctx, reqs)
			require.NoError(t, err)
			for _, r := range rs {
				require.Equal(t, from+uint64(i), r.BlockNumber)
			}
			sent = append(sent, rs...)
		} else {
			_, err := d.Mine(ctx, n, 1)
			require.NoError(t, err)
		}
	}
	return from, from + 99, sent
}

func TestTransfersChunked(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.POLYGON}})
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.POLYGON} {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			from, to, sent := fill(t, d, n)
			require.Len(t, sent, 58)

			c := dial(t, d, n, 10)
			calls := chains.Calls(c)
			ts, err := c.Transfers(ctx, from, to)
			require.NoError(t, err)
			calls = chains.Calls(c) - calls

			require.Len(t, ts, len(sent))
			for i, s := range sent {
				assert.Equal(t, s.TxHash, ts[i].TxHash, "transfer %d in chain order", i)
				assert.Equal(t, s.BlockNumber, ts[i].BlockNumber)
				assert.Equal(t, s.To, ts[i].To)
				assert.Equal(t, s.Token, ts[i].Token)
				assert.Equal(t, units(t, n, s.Token, s.Amount), ts[i].Amount)
			}
			// Log indexes are unique per block and the same as the point
			// look-up's.
			for _, tr := range ts[:5] {
				byTx, found, err := c.TransactionTransfers(ctx, tr.TxHash)
				require.NoError(t, err)
				require.True(t, found)
				assert.Equal(t, []chains.Transfer{tr}, byTx)
			}
			if n == paywatch.TRC20 {
				// Per batch of 10 blocks one GetBlockByLimitNext, and one
				// GetTransactionInfoByBlockNum per block with transactions
				// (30 of the 100).
				assert.Equal(t, uint64(10+30), calls)
			} else {
				assert.Equal(t, uint64(10), calls, "one eth_getLogs per 10 blocks")
			}
		})
	}
}

func TestTransfersHalveRefusedRange(t *testing.T) {
	// The devnet node refuses eth_getLogs over more than 8 blocks, as public
	// providers refuse large ranges.
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.ARBITRUM}, LogRangeLimit: 8})
	ctx := ctxT(t)
	from, to, sent := fill(t, d, paywatch.ARBITRUM)
	c := dial(t, d, paywatch.ARBITRUM, 100)

	ts, err := c.Transfers(ctx, from, to)
	require.NoError(t, err)
	require.Len(t, ts, len(sent))
	for i := range sent {
		assert.Equal(t, sent[i].TxHash, ts[i].TxHash)
	}
	first := chains.Calls(c)

	// The smaller range is remembered: the next scan makes no refused call.
	ts, err = c.Transfers(ctx, from, to)
	require.NoError(t, err)
	assert.Len(t, ts, len(sent))
	assert.Less(t, chains.Calls(c)-first, first)
	assert.LessOrEqual(t, chains.Calls(c)-first, uint64(100/6+1))

	// AddressTransfers goes through the same halving.
	byAddr, err := c.AddressTransfers(ctx, sent[0].To, from)
	require.NoError(t, err)
	assert.NotEmpty(t, byAddr)
}

// deadAddr returns a loopback host:port on which nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestFailover(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.ERC20}})
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.ERC20} {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			dead := deadAddr(t)
			if n != paywatch.TRC20 {
				dead = "http://" + dead
			}
			res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "1"})
			require.NoError(t, err)

			c := dial(t, d, n, 0, dead)
			head, err := c.Head(ctx)
			require.NoError(t, err, "the second endpoint answers")
			assert.Equal(t, res.BlockNumber, head)
			assert.Equal(t, uint64(2), chains.Calls(c), "one failed call, one good")

			// The healthy endpoint is remembered.
			ts, err := c.Transfers(ctx, res.BlockNumber, res.BlockNumber)
			require.NoError(t, err)
			require.Len(t, ts, 1)
			assert.Equal(t, res.TxHash, ts[0].TxHash)

			// With no endpoint up, the error says so.
			only, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{dead}})
			require.NoError(t, err)
			defer only.Close()
			_, err = only.Head(ctx)
			assert.ErrorIs(t, err, chains.ErrUnavailable)
		})
	}
}

func TestRateLimitedEndpoint(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.BEP20}})
	ctx := ctxT(t)
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"rate limit exceeded"}}`, http.StatusTooManyRequests)
	}))
	defer limited.Close()

	c := dial(t, d, paywatch.BEP20, 0, limited.URL)
	head, err := c.Head(ctx)
	require.NoError(t, err, "a rate-limited endpoint fails over")
	assert.Positive(t, head)

	only, err := chains.Dial(ctx, chains.Config{Network: paywatch.BEP20, URLs: []string{limited.URL}})
	require.NoError(t, err)
	defer only.Close()
	_, err = only.Head(ctx)
	assert.ErrorIs(t, err, chains.ErrRateLimited)
	assert.NotErrorIs(t, err, chains.ErrUnavailable)

	// A JSON-RPC error with a provider's range message is ErrRangeTooLarge.
	tooMany := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"query returned more than 10000 results"}}`)
	}))
	defer tooMany.Close()
	c2, err := chains.Dial(ctx, chains.Config{Network: paywatch.BEP20, URLs: []string{tooMany.URL}})
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Transfers(ctx, 5, 5)
	assert.ErrorIs(t, err, chains.ErrRangeTooLarge)
}

func TestFailedTransfersDoNotCount(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20, paywatch.ERC20}})
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.ERC20} {
		t.Run(string(n), func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, d, n, 0)
			to := newAddress(t, n)
			failed, err := d.TransferFailed(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "7"})
			require.NoError(t, err)
			ok, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "8"})
			require.NoError(t, err)

			ts, err := c.Transfers(ctx, failed.BlockNumber, ok.BlockNumber)
			require.NoError(t, err)
			require.Len(t, ts, 1, "only the successful transfer counts")
			assert.Equal(t, ok.TxHash, ts[0].TxHash)
			if n == paywatch.TRC20 {
				// The failed transaction's log still takes a place in its
				// block's numbering, so indexes stay stable; here the blocks
				// differ, so the good one is 0.
				assert.Equal(t, uint32(0), ts[0].LogIndex)
			}

			_, found, err := c.TransactionTransfers(ctx, failed.TxHash)
			require.NoError(t, err)
			assert.False(t, found, "a failed transaction is reported as not found")

			byAddr, err := c.AddressTransfers(ctx, to, 0)
			require.NoError(t, err)
			require.Len(t, byAddr, 1)
			assert.Equal(t, ok.TxHash, byAddr[0].TxHash)
		})
	}
}

func TestDialRejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]chains.Config{
		"unknown network": {Network: "SUI", URLs: []string{"http://127.0.0.1:1"}},
		"solana http url": {Network: paywatch.SOLANA, URLs: []string{"127.0.0.1:8899"}},
		"no url":          {Network: paywatch.ERC20},
		"bad evm url":     {Network: paywatch.ERC20, URLs: []string{"127.0.0.1:8545"}},
		"bad tron addr":   {Network: paywatch.TRC20, URLs: []string{"ftp://node:50051"}},
		"tron no port":    {Network: paywatch.TRC20, URLs: []string{"node"}},
		"tron usdc":       {Network: paywatch.TRC20, URLs: []string{"127.0.0.1:1"}, Contracts: map[paywatch.Token]string{paywatch.USDC: "TJhSSbZ8dVqtEiLYgva1WWcV4R4NkRCARH"}},
		"bad contract":    {Network: paywatch.ERC20, URLs: []string{"http://127.0.0.1:1"}, Contracts: map[paywatch.Token]string{paywatch.USDT: "0x1234"}},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := chains.Dial(ctx, cfg)
			assert.Error(t, err)
			assert.Nil(t, c)
		})
	}
	// Nil contracts mean the mainnet ones.
	c, err := chains.Dial(ctx, chains.Config{Network: paywatch.ERC20, URLs: []string{"http://127.0.0.1:1"}})
	require.NoError(t, err)
	c.Close()
}

// partialTronNode is a Tron full node that has the blocks but not all of
// their transaction infos, as a node without transaction history
// (storage.transHistory off) or one that lags behind its own blocks: it
// passes the Wallet API calls the client uses on to the devnet node and
// answers GetTransactionInfoByBlockNum with at most keep infos per block.
type partialTronNode struct {
	api.UnimplementedWalletServer
	up   api.WalletClient
	keep int
}

func (p *partialTronNode) GetNowBlock2(ctx context.Context, m *api.EmptyMessage) (*api.BlockExtention, error) {
	return p.up.GetNowBlock2(ctx, m)
}

func (p *partialTronNode) GetBlockByNum2(ctx context.Context, m *api.NumberMessage) (*api.BlockExtention, error) {
	return p.up.GetBlockByNum2(ctx, m)
}

func (p *partialTronNode) GetBlockByLimitNext2(ctx context.Context, m *api.BlockLimit) (*api.BlockListExtention, error) {
	return p.up.GetBlockByLimitNext2(ctx, m)
}

func (p *partialTronNode) GetTransactionInfoById(ctx context.Context, m *api.BytesMessage) (*core.TransactionInfo, error) {
	return p.up.GetTransactionInfoById(ctx, m)
}

func (p *partialTronNode) GetTransactionInfoByBlockNum(ctx context.Context, m *api.NumberMessage) (*api.TransactionInfoList, error) {
	l, err := p.up.GetTransactionInfoByBlockNum(ctx, m)
	if err != nil {
		return nil, err
	}
	if len(l.TransactionInfo) > p.keep {
		l.TransactionInfo = l.TransactionInfo[:p.keep]
	}
	return l, nil
}

// startPartialTronNode serves a partialTronNode in front of d's TRC20 node
// and returns its host:port.
func startPartialTronNode(t *testing.T, d *devnet.Devnet, keep int) string {
	t.Helper()
	st, ok := d.Network(paywatch.TRC20)
	require.True(t, ok)
	conn, err := grpc.NewClient(st.RPCURL, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	api.RegisterWalletServer(srv, &partialTronNode{up: api.NewWalletClient(conn), keep: keep})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

// A Tron node that has a block but answers fewer transaction infos than the
// block has transactions must not make the block look empty: the read
// fails over to the next endpoint, and with none left it fails, so the
// scanner keeps its cursor and reads the batch again.
func TestTronIncompleteTransactionInfosAreAnError(t *testing.T) {
	n := paywatch.TRC20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	to := newAddress(t, n)
	sent, err := d.TransferBatch(ctx, []devnet.TransferRequest{
		{Network: n, Token: anyToken(n), To: to, Amount: "1"},
		{Network: n, Token: anyToken(n), To: to, Amount: "2"},
	})
	require.NoError(t, err)
	require.Len(t, sent, 2)
	b := sent[0].BlockNumber
	require.Equal(t, b, sent[1].BlockNumber, "one block with two transactions")
	empty, err := d.Mine(ctx, n, 1) // a block without transactions needs no infos
	require.NoError(t, err)

	for _, keep := range []int{0, 1} {
		t.Run(fmt.Sprintf("keep %d of 2", keep), func(t *testing.T) {
			only, err := chains.Dial(ctx, chains.Config{Network: n, URLs: []string{startPartialTronNode(t, d, keep)}, Contracts: mustNetwork(t, d, n).Tokens})
			require.NoError(t, err)
			defer only.Close()

			ts, err := only.Transfers(ctx, b, b)
			require.ErrorContains(t, err, "fewer transaction infos than the block has transactions")
			assert.ErrorIs(t, err, chains.ErrUnavailable, "an endpoint failure, retried later")
			assert.Empty(t, ts)
			_, err = only.AddressTransfers(ctx, to, b)
			assert.ErrorIs(t, err, chains.ErrUnavailable)
			_, _, err = only.TransactionTransfers(ctx, sent[0].TxHash)
			assert.ErrorIs(t, err, chains.ErrUnavailable)

			ts, err = only.Transfers(ctx, empty, empty)
			require.NoError(t, err, "an empty block asks for no infos")
			assert.Empty(t, ts)

			// With a complete node behind it, the read fails over and sees
			// both transfers.
			c := dial(t, d, n, 0, startPartialTronNode(t, d, keep))
			ts, err = c.Transfers(ctx, b, b)
			require.NoError(t, err)
			require.Len(t, ts, 2)
			assert.Equal(t, sent[0].TxHash, ts[0].TxHash)
			assert.Equal(t, sent[1].TxHash, ts[1].TxHash)
			byTx, found, err := c.TransactionTransfers(ctx, sent[1].TxHash)
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, []chains.Transfer{ts[1]}, byTx)
		})
	}
}

// mustNetwork returns the status of network n on d.
func mustNetwork(t *testing.T, d *devnet.Devnet, n paywatch.Network) devnet.NetworkStatus {
	t.Helper()
	st, ok := d.Network(n)
	require.True(t, ok)
	return st
}
