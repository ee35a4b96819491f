package ton

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/xssnick/tonutils-go/address"
	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// The endpoints of TON Center's API v3 the scanner calls, one method
// each (testdata/FACTS.md has their sources).

// Masterchain returns /api/v3/masterchainInfo: the newest and the oldest
// masterchain blocks the indexer holds.
func (c *Client) Masterchain(ctx context.Context) (last, first Block, err error) {
	var info struct {
		Last  *Block `json:"last"`
		First *Block `json:"first"`
	}
	if err := c.get(ctx, "/masterchainInfo", nil, &info); err != nil {
		return Block{}, Block{}, err
	}
	if info.Last == nil || info.First == nil {
		return Block{}, Block{}, &apiError{200, "masterchainInfo without last and first", chainapi.Failover}
	}
	return *info.Last, *info.First, nil
}

// masterShard is the masterchain's one shard.
const masterShard = "8000000000000000"

// Block returns masterchain block seqno, found false when the indexer
// has not stored it (yet).
func (c *Client) Block(ctx context.Context, seqno uint64) (Block, bool, error) {
	bs, err := c.blocks(ctx, url.Values{
		"workchain": {"-1"}, "shard": {masterShard}, "seqno": {strconv.FormatUint(seqno, 10)}, "limit": {"1"}, "offset": {"0"},
	})
	for _, b := range bs {
		if b.Seqno == seqno {
			return b, true, nil
		}
	}
	return Block{}, false, err
}

// BlocksFrom returns up to limit masterchain blocks whose logical times
// start at or after startLT, by time (/api/v3/blocks has no seqno range:
// a block's start_lt grows with its seqno).
func (c *Client) BlocksFrom(ctx context.Context, startLT uint64, limit int) ([]Block, error) {
	return c.blocks(ctx, url.Values{
		"workchain": {"-1"}, "shard": {masterShard}, "start_lt": {strconv.FormatUint(startLT, 10)},
		"sort": {"asc"}, "limit": {strconv.Itoa(limit)}, "offset": {"0"},
	})
}

func (c *Client) blocks(ctx context.Context, q url.Values) ([]Block, error) {
	var page struct {
		Blocks []Block `json:"blocks"`
	}
	if err := c.get(ctx, "/blocks", q, &page); err != nil {
		return nil, err
	}
	if page.Blocks == nil {
		return nil, &apiError{200, "blocks answer without blocks", chainapi.Failover}
	}
	out := page.Blocks[:0]
	for _, b := range page.Blocks {
		if b.Workchain == -1 {
			out = append(out, b)
		}
	}
	return out, nil
}

// Decimals returns a jetton master's decimals as its on-chain content
// gives them (/api/v3/jetton/masters; USDT's content is on chain).
func (c *Client) Decimals(ctx context.Context, master *address.Address) (int, error) {
	var page struct {
		Masters []struct {
			Content map[string]any `json:"jetton_content"`
		} `json:"jetton_masters"`
	}
	if err := c.get(ctx, "/jetton/masters", url.Values{"address": {master.StringRaw()}, "limit": {"1"}, "offset": {"0"}}, &page); err != nil {
		return 0, err
	}
	if len(page.Masters) == 0 {
		return 0, fmt.Errorf("ton: no jetton master at %s", master)
	}
	switch d := page.Masters[0].Content["decimals"].(type) {
	case string:
		return strconv.Atoi(d)
	case nil:
		return 9, nil // TEP-64: a jetton without decimals has 9
	default:
		return 0, fmt.Errorf("ton: jetton master %s: decimals %v", master, d)
	}
}

// TransactionQuery asks for one account's transactions, newest first.
type TransactionQuery struct {
	Account string
	// FromLT and ToLT bound the logical times, inclusive (0: no bound).
	FromLT, ToLT uint64
	Limit        int
}

// Transactions returns a page of q.Account's transactions, newest first.
func (c *Client) Transactions(ctx context.Context, q TransactionQuery) ([]Transaction, error) {
	v := url.Values{"account": {q.Account}, "sort": {"desc"}, "limit": {strconv.Itoa(q.Limit)}, "offset": {"0"}}
	if q.FromLT > 0 {
		v.Set("start_lt", strconv.FormatUint(q.FromLT, 10))
	}
	if q.ToLT > 0 {
		v.Set("end_lt", strconv.FormatUint(q.ToLT, 10))
	}
	return c.transactions(ctx, v)
}

// Transaction returns the transaction of hash (64 hex digits), found
// false when the indexer has none.
func (c *Client) Transaction(ctx context.Context, hash string) (Transaction, bool, error) {
	txs, err := c.transactions(ctx, url.Values{"hash": {hash}, "limit": {"1"}, "offset": {"0"}})
	if err != nil || len(txs) == 0 {
		return Transaction{}, false, err
	}
	return txs[0], true, nil
}

func (c *Client) transactions(ctx context.Context, v url.Values) ([]Transaction, error) {
	var page struct {
		Transactions []Transaction `json:"transactions"`
	}
	if err := c.get(ctx, "/transactions", v, &page); err != nil {
		return nil, err
	}
	if page.Transactions == nil {
		return nil, &apiError{200, "transactions answer without transactions", chainapi.Failover}
	}
	return page.Transactions, nil
}

// stackEntry is one entry of a get method's stack (/api/v3/runGetMethod).
type stackEntry struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// JettonWallet returns owner's jetton wallet of master: the address the
// master's get_wallet_address names (/api/v3/runGetMethod), the one
// account whose credits are owner's jettons of master, deployed or not.
func (c *Client) JettonWallet(ctx context.Context, master, owner *address.Address) (*address.Address, error) {
	arg := cell.BeginCell().MustStoreAddr(owner).EndCell().ToBOC()
	var res struct {
		ExitCode *int         `json:"exit_code"`
		Stack    []stackEntry `json:"stack"`
	}
	err := c.post(ctx, "/runGetMethod", map[string]any{
		"address": master.String(), "method": "get_wallet_address",
		"stack": []stackEntry{{Type: "slice", Value: base64.StdEncoding.EncodeToString(arg)}},
	}, &res)
	if err != nil {
		return nil, err
	}
	if res.ExitCode == nil || *res.ExitCode != 0 || len(res.Stack) != 1 {
		return nil, fmt.Errorf("ton: get_wallet_address of %s failed (exit code %v): is it a jetton master?", master, exitCode(res.ExitCode))
	}
	raw, err := base64.StdEncoding.DecodeString(res.Stack[0].Value)
	if err != nil {
		return nil, fmt.Errorf("ton: get_wallet_address: %w", err)
	}
	cl, err := cell.FromBOC(raw)
	if err != nil {
		return nil, fmt.Errorf("ton: get_wallet_address: %w", err)
	}
	w, err := cl.BeginParse().LoadAddr()
	if err != nil || w.IsAddrNone() {
		return nil, errors.New("ton: get_wallet_address returned no address")
	}
	return w, nil
}

func exitCode(c *int) any {
	if c == nil {
		return "none"
	}
	return *c
}

// WalletInfo is a jetton wallet as the indexer knows it
// (/api/v3/jetton/wallets): its owner and master, verified by the
// indexer against the master's get_wallet_address.
type WalletInfo struct {
	Address string `json:"address"`
	Owner   string `json:"owner"`
	Jetton  string `json:"jetton"`
}

// Wallet returns the jetton wallet at addr, found false when the indexer
// knows none there (not a jetton wallet, or not deployed).
func (c *Client) Wallet(ctx context.Context, addr string) (WalletInfo, bool, error) {
	var page struct {
		Wallets []WalletInfo `json:"jetton_wallets"`
	}
	if err := c.get(ctx, "/jetton/wallets", url.Values{"address": {addr}, "limit": {"1"}, "offset": {"0"}}, &page); err != nil {
		return WalletInfo{}, false, err
	}
	if len(page.Wallets) == 0 {
		return WalletInfo{}, false, nil
	}
	return page.Wallets[0], true, nil
}
