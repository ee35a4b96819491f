package ton

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xssnick/tonutils-go/address"
	"golang.org/x/sync/errgroup"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// Chain is TON as the scanners read it (chainapi.Client), through TON
// Center's API v3:
//
//   - a block is a masterchain block: the head is the newest the indexer
//     holds, a block's hash its root hash. The indexer stores only what a
//     masterchain block has committed, and TON never reverts a committed
//     block, so everything read is final (one confirmation);
//   - transfers are read per watched owner (AccountReader): the owner's
//     jetton wallet of the USDT master, which the master names
//     (get_wallet_address), and in it each transaction that processed an
//     internal_transfer without aborting. Only the master's own wallets
//     accept one, so no other contract can fake a credit there: a
//     transfer_notification sent to the owner is never read, and a
//     look-alike jetton's wallet is another account.
type Chain struct {
	*Client
	network paywatch.Network
	token   paywatch.Token
	master  *address.Address
	// wallets caches each owner's jetton wallet (the master's answer
	// never changes); owners the reverse.
	wallets sync.Map // owner (canonical) → *address.Address
	owners  sync.Map // wallet raw key → owner (canonical)
	// last is the last block of the last batch read: the next batch's
	// cursor block, whose logical time its listing starts from.
	last atomic.Value // Block
}

// NewChain returns network's Chain over c, reading token (USDT) of the
// jetton master.
func NewChain(network paywatch.Network, c *Client, token paywatch.Token, master string) (*Chain, error) {
	m, err := parseAddr(master)
	if err != nil {
		return nil, fmt.Errorf("ton: %s master %q: %w", token, master, err)
	}
	return &Chain{Client: c, network: network, token: token, master: m}, nil
}

// DialConfig returns the Chain of cfg: the endpoints of cfg.URLs (the
// API's base, https://toncenter.com/api/v3) with their headers, and the
// network's jetton master, cfg.Contracts' where it names one (a
// devnet's).
func DialConfig(cfg chainapi.Config) (*Chain, error) {
	info, ok := paywatch.LookupNetwork(cfg.Network)
	if !ok || info.Family != paywatch.FamilyTON || len(info.Tokens) != 1 {
		return nil, fmt.Errorf("ton: %q is not a TON network of one jetton", cfg.Network)
	}
	if len(cfg.Headers) != 0 && len(cfg.Headers) != len(cfg.URLs) {
		return nil, fmt.Errorf("ton: %s has %d header sets for %d API URLs", cfg.Network, len(cfg.Headers), len(cfg.URLs))
	}
	c, err := Dial(cfg.URLs, cfg.Headers, cfg.Observe)
	if err != nil {
		return nil, err
	}
	t := info.Tokens[0]
	master := paywatch.DefaultContract(cfg.Network, t)
	if m, ok := cfg.Contracts[t]; ok {
		master = m
	}
	return NewChain(cfg.Network, c, t, master)
}

// Network implements chainapi.Client.
func (c *Chain) Network() paywatch.Network { return c.network }

// Close implements chainapi.Client.
func (c *Chain) Close() {}

// Master returns the jetton master read, as configured.
func (c *Chain) Master() *address.Address { return c.master }

// Head implements chainapi.Client: the newest masterchain block the
// indexer holds.
func (c *Chain) Head(ctx context.Context) (uint64, error) {
	last, _, err := c.Masterchain(ctx)
	return last.Seqno, err
}

// Finalized implements chainapi.FinalityReader: a masterchain block is
// final once made, so the head.
func (c *Chain) Finalized(ctx context.Context) (uint64, error) { return c.Head(ctx) }

// block returns masterchain block n, ErrBlockNotFound when the indexer
// has not stored it.
func (c *Chain) block(ctx context.Context, n uint64) (Block, error) {
	if b, ok := c.last.Load().(Block); ok && b.Seqno == n {
		return b, nil
	}
	b, found, err := c.Block(ctx, n)
	if err != nil {
		return Block{}, err
	}
	if !found {
		return Block{}, fmt.Errorf("masterchain block %d: %w", n, chainapi.ErrBlockNotFound)
	}
	return b, nil
}

// BlockHash implements chainapi.Client: masterchain block n's root hash
// (64 lowercase hex).
func (c *Chain) BlockHash(ctx context.Context, n uint64) (string, error) {
	b, err := c.block(ctx, n)
	if err != nil {
		return "", err
	}
	return hashHex(b.RootHash)
}

// BlockTime implements chainapi.BlockTimer.
func (c *Chain) BlockTime(ctx context.Context, n uint64) (time.Time, error) {
	b, err := c.block(ctx, n)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(b.GenUtime), 0), nil
}

// Transfers implements chainapi.Client; TON is read per watched owner
// (ReadBatch with the query's Accounts), never whole blocks.
func (c *Chain) Transfers(context.Context, uint64, uint64) ([]chainapi.Transfer, error) {
	return nil, errors.New("ton: transfers are read per watched owner (ReadBatch)")
}

// Accounts implements chainapi.AccountReader: one account per owner, the
// owner itself (its jetton wallet is looked up when read).
func (c *Chain) Accounts(owners []string) ([]chainapi.AccountCursor, error) {
	out := make([]chainapi.AccountCursor, len(owners))
	for i, o := range owners {
		out[i] = chainapi.AccountCursor{Account: o, Owner: o}
	}
	return out, nil
}

// wallet returns owner's jetton wallet of the master, asked once.
func (c *Chain) wallet(ctx context.Context, owner string) (*address.Address, error) {
	if w, ok := c.wallets.Load(owner); ok {
		return w.(*address.Address), nil
	}
	o, err := parseAddr(owner)
	if err != nil {
		return nil, fmt.Errorf("ton: owner %q: %w", owner, err)
	}
	w, err := c.JettonWallet(ctx, c.master, o)
	if err != nil {
		return nil, fmt.Errorf("ton: jetton wallet of %s: %w", owner, err)
	}
	c.wallets.Store(owner, w)
	c.owners.Store(rawKey(w), owner)
	return w, nil
}

// cursorOf reads an account cursor's signature, "<lt>:<hash>", TON's
// transaction id.
func cursorOf(a chainapi.AccountCursor) (lt uint64, ok bool) {
	s, _, found := strings.Cut(a.Signature, ":")
	if !found {
		return 0, false
	}
	lt, err := strconv.ParseUint(s, 10, 64)
	return lt, err == nil
}

// firstPage and laterPage are how many transactions a read asks at a
// time: most reads find none or a few; a burst pages on.
const (
	firstPage = 64
	laterPage = MaxPage
)

// ownerRead is what one owner's read in [from, to] found.
type ownerRead struct {
	credits []Credit
	cursor  chainapi.AccountCursor
}

// readOwner reads the transactions of a's jetton wallet committed in
// masterchain blocks [from, to], newest first, page by page. Its cursor
// is followed when it was read through from-1 (the batch before this
// one): the read stops at the cursor's logical time, and a transaction
// after it committed below from (an indexer that stored a later block
// first) still counts. Otherwise the read stops at the first
// transaction committed below from. The new cursor is the newest
// transaction committed at or below to.
func (c *Chain) readOwner(ctx context.Context, a chainapi.AccountCursor, from, to uint64) (ownerRead, error) {
	w, err := c.wallet(ctx, a.Owner)
	if err != nil {
		return ownerRead{}, err
	}
	out := ownerRead{cursor: chainapi.AccountCursor{Account: a.Account, Owner: a.Owner, Through: to}}
	afterLT, follow := cursorOf(a)
	follow = follow && a.Through+1 == from
	if follow {
		out.cursor.Signature, out.cursor.Slot = a.Signature, a.Slot
	}
	q := TransactionQuery{Account: w.StringRaw(), Limit: firstPage}
	if follow {
		q.FromLT = afterLT + 1
	}
	newest := true
	for {
		page, err := c.Transactions(ctx, q)
		if err != nil {
			return ownerRead{}, fmt.Errorf("ton: transactions of %s (%s): %w", a.Owner, w.StringRaw(), err)
		}
		for _, t := range page {
			if keyOf(t.Account) != rawKey(w) {
				return ownerRead{}, fmt.Errorf("ton: transactions of %s: the answer lists account %s", w.StringRaw(), t.Account)
			}
			if t.McBlockSeqno == nil {
				return ownerRead{}, fmt.Errorf("ton: transaction %s of %s without its masterchain block: %w", t.Hash, a.Owner, chainapi.ErrIncompleteRead)
			}
			mc, lt := *t.McBlockSeqno, uint64(t.LT)
			switch {
			case mc > to:
				continue // the next batch's
			case !follow && mc < from:
				if newest {
					out.cursor.Signature, out.cursor.Slot = txID(t), mc
				}
				return out, nil
			case follow && lt <= afterLT:
				return out, nil
			}
			if newest {
				out.cursor.Signature, out.cursor.Slot, newest = txID(t), mc, false
			}
			cr, err := creditOf(t)
			if errors.Is(err, errNotCredit) {
				continue
			}
			if err != nil {
				return ownerRead{}, err
			}
			out.credits = append(out.credits, cr)
		}
		if len(page) < q.Limit {
			return out, nil
		}
		q.ToLT, q.Limit = uint64(page[len(page)-1].LT)-1, laterPage
	}
}

// txID is a transaction's id as a cursor keeps it: "<lt>:<hash>".
func txID(t Transaction) string {
	h, _ := hashHex(t.Hash)
	return strconv.FormatUint(uint64(t.LT), 10) + ":" + h
}

// ownerConcurrency is how many owners one batch reads at once.
const ownerConcurrency = 4

// ReadBatch implements chainapi.BatchReader. It first lists the
// masterchain blocks q.Cursor (or q.From) through q.To: the indexer
// holds each with every transaction it committed, so with all listed the
// owners' reads are complete (one missing in the middle, as when the
// indexer stored a later block first, is read again; one below the
// indexer's first is history it does not have). Then it reads each
// owner.
func (c *Chain) ReadBatch(ctx context.Context, q chainapi.BatchQuery) (chainapi.BatchRead, error) {
	lo := q.From
	if q.Cursor > 0 {
		lo = q.Cursor
	}
	hashes, err := c.hashes(ctx, lo, q.To)
	if err != nil {
		return chainapi.BatchRead{}, err
	}
	out := chainapi.BatchRead{Hash: hashes[q.To], CursorHash: hashes[q.Cursor]}
	if q.Cursor == 0 {
		out.CursorHash = ""
	}
	reads := make([]ownerRead, len(q.Accounts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ownerConcurrency)
	for i, a := range q.Accounts {
		g.Go(func() (err error) {
			reads[i], err = c.readOwner(gctx, a, q.From, q.To)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return chainapi.BatchRead{}, err
	}
	out.Accounts = make([]chainapi.AccountCursor, len(reads))
	for i, r := range reads {
		out.Accounts[i] = r.cursor
		for _, cr := range r.credits {
			t, err := c.transfer(ctx, cr, r.cursor.Owner, hashes)
			if err != nil {
				return chainapi.BatchRead{}, err
			}
			out.Transfers = append(out.Transfers, t)
		}
	}
	sortTransfers(out.Transfers)
	return out, nil
}

// listMargin is how many blocks past a batch its listing asks for: the
// indexer orders blocks by time, and several share a second.
const listMargin = 64

// hashes lists masterchain blocks from through to, all of which the
// indexer must hold, and returns their hashes by seqno: block from
// (known from the batch before, or read), then the blocks from its
// logical time on, a page of MaxPage at most.
func (c *Chain) hashes(ctx context.Context, from, to uint64) (map[uint64]string, error) {
	lo, err := c.block(ctx, from)
	if errors.Is(err, chainapi.ErrBlockNotFound) {
		if _, first, ferr := c.Masterchain(ctx); ferr == nil && from < first.Seqno {
			return nil, fmt.Errorf("ton: the indexer's first masterchain block is %d, after %d: %s", first.Seqno, from, paywatch.MsgHistoryShallow)
		}
	}
	if err != nil {
		return nil, err
	}
	out := map[uint64]string{}
	blocks := []Block{lo}
	if to > from {
		more, err := c.BlocksFrom(ctx, uint64(lo.StartLT)+1, int(min(to-from+listMargin, MaxPage)))
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, more...)
	}
	for _, b := range blocks {
		if b.Seqno < from || b.Seqno > to {
			continue
		}
		if out[b.Seqno], err = hashHex(b.RootHash); err != nil {
			return nil, err
		}
		if b.Seqno == to {
			c.last.Store(b)
		}
	}
	if _, ok := out[to]; !ok {
		return nil, fmt.Errorf("masterchain block %d: %w", to, chainapi.ErrBlockNotFound)
	}
	for n := from; n <= to; n++ {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("masterchain block %d not indexed yet, %d is: %w", n, to, chainapi.ErrIncompleteRead)
		}
	}
	return out, nil
}

// transfer turns a credit to owner's wallet into a transfer, its block
// hash from hashes or read.
func (c *Chain) transfer(ctx context.Context, cr Credit, owner string, hashes map[uint64]string) (chainapi.Transfer, error) {
	h, ok := hashes[cr.McSeqno]
	if !ok {
		var err error
		if h, err = c.BlockHash(ctx, cr.McSeqno); err != nil {
			return chainapi.Transfer{}, err
		}
		hashes[cr.McSeqno] = h
	}
	t := chainapi.Transfer{
		Network: c.network, Token: c.token, Contract: c.master.String(), TxHash: cr.TxHash,
		BlockNumber: cr.McSeqno, BlockHash: h, From: cr.From, To: owner, Amount: cr.Amount,
	}
	if m := MemoOf(cr.Comment); m != "" {
		t.Memos = []string{m}
	}
	return t, nil
}

// MemoOf is the memo a comment carries: the comment without surrounding
// space, in capitals (a memo's alphabet has no lower-case letters, and a
// buyer typing it may not use them), "" for none.
func MemoOf(comment string) string {
	return strings.ToUpper(strings.TrimSpace(comment))
}

func sortTransfers(ts []chainapi.Transfer) {
	slices.SortFunc(ts, func(x, y chainapi.Transfer) int {
		return cmp.Or(cmp.Compare(x.BlockNumber, y.BlockNumber), cmp.Compare(x.TxHash, y.TxHash))
	})
}

// TransactionTransfers implements chainapi.Client: the credit of one
// transaction on a USDT jetton wallet (64 hex digits), found false while
// the indexer does not have it. A transaction of any other account, or
// one that credited nothing, is found with none.
func (c *Chain) TransactionTransfers(ctx context.Context, hash string) ([]chainapi.Transfer, bool, error) {
	t, found, err := c.Transaction(ctx, hash)
	if err != nil || !found {
		return nil, false, err
	}
	cr, err := creditOf(t)
	if errors.Is(err, errNotCredit) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	owner, ok, err := c.ownerOf(ctx, cr.Wallet)
	if err != nil || !ok {
		return nil, ok, err
	}
	tr, err := c.transfer(ctx, cr, owner, map[uint64]string{})
	if err != nil {
		return nil, false, err
	}
	return []chainapi.Transfer{tr}, true, nil
}

// ownerOf returns the owner of a jetton wallet of the master: known from
// the owners read, or asked of the indexer and checked against the
// master's own answer. ok is false for any other account.
func (c *Chain) ownerOf(ctx context.Context, wallet string) (string, bool, error) {
	if o, ok := c.owners.Load(wallet); ok {
		return o.(string), true, nil
	}
	info, found, err := c.Wallet(ctx, wallet)
	if err != nil || !found || keyOf(info.Jetton) != rawKey(c.master) {
		return "", false, err
	}
	owner, err := paywatch.NormalizeTONWallet(info.Owner)
	if err != nil {
		return "", false, nil // an owner outside the basechain: no paywatch wallet
	}
	w, err := c.wallet(ctx, owner)
	if err != nil {
		return "", false, err
	}
	return owner, rawKey(w) == wallet, nil
}

// AddressTransfers implements chainapi.Client: the credits to owner in
// masterchain blocks [from, head].
func (c *Chain) AddressTransfers(ctx context.Context, owner string, from uint64) ([]chainapi.Transfer, error) {
	head, err := c.Head(ctx)
	if err != nil {
		return nil, err
	}
	return c.AddressTransfersIn(ctx, owner, from, head)
}

// AddressTransfersIn implements chainapi.AddressRangeReader: the credits
// to owner committed in masterchain blocks [from, to].
func (c *Chain) AddressTransfersIn(ctx context.Context, owner string, from, to uint64) ([]chainapi.Transfer, error) {
	r, err := c.readOwner(ctx, chainapi.AccountCursor{Account: owner, Owner: owner}, from, to)
	if err != nil {
		return nil, err
	}
	hashes := map[uint64]string{}
	var out []chainapi.Transfer
	for _, cr := range r.credits {
		t, err := c.transfer(ctx, cr, owner, hashes)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sortTransfers(out)
	return out, nil
}
