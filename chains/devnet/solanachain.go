package devnet

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	sol "github.com/gagliardetto/solana-go"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/solana"
)

// The Solana devnet (issue 40, item 5): an in-memory chain behind an
// HTTP JSON-RPC server that answers the calls chains/solana makes
// (getGenesisHash, getSlot, getHealth, minimumLedgerSlot, getTokenSupply,
// getSignaturesForAddress, getTransaction) in mainnet's wire format: a
// transfer is a real signed legacy transaction with one TransferChecked,
// its answer has the keys and shapes of a recorded mainnet-beta one
// (solanachain_test.go holds them side by side). Slots come at the
// chain's pace, some are skipped as leaders skip them, a transaction is
// finalized 32 slots behind the newest, and a reorg drops the newest slots
// that are not finalized, with their transactions.

// solanaFinality is how many slots behind the newest a slot is finalized.
const solanaFinality = 32

// solanaSkipEvery makes every 7th slot of a started devnet a skipped one,
// as leaders now and then skip theirs.
const solanaSkipEvery = 7

// SolanaMint is a devnet token: its mint, program and decimals.
type SolanaMint struct {
	Token    paywatch.Token
	Mint     string
	Program  string
	Decimals uint8
}

// solanaKey is a devnet key drawn from a label, so it is the same on every
// run: mints and the faucet.
func solanaKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("paywatch devnet solana " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// DefaultSolanaMints are the devnet's tokens: USDT and USDC under SPL
// Token, PYUSD under Token-2022, 6 decimals each, at keys of their own
// (a devnet transfer must never be mistaken for a mainnet one).
func DefaultSolanaMints() []SolanaMint {
	mint := func(t paywatch.Token, program sol.PublicKey) SolanaMint {
		return SolanaMint{Token: t, Mint: sol.PublicKeyFromBytes(solanaKey("mint " + string(t)).Public().(ed25519.PublicKey)).String(), Program: program.String(), Decimals: 6}
	}
	return []SolanaMint{mint(paywatch.USDT, sol.TokenProgramID), mint(paywatch.USDC, sol.TokenProgramID), mint(paywatch.PYUSD, sol.Token2022ProgramID)}
}

// solanaTx is one devnet transaction.
type solanaTx struct {
	sig      string
	slot     uint64
	result   map[string]any // getTransaction's result, less slot and blockTime
	accounts []string       // the addresses getSignaturesForAddress lists it under
	deltas   map[string]*big.Int
	failed   bool
	created  string          // the token account the transfer made, if any
	transfer *solanaTransfer // what it moved, to send again (reorg's reinclude)
}

// solanaChain is the devnet chain.
type solanaChain struct {
	network paywatch.Network
	mints   []SolanaMint
	faucet  sol.PrivateKey
	genesis string
	srv     *http.Server
	url     string

	mu        sync.RWMutex
	slot      uint64   // the newest slot
	made      []uint64 // the slots that were made (not skipped), ascending
	skipEvery uint64   // every skipEvery-th slot is skipped; 0 none
	txs       map[string]*solanaTx
	order     []*solanaTx // oldest first
	balances  map[string]*big.Int
	accounts  map[string]solanaAccount // token account → what it is
	times     map[uint64]int64         // block time of each made slot
	lastTime  int64
}

// solanaAccount is a token account: its owner, mint and program.
type solanaAccount struct {
	owner string
	mint  SolanaMint
}

// startSolana starts the chain and its JSON-RPC server on a free loopback
// port; the faucet holds 1,000,000,000 of each mint.
func startSolana(network paywatch.Network, mints []SolanaMint, skipEvery uint64) (*solanaChain, error) {
	c := &solanaChain{
		network: network, mints: mints, faucet: sol.PrivateKey(solanaKey("faucet")), genesis: solana.DevnetGenesis,
		skipEvery: skipEvery, txs: map[string]*solanaTx{}, times: map[uint64]int64{}, balances: map[string]*big.Int{}, accounts: map[string]solanaAccount{},
	}
	// Slot 0 is the genesis block, as on every cluster.
	c.made, c.times[0] = []uint64{0}, time.Now().Unix()
	for _, m := range mints {
		ata, err := solana.AssociatedTokenAccount(c.faucet.PublicKey().String(), m.Mint, m.Program)
		if err != nil {
			return nil, err
		}
		c.accounts[ata] = solanaAccount{owner: c.faucet.PublicKey().String(), mint: m}
		c.balances[ata] = new(big.Int).Mul(big.NewInt(1_000_000_000), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(m.Decimals)), nil))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.url = "http://" + ln.Addr().String()
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serveRPC), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

func (c *solanaChain) close() error { return c.srv.Close() }

// mintOf returns the devnet mint of token t.
func (c *solanaChain) mintOf(t paywatch.Token) (SolanaMint, bool) {
	i := slices.IndexFunc(c.mints, func(m SolanaMint) bool { return m.Token == t })
	if i < 0 {
		return SolanaMint{}, false
	}
	return c.mints[i], true
}

// nextSlot makes the next slot, skipping one now and then as leaders do;
// it returns the slot made. Callers hold c.mu.
func (c *solanaChain) nextSlot() uint64 {
	c.slot++
	if c.skipEvery > 0 && c.slot%c.skipEvery == 0 {
		c.slot++ // skipped: no block at that slot
	}
	c.made = append(c.made, c.slot)
	c.lastTime = max(c.lastTime, time.Now().Unix())
	c.times[c.slot] = c.lastTime
	return c.slot
}

// finalized returns the newest finalized slot: the block 32 blocks
// behind the newest (skipped slots are no blocks). Callers hold c.mu.
func (c *solanaChain) finalized() uint64 {
	if len(c.made) <= solanaFinality {
		return 0
	}
	return c.made[len(c.made)-1-solanaFinality]
}

// solanaTransfer is one transfer, built and ready to go into a slot.
type solanaTransfer struct {
	mint      SolanaMint
	program   sol.PublicKey
	owner     sol.PublicKey
	src, dst  string
	units     *big.Int
	reference string
	ix        sol.Instruction
}

// build prepares one signed-to-be TransferChecked of units (base units)
// of token from the faucet to the owner to's associated token account,
// with reference (a base58 key, or "") as a read-only account of the
// instruction, as Solana Pay wallets add it.
func (c *solanaChain) build(to string, token paywatch.Token, units *big.Int, reference string) (*solanaTransfer, error) {
	m, ok := c.mintOf(token)
	if !ok {
		return nil, paywatch.Errorf(paywatch.EINVALID, "%s is not served on this devnet", token)
	}
	if !units.IsUint64() || units.Sign() <= 0 {
		return nil, paywatch.Errorf(paywatch.EINVALID, "amount out of range")
	}
	owner, err := sol.PublicKeyFromBase58(to)
	if err != nil {
		return nil, paywatch.Errorf(paywatch.EINVALID, "to: %v", err)
	}
	mint, program := sol.MustPublicKeyFromBase58(m.Mint), sol.MustPublicKeyFromBase58(m.Program)
	src, err := solana.AssociatedTokenAccount(c.faucet.PublicKey().String(), m.Mint, m.Program)
	if err != nil {
		return nil, err
	}
	dst, err := solana.AssociatedTokenAccount(owner.String(), m.Mint, m.Program)
	if err != nil {
		return nil, err
	}
	if dst == src {
		return nil, paywatch.Errorf(paywatch.EINVALID, "to: the faucet cannot pay itself")
	}
	data := make([]byte, 10)
	data[0] = 12 // TransferChecked
	binary.LittleEndian.PutUint64(data[1:9], units.Uint64())
	data[9] = m.Decimals
	metas := sol.AccountMetaSlice{
		sol.Meta(sol.MustPublicKeyFromBase58(src)).WRITE(),
		sol.Meta(mint),
		sol.Meta(sol.MustPublicKeyFromBase58(dst)).WRITE(),
		sol.Meta(c.faucet.PublicKey()).SIGNER(),
	}
	if reference != "" {
		ref, err := sol.PublicKeyFromBase58(reference)
		if err != nil {
			return nil, paywatch.Errorf(paywatch.EINVALID, "memo: not a base58 key: %v", err)
		}
		metas = append(metas, sol.Meta(ref))
	}
	return &solanaTransfer{mint: m, program: program, owner: owner, src: src, dst: dst, units: units, reference: reference,
		ix: sol.NewInstruction(program, metas, data)}, nil
}

// send makes a slot holding one transfer (build); failed makes it fail as
// a program error does, moving nothing.
func (c *solanaChain) send(to string, token paywatch.Token, units *big.Int, reference string, failed bool) (*solanaTx, error) {
	t, err := c.build(to, token, units, reference)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !failed && c.balances[t.src].Cmp(units) < 0 {
		return nil, paywatch.Errorf(paywatch.EINVALID, "insufficient balance")
	}
	return c.apply(t, c.nextSlot(), failed)
}

// apply signs t and puts it in slot. Callers hold c.mu and have checked
// the balance.
func (c *solanaChain) apply(t *solanaTransfer, slot uint64, failed bool) (*solanaTx, error) {
	var blockhash sol.Hash
	binary.LittleEndian.PutUint64(blockhash[:], slot)
	binary.LittleEndian.PutUint64(blockhash[8:], uint64(len(c.order))) // unique per transaction
	tx, err := sol.NewTransaction([]sol.Instruction{t.ix}, blockhash, sol.TransactionPayer(c.faucet.PublicKey()))
	if err != nil {
		return nil, err
	}
	if _, err := tx.Sign(func(k sol.PublicKey) *sol.PrivateKey {
		if k.Equals(c.faucet.PublicKey()) {
			return &c.faucet
		}
		return nil
	}); err != nil {
		return nil, err
	}
	src, dst, units := t.src, t.dst, t.units
	// A transfer to a wallet without the account makes it, as a wallet's
	// createIdempotent instruction would (left out of the devnet's
	// message): like mainnet, the answer then has no pre balance for it.
	// A failed one makes nothing (mainnet rolls it back).
	_, existed := c.accounts[dst]
	if !existed {
		c.accounts[dst] = solanaAccount{owner: t.owner.String(), mint: t.mint}
		c.balances[dst] = new(big.Int)
	}
	st := &solanaTx{sig: tx.Signatures[0].String(), slot: slot, failed: failed, accounts: []string{c.faucet.PublicKey().String(), src, dst, t.mint.Mint}}
	if t.reference != "" {
		st.accounts = append(st.accounts, t.reference)
	}
	pre := c.tokenBalances(tx)
	if !existed {
		pre = slices.DeleteFunc(pre, func(b map[string]any) bool { return tx.Message.AccountKeys[b["accountIndex"].(int)].String() == dst })
	}
	if !failed {
		st.deltas = map[string]*big.Int{src: new(big.Int).Neg(units), dst: new(big.Int).Set(units)}
		for acct, d := range st.deltas {
			c.balances[acct].Add(c.balances[acct], d)
		}
	}
	st.result = c.answer(tx, pre, c.tokenBalances(tx), failed)
	if !existed {
		if failed {
			delete(c.accounts, dst)
			delete(c.balances, dst)
		} else {
			st.created = dst
		}
	}
	c.txs[st.sig] = st
	c.order = append(c.order, st)
	st.transfer = t
	return st, nil
}

// dropBlocks drops the newest depth made slots, which must all be above
// the finalized slot, with their transactions (their balances given back,
// the accounts they made removed); the new fork's blocks come at slots
// above them, one more than were dropped. It returns the dropped
// signatures and transactions, oldest first. Callers hold c.mu.
func (c *solanaChain) dropBlocks(depth int) ([]string, []*solanaTx, error) {
	if depth <= 0 || depth > len(c.made) {
		return nil, nil, paywatch.Errorf(paywatch.EINVALID, "depth must be between 1 and %d", len(c.made))
	}
	cut := c.made[len(c.made)-depth]
	if cut <= c.finalized() {
		return nil, nil, paywatch.Errorf(paywatch.EINVALID, "slot %d is finalized: a reorg drops only slots above %d", cut, c.finalized())
	}
	dropped := []string{}
	var txs []*solanaTx
	keep := c.order[:0]
	for _, tx := range c.order {
		if tx.slot < cut {
			keep = append(keep, tx)
			continue
		}
		for acct, d := range tx.deltas {
			c.balances[acct].Sub(c.balances[acct], d)
		}
		if tx.created != "" {
			delete(c.accounts, tx.created)
			delete(c.balances, tx.created)
		}
		delete(c.txs, tx.sig)
		dropped = append(dropped, tx.sig)
		txs = append(txs, tx)
	}
	c.order = keep
	c.made = c.made[:len(c.made)-depth]
	for range depth + 1 {
		c.nextSlot()
	}
	return dropped, txs, nil
}

// visible reports whether tx is seen at commitment ("finalized" or
// "confirmed"; the server refuses "processed", as nodes do for the calls
// it serves). Callers hold c.mu.
func (c *solanaChain) visible(tx *solanaTx, commitment string) bool {
	if commitment == "confirmed" {
		return true
	}
	return tx.slot <= c.finalized()
}

// tokenBalances lists the token accounts of tx's message with their
// balances now, in getTransaction's form. Callers hold c.mu.
func (c *solanaChain) tokenBalances(tx *sol.Transaction) []map[string]any {
	var out []map[string]any
	for i, k := range tx.Message.AccountKeys {
		a, ok := c.accounts[k.String()]
		if !ok {
			continue
		}
		amount := c.balances[k.String()]
		ui := plainUI(paywatch.NewAmount(amount, int(a.mint.Decimals)))
		// uiAmount is a JSON number on the wire (null at 0, as mainnet
		// writes it), written from the exact decimal text, never a float.
		var uiAmount any
		if amount.Sign() > 0 {
			uiAmount = json.Number(ui)
		}
		out = append(out, map[string]any{
			"accountIndex": i, "mint": a.mint.Mint, "owner": a.owner, "programId": a.mint.Program,
			"uiTokenAmount": map[string]any{"amount": amount.String(), "decimals": a.mint.Decimals, "uiAmount": uiAmount, "uiAmountString": ui},
		})
	}
	return out
}

// plainUI writes an amount as the node's uiAmountString does: "0",
// "25.5", "0.000001".
func plainUI(a paywatch.Amount) string {
	s := a.String() // at least two decimals
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}
