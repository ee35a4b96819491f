package ton

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
	// head is the newest masterchain block read (Finalized).
	head atomic.Uint64
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
	if err == nil {
		c.head.Store(last.Seqno)
	}
	return last.Seqno, err
}

// Finalized implements chainapi.FinalityReader: a masterchain block is
// final once made, so the head, the last one read (no request: a
// confirmation pass follows a poll that read it).
func (c *Chain) Finalized(ctx context.Context) (uint64, error) {
	if h := c.head.Load(); h > 0 {
		return h, nil
	}
	return c.Head(ctx)
}

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

// ownerConcurrency is how many owners one batch reads at once.
const ownerConcurrency = 4

// ReadBatch implements chainapi.BatchReader. It first lists the
// masterchain blocks q.Cursor (or q.From) through q.To: the indexer
// commits each with every transaction it holds, so with all listed no
// credit of the batch is hidden from the owners' reads (one missing, as
// when the indexer stored a later block first, is waited for: the
// scanner never passes a block the indexer has not stored, and a payment's
// final check, which reads on from the scanner's height, can rely on
// that). Then it reads each owner from its cursor, checked link by link
// (readOwner), which also catches an endpoint of several behind the one
// that listed the blocks.
func (c *Chain) ReadBatch(ctx context.Context, q chainapi.BatchQuery) (chainapi.BatchRead, error) {
	lo := q.From
	if q.Cursor > 0 {
		lo = q.Cursor
	}
	hashes, err := c.hashes(ctx, lo, q.To)
	if err != nil {
		return chainapi.BatchRead{}, err
	}
	out := chainapi.BatchRead{Hash: hashes[q.To]}
	if q.Cursor > 0 {
		out.CursorHash = hashes[q.Cursor]
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
const listMargin = 8

// hashes lists masterchain blocks from through to, all of which the
// indexer must hold, and returns their hashes by seqno: block from
// (known from the batch before, or read), then the blocks from its
// logical time on, by pages of MaxPage. A block missing below to (the
// indexer stores several at once and may store a later one first) is
// waited for as one not made yet: ErrBlockNotFound, read again at the
// next poll.
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
	if out[from], err = hashHex(lo.RootHash); err != nil {
		return nil, err
	}
	// Each page starts after the last block of the run listed so far
	// without a gap: blocks of one second come in any order, and one cut
	// off by a page's end is asked again.
	got := map[uint64]Block{from: lo}
	for after := lo; after.Seqno < to; {
		want := int(min(to-after.Seqno+listMargin, MaxPage))
		page, err := c.BlocksFrom(ctx, uint64(after.StartLT)+1, want)
		if err != nil {
			return nil, err
		}
		for _, b := range page {
			if b.Seqno <= from || b.Seqno > to {
				continue
			}
			if out[b.Seqno], err = hashHex(b.RootHash); err != nil {
				return nil, err
			}
			got[b.Seqno] = b
		}
		next := after
		for b, ok := got[next.Seqno+1]; ok; b, ok = got[next.Seqno+1] {
			next = b
		}
		if len(page) < want || next.Seqno == after.Seqno {
			break // the indexer has no more, or not the next block yet
		}
		after = next
	}
	if b, ok := got[to]; ok {
		c.last.Store(b)
	}
	for n := from; n <= to; n++ {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("masterchain block %d not indexed yet (the batch ends at %d): %w", n, to, chainapi.ErrBlockNotFound)
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
	owner, known, ok, err := c.ownerOf(ctx, cr.Wallet)
	switch {
	case err != nil:
		return nil, false, err
	case !known:
		return nil, false, nil // a wallet the indexer has not classified yet: not yet
	case !ok:
		return nil, true, nil // another jetton's wallet, or another contract
	}
	tr, err := c.transfer(ctx, cr, owner, map[uint64]string{})
	if err != nil {
		return nil, false, err
	}
	return []chainapi.Transfer{tr}, true, nil
}

// ownerOf returns the owner of a jetton wallet of the master: known from
// the owners read, or asked of the indexer and checked against the
// master's own answer. known is false while the indexer knows no
// jetton wallet at the address (it classifies a new one a little after
// its first transaction); ok is false for another jetton's wallet or
// another contract.
func (c *Chain) ownerOf(ctx context.Context, wallet string) (owner string, known, ok bool, err error) {
	if o, found := c.owners.Load(wallet); found {
		return o.(string), true, true, nil
	}
	info, found, err := c.Wallet(ctx, wallet)
	if err != nil || !found {
		return "", false, false, err
	}
	if keyOf(info.Jetton) != rawKey(c.master) {
		return "", true, false, nil
	}
	if owner, err = paywatch.NormalizeTONWallet(info.Owner); err != nil {
		return "", true, false, nil // an owner outside the basechain: no paywatch wallet
	}
	w, err := c.wallet(ctx, owner)
	if err != nil {
		return "", false, false, err
	}
	return owner, true, rawKey(w) == wallet, nil
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
	// Every block of the range stored, as a batch's: a credit in one
	// stored late is not passed over.
	hashes, err := c.hashes(ctx, from, to)
	if err != nil {
		return nil, err
	}
	r, err := c.readOwner(ctx, chainapi.AccountCursor{Account: owner, Owner: owner}, from, to)
	if err != nil {
		return nil, err
	}
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
