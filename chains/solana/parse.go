// Package solana reads SPL token transfers from Solana's JSON-RPC, with
// github.com/gagliardetto/solana-go's wire types (issue 40). This file is
// the transaction parser: from one getTransaction answer (encoding "json",
// maxSupportedTransactionVersion 0) it finds what each token account was
// credited, by SPL Token and Token-2022 Transfer and TransferChecked
// instructions, outer or inner (a transfer made by another program), and
// never credits a failed transaction.
//
// The amount credited is what the account received: the instructions'
// amounts into an account, less those out of it, must equal its post − pre
// token balance (the node's own account of the transaction). Where they
// disagree (a Token-2022 transfer fee withheld, say) the balance wins: a
// single credit is reduced to the balance's increase, and several credits
// whose sum disagrees are refused as one credit of the increase, at the
// first credit's place, so no parsed number that disagrees is counted.
package solana

import (
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
	if len(tx.Signatures) == 0 {
		return nil, errors.New("solana: transaction without a signature")
	}
	// Account indexes count over the static keys, then the loaded
	// writable ones, then the loaded read-only ones.
	keys := slices.Concat(tx.Message.AccountKeys, res.Meta.LoadedAddresses.Writable, res.Meta.LoadedAddresses.ReadOnly)
	signers := int(tx.Message.Header.NumRequiredSignatures)
	p := parser{keys: keys, signers: signers, balances: balancesOf(res.Meta, keys)}

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
	credits, err := p.settle()
	if err != nil {
		return nil, err
	}
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
// from preTokenBalances (created by the transaction) had 0.
func balancesOf(meta *rpc.TransactionMeta, keys []sol.PublicKey) map[string]*balance {
	out := map[string]*balance{}
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
			if !ok {
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
	return out
}

// parser gathers the token movements of one transaction.
type parser struct {
	keys     []sol.PublicKey
	signers  int
	balances map[string]*balance
	credits  []Credit
	// net is what the instructions moved into (+) and out of (−) each
	// token account.
	net map[string]*big.Int
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
	var src, dst, mint uint16
	var rest []uint16
	switch data[0] {
	case tagTransfer:
		if len(accounts) < 3 {
			return nil
		}
		src, dst, rest = accounts[0], accounts[1], accounts[3:]
	case tagTransferChecked:
		if len(accounts) < 4 || len(data) < 10 {
			return nil
		}
		src, mint, dst, rest = accounts[0], accounts[1], accounts[2], accounts[4:]
	default:
		return nil
	}
	amount := new(big.Int).SetUint64(binary.LittleEndian.Uint64(data[1:9]))
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
	if data[0] == tagTransferChecked {
		m, err := p.key(mint)
		if err != nil {
			return err
		}
		if m != b.mint {
			return fmt.Errorf("solana: transfer of mint %s to %s, an account of mint %s", m, to, b.mint)
		}
	}
	c := Credit{Position: pos, Mint: b.mint, Program: prog, Account: to, Owner: b.owner, From: from, Amount: amount}
	if sb := p.balances[from]; sb != nil && sb.owner != "" {
		c.From = sb.owner
	}
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
	if p.net == nil {
		p.net = map[string]*big.Int{}
	}
	add := func(acct string, v *big.Int) {
		if p.net[acct] == nil {
			p.net[acct] = new(big.Int)
		}
		p.net[acct].Add(p.net[acct], v)
	}
	add(to, amount)
	add(from, new(big.Int).Neg(amount))
	return nil
}

// settle holds the credits to the balances (the package comment says how).
func (p *parser) settle() ([]Credit, error) {
	var out []Credit
	done := map[string]bool{}
	for _, c := range p.credits {
		if done[c.Account] {
			continue
		}
		done[c.Account] = true
		var mine []Credit
		for _, o := range p.credits {
			if o.Account == c.Account {
				mine = append(mine, o)
			}
		}
		b := p.balances[c.Account]
		delta := new(big.Int).Sub(b.post, b.pre)
		if p.net[c.Account].Cmp(delta) == 0 {
			out = append(out, mine...)
			continue
		}
		if delta.Sign() <= 0 {
			continue // the account ended no richer: nothing arrived
		}
		one := mine[0]
		if len(mine) == 1 && delta.Cmp(one.Amount) > 0 {
			return nil, fmt.Errorf("solana: %s received %s by its balance, more than the %s its transfer names", c.Account, delta, one.Amount)
		}
		one.Amount = delta
		out = append(out, one)
	}
	slices.SortStableFunc(out, func(a, b Credit) int { return int(a.Position) - int(b.Position) })
	return out, nil
}
