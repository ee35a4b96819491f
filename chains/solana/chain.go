package solana

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"golang.org/x/sync/errgroup"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// Mint is one token of a Solana network: its mint and the token program
// that owns it (SPL Token, or Token-2022 for PYUSD), which the associated
// token accounts are derived with.
type Mint struct {
	Token         paywatch.Token
	Mint, Program string
}

// Chain is a Solana network as the scanners read it (chainapi.Client):
//
//   - the head is the newest confirmed slot, and a block's hash is its
//     blockhash; a slot that holds no block (skipped, or its block on a
//     fork the cluster left) has the hash skippedHash names, so a
//     transfer recorded in a block that left the chain is never taken for
//     canonical;
//   - transfers are read per watched token account (AccountReader):
//     getSignaturesForAddress from the account's cursor, then
//     getTransaction for each new signature that did not fail, and
//     getBlock for the blockhash of each slot that held one;
//   - a transfer has its confirmations once its slot is finalized
//     (FinalityReader), whatever its depth.
type Chain struct {
	*Client
	network paywatch.Network
	mints   []Mint
	byMint  map[string]Mint
	// owned caches each owner's derived token accounts: every poll asks
	// for them, and a derivation hashes until it finds a point off the
	// curve.
	owned sync.Map // owner → []chainapi.AccountCursor
}

// NewChain returns network's Chain over c, reading mints.
func NewChain(network paywatch.Network, c *Client, mints []Mint) (*Chain, error) {
	ch := &Chain{Client: c, network: network, mints: mints, byMint: map[string]Mint{}}
	for _, m := range mints {
		if _, err := sol.PublicKeyFromBase58(m.Mint); err != nil {
			return nil, fmt.Errorf("solana: %s mint %q: %w", m.Token, m.Mint, err)
		}
		if _, err := sol.PublicKeyFromBase58(m.Program); err != nil {
			return nil, fmt.Errorf("solana: %s program %q: %w", m.Token, m.Program, err)
		}
		ch.byMint[m.Mint] = m
	}
	return ch, nil
}

// DialConfig returns the Chain of cfg: the endpoints of cfg.URLs (with
// their headers), and the network's mints, cfg.Contracts' where it names
// them (a devnet's), with each token's program from the table.
func DialConfig(cfg chainapi.Config) (*Chain, error) {
	info, ok := paywatch.LookupNetwork(cfg.Network)
	if !ok || info.Family != paywatch.FamilySolana {
		return nil, fmt.Errorf("solana: %q is not a Solana network", cfg.Network)
	}
	if len(cfg.Headers) != 0 && len(cfg.Headers) != len(cfg.URLs) {
		return nil, fmt.Errorf("solana: %s has %d header sets for %d RPC URLs", cfg.Network, len(cfg.Headers), len(cfg.URLs))
	}
	c, err := Dial(cfg.URLs, cfg.Headers, cfg.Observe)
	if err != nil {
		return nil, err
	}
	var mints []Mint
	for _, t := range info.Tokens {
		mint := paywatch.DefaultContract(cfg.Network, t)
		if cfg.Contracts != nil {
			if mint, ok = cfg.Contracts[t]; !ok {
				continue
			}
		}
		mints = append(mints, Mint{Token: t, Mint: mint, Program: paywatch.TokenProgram(cfg.Network, t)})
	}
	return NewChain(cfg.Network, c, mints)
}

// accountConcurrency is how many watched accounts one batch reads at once.
const accountConcurrency = 4

// skippedHashPrefix starts the hash of a slot without a block: the hash of
// the newest block below it follows, so it changes when that block does.
const skippedHashPrefix = "skipped:"

// skippedLookback is how far below a slot without a block BlockHash looks
// for the newest one that has one (getBlocks).
const skippedLookback = 512

// Network implements chainapi.Client.
func (c *Chain) Network() paywatch.Network { return c.network }

// Close implements chainapi.Client.
func (c *Chain) Close() {}

// Head implements chainapi.Client: the newest confirmed slot.
func (c *Chain) Head(ctx context.Context) (uint64, error) {
	return c.Slot(ctx, rpc.CommitmentConfirmed)
}

// Finalized implements chainapi.FinalityReader: the newest finalized slot.
func (c *Chain) Finalized(ctx context.Context) (uint64, error) {
	return c.Slot(ctx, rpc.CommitmentFinalized)
}

// rpcCode returns the JSON-RPC error code err carries, or 0.
func rpcCode(err error) int {
	var re *RPCError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// block reads slot's block without its transactions: nil, nil for a slot
// without one (-32007), ErrBlockNotFound above the node's confirmed slot
// (-32004).
func (c *Chain) block(ctx context.Context, slot uint64) (*rpc.GetBlockResult, error) {
	no := false
	var b *rpc.GetBlockResult
	err := c.do(ctx, func(rc *rpc.Client) (err error) {
		b, err = rc.GetBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{
			TransactionDetails: rpc.TransactionDetailsNone, Rewards: &no, Commitment: rpc.CommitmentConfirmed,
		})
		return err
	})
	switch {
	case rpcCode(err) == -32007 || rpcCode(err) == -32009:
		// Skipped ("or missing due to ledger jump" / "or missing in
		// long-term storage"): no block there.
		return nil, nil
	case rpcCode(err) == -32004:
		return nil, fmt.Errorf("slot %d: %w", slot, chainapi.ErrBlockNotFound)
	case errors.Is(err, rpc.ErrNotFound) || (err == nil && b == nil):
		return nil, fmt.Errorf("slot %d: %w", slot, chainapi.ErrBlockNotFound)
	}
	return b, err
}

// BlockHash implements chainapi.Client: the blockhash of slot n's block,
// or, for a slot without a block, skippedHashPrefix and the hash of the
// newest block below it (two more calls; a block that left the chain for
// a fork reads so too).
func (c *Chain) BlockHash(ctx context.Context, n uint64) (string, error) {
	b, err := c.block(ctx, n)
	if err != nil || b != nil {
		if err != nil {
			return "", err
		}
		return b.Blockhash.String(), nil
	}
	var made rpc.BlocksResult
	start := n - min(n, skippedLookback)
	err = c.do(ctx, func(rc *rpc.Client) (err error) {
		made, err = rc.GetBlocks(ctx, start, &n, rpc.CommitmentConfirmed)
		return err
	})
	if err != nil {
		return "", err
	}
	if len(made) == 0 {
		return skippedHashPrefix + strconv.FormatUint(start, 10), nil
	}
	prev, err := c.block(ctx, made[len(made)-1])
	if err != nil {
		return "", err
	}
	if prev == nil {
		return "", fmt.Errorf("slot %d: listed by getBlocks, then skipped: %w", made[len(made)-1], chainapi.ErrIncompleteRead)
	}
	return skippedHashPrefix + prev.Blockhash.String(), nil
}

// BlockTime implements chainapi.BlockTimer: the time of slot n's block,
// or of the newest block below it when n holds none.
func (c *Chain) BlockTime(ctx context.Context, n uint64) (time.Time, error) {
	for slot := n; ; slot-- {
		var t *sol.UnixTimeSeconds
		err := c.do(ctx, func(rc *rpc.Client) (err error) {
			t, err = rc.GetBlockTime(ctx, slot)
			return err
		})
		switch {
		case rpcCode(err) == -32004:
			return time.Time{}, fmt.Errorf("slot %d: %w", slot, chainapi.ErrBlockNotFound)
		case (rpcCode(err) == -32007 || rpcCode(err) == -32009) && slot > 0 && n-slot < skippedLookback:
			continue
		case err != nil:
			return time.Time{}, err
		case t == nil:
			return time.Time{}, fmt.Errorf("slot %d: no block time: %w", slot, chainapi.ErrBlockNotFound)
		}
		return t.Time(), nil
	}
}

// Accounts implements chainapi.AccountReader: each owner's associated
// token account of every mint, derived (never asked of a provider).
func (c *Chain) Accounts(owners []string) ([]chainapi.AccountCursor, error) {
	out := make([]chainapi.AccountCursor, 0, len(owners)*len(c.mints))
	for _, o := range owners {
		if accts, ok := c.owned.Load(o); ok {
			out = append(out, accts.([]chainapi.AccountCursor)...)
			continue
		}
		accts := make([]chainapi.AccountCursor, 0, len(c.mints))
		for _, m := range c.mints {
			ata, err := AssociatedTokenAccount(o, m.Mint, m.Program)
			if err != nil {
				return nil, fmt.Errorf("solana: owner %q: %w", o, err)
			}
			accts = append(accts, chainapi.AccountCursor{Account: ata, Owner: o})
		}
		c.owned.Store(o, accts)
		out = append(out, accts...)
	}
	return out, nil
}

// Transfers implements chainapi.Client; a Solana network is read per
// account (ReadBatch with the query's Accounts), never whole blocks.
func (c *Chain) Transfers(context.Context, uint64, uint64) ([]chainapi.Transfer, error) {
	return nil, errors.New("solana: transfers are read per watched account (ReadBatch)")
}

// batch is what one read gathers: each slot's hash and each signature's
// transfers, read once however many watched accounts list them.
type batch struct {
	c      *Chain
	mu     sync.Mutex
	hashes map[uint64]string
	txs    map[string][]chainapi.Transfer
}

// hash returns slot's block hash, read once per batch.
func (b *batch) hash(ctx context.Context, slot uint64) (string, error) {
	b.mu.Lock()
	h, ok := b.hashes[slot]
	b.mu.Unlock()
	if ok {
		return h, nil
	}
	h, err := b.c.BlockHash(ctx, slot)
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	b.hashes[slot] = h
	b.mu.Unlock()
	return h, nil
}

// transfers returns the token transfers of one listed signature, read
// once per batch: every credit to a token account of the chain's mints,
// the recipient named by the account's owner. A transaction the node
// listed but does not return, or returns in another slot, was read while
// the chain moved (ErrIncompleteRead: the batch is read again).
func (b *batch) transfers(ctx context.Context, s *rpc.TransactionSignature) ([]chainapi.Transfer, error) {
	sig := s.Signature.String()
	b.mu.Lock()
	ts, ok := b.txs[sig]
	b.mu.Unlock()
	if ok {
		return ts, nil
	}
	credits, found, err := b.c.Credits(ctx, sig, rpc.CommitmentConfirmed)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("signature %s listed, then not found: %w", sig, chainapi.ErrIncompleteRead)
	}
	if ts, err = b.transfersOf(ctx, sig, s.Slot, credits); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.txs[sig] = ts
	b.mu.Unlock()
	return ts, nil
}

// txConcurrency is how many getTransaction calls one account's read has
// in flight: a busy account catching up reads hundreds.
const txConcurrency = 8

// transfersOf turns one transaction's credits into transfers: every
// credit to a token account of the chain's mints, in slot (the slot the
// transaction was listed in, which the credits must name too), the
// recipient named by the account's owner.
func (b *batch) transfersOf(ctx context.Context, sig string, slot uint64, credits []Credit) ([]chainapi.Transfer, error) {
	var ts []chainapi.Transfer
	for _, cr := range credits {
		m, ok := b.c.byMint[cr.Mint]
		if !ok || cr.Program != m.Program {
			continue // another token
		}
		if cr.Slot != slot {
			return nil, fmt.Errorf("signature %s listed in slot %d, read in %d: %w", sig, slot, cr.Slot, chainapi.ErrIncompleteRead)
		}
		h, err := b.hash(ctx, cr.Slot)
		if err != nil {
			return nil, err
		}
		ts = append(ts, chainapi.Transfer{
			Network: b.c.network, Token: m.Token, Contract: m.Mint, TxHash: sig, LogIndex: cr.Position,
			BlockNumber: cr.Slot, BlockHash: h, From: cr.From, To: cr.Owner, Amount: cr.Amount,
			Memos: slices.Clone(cr.References),
		})
	}
	return ts, nil
}

// account reads one watched account's signatures in [from, to] and
// returns its transfers and new cursor: the newest signature listed at or
// below to (failed ones too), read through to. Its cursor is followed
// only when it was read through the slot just before from (the batch
// before this one); otherwise (no cursor yet, a scan gone back for a
// reorg, an account not read for a while, such as a wallet registered
// again) the account is read by slot from from. Every page comes from a
// node that has reached to, so none answers for slots it has not seen.
func (b *batch) account(ctx context.Context, a chainapi.AccountCursor, from, to uint64) ([]chainapi.Transfer, chainapi.AccountCursor, error) {
	q := SignatureQuery{Cursor: Cursor{Signature: a.Signature, Slot: a.Slot}, FromSlot: from, Through: a.Through, MinContextSlot: to}
	if q.Cursor.Signature == "" || q.Cursor.Slot >= from || a.Through+1 != from {
		q.Cursor, q.Through = Cursor{}, 0
	}
	sigs, err := b.c.Signatures(ctx, a.Account, q, rpc.CommitmentConfirmed)
	if err != nil {
		return nil, a, fmt.Errorf("account %s: %w", a.Account, err)
	}
	next := a
	next.Signature, next.Slot, next.Through = q.Cursor.Signature, q.Cursor.Slot, to
	var todo []*rpc.TransactionSignature
	for _, s := range sigs {
		if s.Slot > to {
			break // above the batch: the next one reads it
		}
		next.Signature, next.Slot = s.Signature.String(), s.Slot
		if s.Err == nil {
			todo = append(todo, s)
		}
	}
	found := make([][]chainapi.Transfer, len(todo))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(txConcurrency)
	for i, s := range todo {
		g.Go(func() (err error) {
			found[i], err = b.transfers(gctx, s)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, a, err
	}
	var out []chainapi.Transfer
	for _, ts := range found {
		for _, t := range ts {
			if t.To == a.Owner {
				out = append(out, t)
			}
		}
	}
	return out, next, nil
}

// ReadBatch implements chainapi.BatchReader: the hash of slot q.To, the
// transfers in slots [q.From, q.To] to q.Accounts, and the hash of slot
// q.Cursor, in that order. Each transfer is returned once, however many
// of the accounts list its transaction.
func (c *Chain) ReadBatch(ctx context.Context, q chainapi.BatchQuery) (chainapi.BatchRead, error) {
	var out chainapi.BatchRead
	var err error
	if out.Hash, err = c.BlockHash(ctx, q.To); err != nil {
		return chainapi.BatchRead{}, err
	}
	b := &batch{c: c, hashes: map[uint64]string{q.To: out.Hash}, txs: map[string][]chainapi.Transfer{}}
	found := make([][]chainapi.Transfer, len(q.Accounts))
	out.Accounts = make([]chainapi.AccountCursor, len(q.Accounts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(accountConcurrency)
	for i, a := range q.Accounts {
		g.Go(func() (err error) {
			found[i], out.Accounts[i], err = b.account(gctx, a, q.From, q.To)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return chainapi.BatchRead{}, err
	}
	seen := map[paywatch.TransferKey]bool{}
	for _, ts := range found {
		for _, t := range ts {
			if !seen[t.Key()] {
				seen[t.Key()] = true
				out.Transfers = append(out.Transfers, t)
			}
		}
	}
	slices.SortFunc(out.Transfers, func(x, y chainapi.Transfer) int {
		return cmp.Or(cmp.Compare(x.BlockNumber, y.BlockNumber), cmp.Compare(x.TxHash, y.TxHash), cmp.Compare(x.LogIndex, y.LogIndex))
	})
	if q.Cursor > 0 {
		if out.CursorHash, err = c.BlockHash(ctx, q.Cursor); err != nil {
			return chainapi.BatchRead{}, err
		}
	}
	return out, nil
}

// TransactionTransfers implements chainapi.Client: the token transfers of
// one confirmed transaction, found false while the node does not have it
// (a failed one is found, with none).
func (c *Chain) TransactionTransfers(ctx context.Context, sig string) ([]chainapi.Transfer, bool, error) {
	credits, found, err := c.Credits(ctx, sig, rpc.CommitmentConfirmed)
	if err != nil || !found {
		return nil, false, err
	}
	if len(credits) == 0 {
		return nil, true, nil
	}
	b := &batch{c: c, hashes: map[uint64]string{}, txs: map[string][]chainapi.Transfer{}}
	ts, err := b.transfersOf(ctx, sig, credits[0].Slot, credits)
	if err != nil {
		return nil, false, err
	}
	return ts, true, nil
}

// AddressTransfers implements chainapi.Client: the transfers to owner's
// token accounts in slots [from, head].
func (c *Chain) AddressTransfers(ctx context.Context, owner string, from uint64) ([]chainapi.Transfer, error) {
	head, err := c.Head(ctx)
	if err != nil {
		return nil, err
	}
	return c.AddressTransfersIn(ctx, owner, from, head)
}

// AddressTransfersIn implements chainapi.AddressRangeReader: the
// transfers to owner's token accounts in slots [from, to], one
// getSignaturesForAddress per mint (and page) and a getTransaction per
// signature.
func (c *Chain) AddressTransfersIn(ctx context.Context, owner string, from, to uint64) ([]chainapi.Transfer, error) {
	accounts, err := c.Accounts([]string{owner})
	if err != nil {
		return nil, err
	}
	read, err := c.ReadBatch(ctx, chainapi.BatchQuery{From: from, To: to, Head: to, Accounts: accounts})
	if err != nil {
		return nil, err
	}
	return read.Transfers, nil
}

// Calls implements chainapi.CallCounter.
func (c *Chain) Calls() uint64 { return c.calls.Load() }
