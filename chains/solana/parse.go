// Package solana reads SPL token transfers from Solana's JSON-RPC, with
// github.com/gagliardetto/solana-go's wire types (issue 40). This file is
// the transaction parser: from one getTransaction answer (encoding "json",
// maxSupportedTransactionVersion 0) it finds what each token account was
// credited, by SPL Token and Token-2022 Transfer and TransferChecked
// instructions, outer or inner (a transfer made by another program), and
// never credits a failed transaction.
//
// The amount credited is what the account received, by the node's own
// account of the transaction: an account's credits are held to its post −
// pre token balance. Credits into an account add up to what its
// instructions name; when the balance rose by less (a Token-2022 transfer
// fee withheld), or the account also paid out in the same transaction
// (money in and out again leaves it no richer), the credits shrink to the
// increase, the latest first, and an account that ended no richer is
// credited nothing. When the balance rose by more than named (a transfer
// of a kind this parser does not read), only what is named is credited.
// No transaction is refused for one account's numbers, so no transfer can
// make an account's history unreadable.
package solana

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"slices"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// The token programs whose transfers count; PYUSD is a Token-2022 mint.
var tokenPrograms = []sol.PublicKey{sol.TokenProgramID, sol.Token2022ProgramID}

// Instruction tags of the token programs (the first byte of the data).
const (
	tagTransfer        = 3  // accounts: source, destination, authority, signers…
	tagTransferChecked = 12 // accounts: source, mint, destination, authority, signers…
	// tagTransferFee is Token-2022's transfer-fee extension; its variant
	// 1 is TransferCheckedWithFee (amount u64, decimals u8, fee u64), with
	// TransferChecked's accounts.
	tagTransferFee         = 26
	variantTransferWithFee = 1
)

// Credit is one token transfer into a token account.
type Credit struct {
	// Signature is the transaction's first signature (base58).
	Signature string
	// Slot is the transaction's slot.
	Slot uint64
	// Position orders the credits of a transaction and names each one:
	// the outer instruction's index << 16 | (the inner instruction's index
	// + 1), 0 for the outer instruction itself.
	Position uint32
	// Mint is the token's mint; Program the token program that moved it.
	Mint, Program string
	// Account is the credited token account, Owner its owner (the wallet
	// it belongs to); From is the owner of the debited account, or the
	// debited account itself when the answer names no owner.
	Account, Owner, From string
	// Amount is in the mint's base units.
	Amount *big.Int
	// References are the instruction's accounts past its authority that
	// do not sign the transaction: Solana Pay references (SPEC.md), in
	// order. Signers there (a multisig's, or a wallet repeating the owner)
	// are not references.
	References []string
}

// ErrNoTransaction is returned for an answer without a transaction (null:
// not found, or not yet at the asked commitment).
var ErrNoTransaction = errors.New("solana: no transaction in the answer")

// ParseTransaction returns the token credits of one transaction, in
// instruction order; nil for a failed one.
func ParseTransaction(res *rpc.GetTransactionResult) ([]Credit, error) {
	if res == nil || res.Transaction == nil || res.Meta == nil {
		return nil, ErrNoTransaction
	}
	if res.Meta.Err != nil {
		return nil, nil
	}
	tx, err := res.Transaction.GetTransaction()
	if err != nil {
		return nil, fmt.Errorf("solana: decode transaction: %w", err)
	}
	if tx == nil {
		return nil, ErrNoTransaction
	}
	if len(tx.Signatures) == 0 {
		return nil, errors.New("solana: transaction without a signature")
	}
	// Account indexes count over the static keys, then the loaded
	// writable ones, then the loaded read-only ones.
	keys := slices.Concat(tx.Message.AccountKeys, res.Meta.LoadedAddresses.Writable, res.Meta.LoadedAddresses.ReadOnly)
	signers := int(tx.Message.Header.NumRequiredSignatures)
	balances, err := balancesOf(res.Meta, keys)
	if err != nil {
		return nil, err
	}
	p := parser{keys: keys, signers: signers, balances: balances}

	inner := map[uint16][]rpc.CompiledInstruction{}
	for _, in := range res.Meta.InnerInstructions {
		inner[in.Index] = append(inner[in.Index], in.Instructions...)
	}
	for i, ix := range tx.Message.Instructions {
		if err := p.instruction(uint32(i)<<16, ix.ProgramIDIndex, ix.Accounts, ix.Data); err != nil {
			return nil, err
		}
		for j, in := range inner[uint16(i)] {
			if err := p.instruction(uint32(i)<<16|uint32(j+1), in.ProgramIDIndex, in.Accounts, in.Data); err != nil {
				return nil, err
			}
		}
	}
	credits := p.settle()
	for i := range credits {
		credits[i].Signature = tx.Signatures[0].String()
		credits[i].Slot = res.Slot
	}
	return credits, nil
}

// balance is one token account's balances around the transaction.
type balance struct {
	mint, owner, program string
	pre, post            *big.Int
}

// balancesOf reads the token balances by account; an account missing
// from preTokenBalances (created by the transaction) had 0. A balance
// that is not an amount is the provider's fault: an error, never a 0.
func balancesOf(meta *rpc.TransactionMeta, keys []sol.PublicKey) (map[string]*balance, error) {
	out := map[string]*balance{}
	var bad error
	read := func(list []rpc.TokenBalance, post bool) {
		for _, tb := range list {
			if int(tb.AccountIndex) >= len(keys) || tb.UiTokenAmount == nil {
				continue
			}
			acct := keys[tb.AccountIndex].String()
			b := out[acct]
			if b == nil {
				b = &balance{mint: tb.Mint.String(), pre: new(big.Int), post: new(big.Int)}
				out[acct] = b
			}
			if tb.Owner != nil {
				b.owner = tb.Owner.String()
			}
			if tb.ProgramId != nil {
				b.program = tb.ProgramId.String()
			}
			v, ok := new(big.Int).SetString(tb.UiTokenAmount.Amount, 10)
			if !ok || v.Sign() < 0 {
				bad = fmt.Errorf("solana: token balance %q of %s is not an amount", tb.UiTokenAmount.Amount, acct)
				continue
			}
			if post {
				b.post = v
			} else {
				b.pre = v
			}
		}
	}
	read(meta.PreTokenBalances, false)
	read(meta.PostTokenBalances, true)
	return out, bad
}

// parser gathers the token movements of one transaction.
type parser struct {
	keys     []sol.PublicKey
	signers  int
	balances map[string]*balance
	credits  []Credit
}

func (p *parser) key(i uint16) (string, error) {
	if int(i) >= len(p.keys) {
		return "", fmt.Errorf("solana: account index %d of %d keys", i, len(p.keys))
	}
	return p.keys[i].String(), nil
}

// instruction reads one instruction, outer or inner.
func (p *parser) instruction(pos uint32, program uint16, accounts []uint16, data []byte) error {
	prog, err := p.key(program)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(tokenPrograms, func(k sol.PublicKey) bool { return k.String() == prog }) || len(data) < 9 {
		return nil
	}
	var src, dst, mint, auth uint16
	var rest []uint16
	checked := true
	var amount *big.Int
	switch {
	case data[0] == tagTransfer && len(accounts) >= 3:
		src, dst, auth, rest, checked = accounts[0], accounts[1], accounts[2], accounts[3:], false
		amount = new(big.Int).SetUint64(binary.LittleEndian.Uint64(data[1:9]))
	case data[0] == tagTransferChecked && len(accounts) >= 4 && len(data) >= 10:
		src, mint, dst, auth, rest = accounts[0], accounts[1], accounts[2], accounts[3], accounts[4:]
		amount = new(big.Int).SetUint64(binary.LittleEndian.Uint64(data[1:9]))
	case data[0] == tagTransferFee && len(data) >= 19 && data[1] == variantTransferWithFee && len(accounts) >= 4 && prog == sol.Token2022ProgramID.String():
		src, mint, dst, auth, rest = accounts[0], accounts[1], accounts[2], accounts[3], accounts[4:]
		gross := binary.LittleEndian.Uint64(data[2:10])
		fee := binary.LittleEndian.Uint64(data[11:19])
		if fee > gross {
			return nil // the program refuses it; a successful one cannot say so
		}
		amount = new(big.Int).SetUint64(gross - fee) // the fee is withheld in the account
	default:
		return nil
	}
	from, err := p.key(src)
	if err != nil {
		return err
	}
	to, err := p.key(dst)
	if err != nil {
		return err
	}
	if to == from || amount.Sign() == 0 {
		return nil // moves nothing: never a payment
	}
	b := p.balances[to]
	if b == nil {
		// No balance before or after: an account made and closed within
		// the transaction (wrapped SOL on a swap's way), never a wallet's
		// associated token account, which outlives it.
		return nil
	}
	if checked {
		m, err := p.key(mint)
		if err != nil {
			return err
		}
		if m != b.mint {
			return fmt.Errorf("solana: transfer of mint %s to %s, an account of mint %s", m, to, b.mint)
		}
	}
	c := Credit{Position: pos, Mint: b.mint, Program: prog, Account: to, Owner: b.owner, Amount: amount}
	// The sender: the debited account's owner, else the authority that
	// signed the transfer (the debited account may be gone).
	if sb := p.balances[from]; sb != nil && sb.owner != "" {
		c.From = sb.owner
	} else if c.From, err = p.key(auth); err != nil {
		return err
	}
	// References: accounts past the authority that do not sign. A
	// Token-2022 transfer hook's extra accounts would be listed too; they
	// match no payment's reference, so they do no harm.
	for _, r := range rest {
		if int(r) < p.signers {
			continue // a signer: a multisig's, or the owner repeated
		}
		ref, err := p.key(r)
		if err != nil {
			return err
		}
		c.References = append(c.References, ref)
	}
	p.credits = append(p.credits, c)
	return nil
}

// settle holds the credits to the balances (the package comment says
// how): per account, the credits may total the increase of its balance at
// most, the instructions' named amounts at most, and nothing when it paid
// out and ended no richer.
func (p *parser) settle() []Credit {
	var out []Credit
	done := map[string]bool{}
	for _, c := range p.credits {
		if done[c.Account] {
			continue
		}
		done[c.Account] = true
		var mine []Credit
		named := new(big.Int)
		for _, o := range p.credits {
			if o.Account == c.Account {
				mine = append(mine, o)
				named.Add(named, o.Amount)
			}
		}
		b := p.balances[c.Account]
		increase := new(big.Int).Sub(b.post, b.pre)
		if increase.Sign() <= 0 {
			continue // the account ended no richer: nothing arrived
		}
		budget := named
		if increase.Cmp(named) < 0 {
			budget = increase
		}
		// Keep the earliest credits whole; the latest give up the
		// shortfall.
		for _, o := range mine {
			if budget.Sign() <= 0 {
				break
			}
			if o.Amount.Cmp(budget) > 0 {
				o.Amount = new(big.Int).Set(budget)
			}
			budget = new(big.Int).Sub(budget, o.Amount)
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b Credit) int { return cmp.Compare(a.Position, b.Position) })
	return out
}
