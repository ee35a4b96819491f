package devnet

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xssnick/tonutils-go/address"
	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch"
)

// The TON devnet as one of the devnet's chains (the chain interface):
// what Start, the block producer and the /devnet endpoints use once the
// table has a TON row. Its masterchain blocks are its blocks; a batch of
// transfers goes into one new block.

// tonMaxComment bounds a memo: a comment that fits one cell.
const tonMaxComment = 120

// status implements chain: Tokens names USDT's master, bounceable
// ("EQ…"); RPCURL is the API's base (…/api/v3), what chains/ton dials;
// ChainID is TONGlobalID.
func (c *tonChain) status() NetworkStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return NetworkStatus{
		Network: c.network, ChainID: TONGlobalID, Head: c.head().seqno, RPCURL: c.url,
		Tokens: map[paywatch.Token]string{paywatch.USDT: TONUSDTMaster()},
	}
}

// transfer implements chain: the transfers go into one new masterchain
// block, all or none. From must be the faucet (the devnet's only TON
// sender); Memo is the transfer's text comment, carried with a
// forward_ton_amount of 1 nanoton so the owner is notified; Kind makes a
// forged notification or a look-alike jetton's transfer. failed makes
// each bounce: the recipient jetton wallet's transaction aborts, and the
// bounced message goes back to the faucet's wallet; nothing moves.
func (c *tonChain) transfer(_ context.Context, reqs []TransferRequest, failed bool) ([]TransferResult, error) {
	plans := make([]tonPlan, len(reqs))
	for i, req := range reqs {
		p, err := c.plan(req)
		if err != nil {
			return nil, err
		}
		if failed && p.kind == tonKindForged {
			return nil, paywatch.Errorf(paywatch.EINVALID, "kind: a forged notification cannot fail")
		}
		plans[i] = p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !failed {
		spent := map[string]*big.Int{}
		for i, p := range plans {
			if p.kind == tonKindForged {
				continue
			}
			w := c.wallet(p.master, tonFaucet)
			key := tonRaw(w.addr)
			if spent[key] == nil {
				spent[key] = new(big.Int)
			}
			if spent[key].Add(spent[key], p.units).Cmp(w.balance) > 0 {
				return nil, paywatch.Errorf(paywatch.EINVALID, "transfer %d: insufficient balance", i+1)
			}
		}
	}
	b := c.openBlock()
	out := make([]TransferResult, len(plans))
	for i, p := range plans {
		tx := c.apply(p, failed)
		out[i] = TransferResult{
			TxHash: hexHash(tx.hash), BlockNumber: b.seqno, Network: c.network, Token: paywatch.USDT,
			From: TONFaucet(), To: tonFriendly(p.owner, false),
			Amount: paywatch.NewAmount(p.units, 6).String(),
		}
	}
	c.closeBlock()
	return out, nil
}

// plan checks one request.
func (c *tonChain) plan(req TransferRequest) (tonPlan, error) {
	p := tonPlan{kind: req.Kind, master: tonMaster, comment: req.Memo}
	switch req.Kind {
	case "", tonKindForged:
	case tonKindLookalike:
		p.master = tonLookalike
	default:
		return p, paywatch.Errorf(paywatch.EINVALID, "kind: want %s or %s on %s", tonKindForged, tonKindLookalike, c.network)
	}
	if req.Token != paywatch.USDT {
		return p, paywatch.Errorf(paywatch.EINVALID, "%s is not supported on %s", req.Token, c.network)
	}
	if req.From != "" {
		if from, err := paywatch.NormalizeTONWallet(req.From); err != nil || from != TONFaucet() {
			return p, paywatch.Errorf(paywatch.EINVALID, "from: the TON devnet sends from its faucet only")
		}
	}
	to, err := paywatch.NormalizeTONWallet(req.To)
	if err != nil {
		return p, paywatch.Errorf(paywatch.EINVALID, "to: %s", paywatch.ErrorMessage(err))
	}
	if p.owner, err = parseTONAddr(to); err != nil {
		return p, paywatch.Errorf(paywatch.EINVALID, "to: %v", err)
	}
	if p.owner.Equals(tonFaucet) {
		return p, paywatch.Errorf(paywatch.EINVALID, "to: the faucet cannot pay itself")
	}
	if len(p.comment) > tonMaxComment || !utf8.ValidString(p.comment) {
		return p, paywatch.Errorf(paywatch.EINVALID, "memo: a TON comment is valid UTF-8 of at most %d bytes", tonMaxComment)
	}
	amount, err := paywatch.ParseAmount(req.Amount, 6)
	if err != nil {
		return p, err
	}
	units, err := amount.Rescale(6)
	if err != nil {
		return p, err
	}
	if p.units = units.Units(); p.units.Sign() <= 0 {
		return p, paywatch.Errorf(paywatch.EINVALID, "amount must be positive")
	}
	return p, nil
}

// mine implements chain: count empty masterchain blocks.
func (c *tonChain) mine(ctx context.Context, count int) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range count {
		if err := ctx.Err(); err != nil {
			return c.head().seqno, err
		}
		c.openBlock()
		c.closeBlock()
	}
	return c.head().seqno, nil
}

// reorg implements chain: a masterchain block is final once made.
func (c *tonChain) reorg(context.Context, int, bool) (uint64, []string, error) {
	return 0, nil, paywatch.Errorf(paywatch.EINVALID, "Reorgs are not supported on TON")
}

func (c *tonChain) close() error { return c.srv.Close() }

// balanceOf returns a jetton wallet's balance (tests).
func (c *tonChain) balanceOf(wallet string) *big.Int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, err := parseTONAddr(wallet)
	if err != nil {
		return new(big.Int)
	}
	if w, ok := c.wallets[tonRaw(a)]; ok {
		return new(big.Int).Set(w.balance)
	}
	return new(big.Int)
}

// The API's jetton endpoints (tonchain_api.go serves them): what the
// indexer knows of jetton wallets, transfers and masters.

// jettonWalletsAPI answers /jetton/wallets: deployed wallets (those that
// took a transfer, and the faucet's) by address, owner_address and
// jetton_address, each repeatable.
func (c *tonChain) jettonWalletsAPI(q url.Values) (any, *tonAPIError) {
	limit, offset, desc, e := page(q, "desc")
	if e != nil {
		return nil, e
	}
	filters := map[string][]string{}
	for _, name := range []string{"address", "owner_address", "jetton_address"} {
		if filters[name], e = addrsParam(q, name); e != nil {
			return nil, e
		}
	}
	match := func(name string, a *address.Address) bool {
		return len(filters[name]) == 0 || slices.Contains(filters[name], tonRaw(a))
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var list []*tonWallet
	for _, w := range c.wallets {
		if w.deployed && match("address", w.addr) && match("owner_address", w.owner) && match("jetton_address", w.master) &&
			(q.Get("exclude_zero_balance") != "true" || w.balance.Sign() > 0) {
			list = append(list, w)
		}
	}
	slices.SortFunc(list, func(a, b *tonWallet) int {
		return cmp.Or(a.balance.Cmp(b.balance), strings.Compare(tonRaw(a.addr), tonRaw(b.addr)))
	})
	if desc {
		slices.Reverse(list)
	}
	book, meta := map[string]any{}, map[string]any{}
	out := []map[string]any{}
	for _, w := range window(list, limit, offset) {
		code, data := c.digest("code jetton wallet"), c.digest("data", tonRaw(w.addr), w.balance.String())
		out = append(out, map[string]any{
			"address": c.bookEntry(book, w.addr), "balance": w.balance.String(), "owner": c.bookEntry(book, w.owner),
			"jetton": c.bookEntry(book, w.master), "last_transaction_lt": strconv.FormatUint(w.lastLT, 10),
			"code_hash": b64(code[:]), "data_hash": b64(data[:]),
		})
		meta[tonRaw(w.master)] = c.masterMetadata(w.master)
	}
	return map[string]any{"jetton_wallets": out, "address_book": book, "metadata": meta}, nil
}

// masterMetadata is a served master's metadata entry.
func (c *tonChain) masterMetadata(m *address.Address) map[string]any {
	return map[string]any{"is_indexed": true, "token_info": []map[string]any{{
		"valid": true, "type": "jetton_masters", "name": "Tether USD", "symbol": "USD₮",
		"description": "Tether Token for Tether USD", "image": "https://tether.to/images/logoCircle.png",
		"extra": map[string]any{"decimals": "6", "uri": "https://tether.to/usdt-ton.json"},
	}}}
}

// jettonMastersAPI answers /jetton/masters: the served masters by
// address, their content on chain as USDT's is (TEP-64: decimals a
// string).
func (c *tonChain) jettonMastersAPI(q url.Values) (any, *tonAPIError) {
	limit, offset, _, e := page(q, "")
	if e != nil {
		return nil, e
	}
	addrs, e := addrsParam(q, "address")
	if e != nil {
		return nil, e
	}
	book, meta := map[string]any{}, map[string]any{}
	out := []map[string]any{}
	admin := tonAddr("jetton admin")
	contents := map[string]map[string]string{
		tonRaw(tonMaster):    {"uri": "https://tether.to/usdt-ton.json", "decimals": "6"},
		tonRaw(tonLookalike): {"name": "Tether USD", "symbol": "USD₮", "decimals": "6", "image": "https://tether.to/images/logoCircle.png"},
	}
	var masters []*address.Address
	for _, m := range []*address.Address{tonMaster, tonLookalike} {
		if len(addrs) == 0 || slices.Contains(addrs, tonRaw(m)) {
			masters = append(masters, m)
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, m := range window(masters, limit, offset) {
		code, data, walletCode := c.digest("code jetton master"), c.digest("data", tonRaw(m)), c.digest("code jetton wallet")
		out = append(out, map[string]any{
			"address": c.bookEntry(book, m), "total_supply": tonFaucetUnits.String(), "mintable": true,
			"admin_address": c.bookEntry(book, admin), "jetton_content": contents[tonRaw(m)],
			"jetton_wallet_code_hash": b64(walletCode[:]), "code_hash": b64(code[:]), "data_hash": b64(data[:]),
			"last_transaction_lt": "0",
		})
		meta[tonRaw(m)] = c.masterMetadata(m)
	}
	return map[string]any{"jetton_masters": out, "address_book": book, "metadata": meta}, nil
}

// runGetMethod answers /runGetMethod as TON Center's proxy to its v2 API
// does: get_wallet_address on a served master, its stack one slice (or
// cell) holding the owner's address, answers one cell holding the jetton
// wallet's; another method or account exits 11 with HTTP 200. An empty
// address or method is refused with 401, a stack entry other than num,
// cell or slice with 500.
func (c *tonChain) runGetMethod(body []byte) (any, *tonAPIError) {
	var req struct {
		Address string `json:"address"`
		Method  string `json:"method"`
		Stack   []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"stack"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse request body"}
	}
	if req.Address == "" {
		return nil, &tonAPIError{http.StatusUnauthorized, "address is required"}
	}
	if req.Method == "" {
		return nil, &tonAPIError{http.StatusUnauthorized, "method is required"}
	}
	for _, s := range req.Stack {
		if s.Type != "num" && s.Type != "cell" && s.Type != "slice" {
			return nil, &tonAPIError{http.StatusInternalServerError, "unsupported stack parameter type"}
		}
	}
	master, err := parseTONAddr(req.Address)
	if err != nil {
		return nil, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse address"}
	}
	none := map[string]any{"gas_used": 0, "exit_code": 11, "stack": []any{}}
	served := master.Equals(tonMaster) || master.Equals(tonLookalike)
	if !served || req.Method != "get_wallet_address" || len(req.Stack) != 1 {
		return none, nil
	}
	arg := req.Stack[0]
	boc, err := base64.StdEncoding.DecodeString(arg.Value)
	if err != nil {
		boc, err = base64.URLEncoding.DecodeString(arg.Value)
	}
	if err != nil || (arg.Type != "slice" && arg.Type != "cell") {
		return nil, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse stack"}
	}
	cl, err := cell.FromBOC(boc)
	if err != nil {
		return nil, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse stack: " + err.Error()}
	}
	owner, err := cl.BeginParse().LoadAddr()
	if err != nil || owner.Type() != address.StdAddress {
		return map[string]any{"gas_used": 3000, "exit_code": 9, "stack": []any{}}, nil // cell underflow
	}
	w := cell.BeginCell().MustStoreAddr(tonJettonWallet(master, owner)).EndCell()
	return map[string]any{"gas_used": 3000, "exit_code": 0, "stack": []any{map[string]any{"type": "cell", "value": b64(w.ToBOC())}}}, nil
}
