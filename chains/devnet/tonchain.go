package devnet

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xssnick/tonutils-go/address"
	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/ton"
)

// The TON devnet (issue 41, item 5): an in-memory chain behind the part
// of TON Center's HTTP API v3 that chains/ton reads (tonchain_api.go),
// in its wire format. Its blocks are masterchain blocks, seqno 0 (genesis) up; a
// jetton transfer is the chain of transactions TON makes of it (the
// sender's jetton wallet takes transfer, the recipient's takes
// internal_transfer, the recipient owner takes transfer_notification),
// each with its own logical time inside its block's range. One jetton is
// served, USDT (6 decimals) at a devnet master of its own, beside a
// look-alike jetton whose metadata says "Tether USD" too. A failed
// transfer bounces, and a forged notification comes on demand
// (TransferRequest.Kind). TON has no reorgs once a masterchain block
// commits a transaction, so neither has the devnet.

// TONGlobalID is the devnet's global_id, as its blocks report it
// (mainnet is -239, testnet -3), so a devnet is never taken for either;
// `paywatch check` knows it (ton.DevnetGlobalID).
const TONGlobalID = ton.DevnetGlobalID

// Jetton message opcodes (TEP-74) and the bounce prefix.
const (
	tonOpTransfer         = 0x0f8a7ea5
	tonOpInternalTransfer = 0x178d4519
	tonOpNotification     = 0x7362d09c
	tonOpBounced          = 0xffffffff
)

// tonLTSpan is the logical time range of one masterchain block: block N
// starts at N × tonLTSpan.
const tonLTSpan = 1_000_000

// tonFaucetUnits is what the faucet's jetton wallets hold at start:
// 1,000,000,000 tokens of 6 decimals.
var tonFaucetUnits = new(big.Int).Mul(big.NewInt(1_000_000_000), big.NewInt(1_000_000))

// Transfer kinds of TransferRequest.Kind on TON.
const (
	tonKindForged    = "forged_notification"
	tonKindLookalike = "lookalike_jetton"
)

// tonAddr is a devnet account drawn from a label: the same on every run.
func tonAddr(label string) *address.Address {
	h := sha256.Sum256([]byte("paywatch devnet ton " + label))
	return address.NewAddress(0x11, 0, h[:])
}

var (
	tonFaucet    = tonAddr("faucet")
	tonMaster    = tonAddr("jetton master USDT")
	tonLookalike = tonAddr("jetton master look-alike USDT")
	tonAttacker  = tonAddr("attacker")
)

// tonJettonWallet is owner's jetton wallet of master: what the master's
// get_wallet_address answers.
func tonJettonWallet(master, owner *address.Address) *address.Address {
	h := sha256.Sum256([]byte("jetton wallet|" + master.StringRaw() + "|" + owner.StringRaw()))
	return address.NewAddress(0x11, 0, h[:])
}

// TONFaucet returns the owner the TON devnet sends from, non-bounceable
// ("UQ…", paywatch.NormalizeTONWallet's form).
func TONFaucet() string { return tonFriendly(tonFaucet, false) }

// TONUSDTMaster returns the devnet USDT jetton master, bounceable ("EQ…").
func TONUSDTMaster() string { return tonFriendly(tonMaster, true) }

// TONLookalikeMaster returns the look-alike jetton's master ("EQ…").
func TONLookalikeMaster() string { return tonFriendly(tonLookalike, true) }

// TONJettonWallet returns owner's jetton wallet of master (both in any
// address form), bounceable ("EQ…"), as get_wallet_address gives it.
func TONJettonWallet(master, owner string) (string, error) {
	m, err := parseTONAddr(master)
	if err != nil {
		return "", paywatch.Errorf(paywatch.EINVALID, "master: %v", err)
	}
	o, err := parseTONAddr(owner)
	if err != nil {
		return "", paywatch.Errorf(paywatch.EINVALID, "owner: %v", err)
	}
	return tonFriendly(tonJettonWallet(m, o), true), nil
}

// tonFriendly writes a as a mainnet user-friendly address.
func tonFriendly(a *address.Address, bounce bool) string {
	return a.Bounce(bounce).Testnet(false).String()
}

// tonRaw writes a as TON Center does: "0:" and upper-case hex.
func tonRaw(a *address.Address) string {
	r := a.StringRaw()
	wc, h, _ := strings.Cut(r, ":")
	return wc + ":" + strings.ToUpper(h)
}

// parseTONAddr reads an address in any form: raw (any case) or
// user-friendly (URL-safe or standard base64).
func parseTONAddr(s string) (*address.Address, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, ":") {
		return address.ParseRawAddr(strings.ToLower(s))
	}
	return address.ParseAddr(strings.NewReplacer("+", "-", "/", "_").Replace(s))
}

// tonJetton is a jetton the devnet serves.
type tonJetton struct {
	master *address.Address
	symbol string
}

// tonWallet is a jetton wallet.
type tonWallet struct {
	addr, owner, master *address.Address
	balance             *big.Int
	lastLT              uint64
	deployed            bool
}

// tonMsg is an internal message (src nil: an external one).
type tonMsg struct {
	hash             [32]byte
	src, dst         *address.Address
	value, fwdFee    uint64
	op               uint32
	bounce, bounced  bool
	body, init       *cell.Cell
	createdLT        uint64
	createdAt        int64
	hasOp, delivered bool
}

// tonTx is a transaction on one account.
type tonTx struct {
	account               *address.Address
	hash, trace, prevHash [32]byte
	lt, prevLT, seqno     uint64
	now                   int64
	origStatus, endStatus string
	aborted               bool
	exitCode              int
	in                    *tonMsg
	out                   []*tonMsg
}

// tonBlock is a masterchain block.
type tonBlock struct {
	seqno          uint64
	utime          int64
	startLT, endLT uint64
	txs            int
}

// tonChain is the devnet chain.
type tonChain struct {
	network paywatch.Network
	salt    [16]byte
	srv     *http.Server
	url     string

	mu      sync.RWMutex
	blocks  []tonBlock // blocks[i] has seqno i
	txs     []*tonTx   // in logical time order
	wallets map[string]*tonWallet
	last    map[string]*tonTx // each account's newest transaction
	// unstored are masterchain blocks whose transactions /transactions
	// does not list yet, as an indexer that stored a later block first,
	// or one endpoint of several behind the others (tests set it).
	unstored map[uint64]bool
	nextLT   uint64
	sent     uint64 // transfers made, to alternate the payload forms
	lastTime int64
}

// startTON starts the chain and its API on a free loopback port, at
// genesis (block 0, as the masterchain's zero state), with the faucet's
// jetton wallets funded.
func startTON(network paywatch.Network) (*tonChain, error) {
	c := &tonChain{network: network, wallets: map[string]*tonWallet{}, last: map[string]*tonTx{}}
	if _, err := rand.Read(c.salt[:]); err != nil {
		return nil, err
	}
	for _, m := range []*address.Address{tonMaster, tonLookalike} {
		w := c.wallet(m, tonFaucet)
		w.balance.Set(tonFaucetUnits)
		w.deployed = true
	}
	c.openBlock()
	c.closeBlock()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.url = "http://" + ln.Addr().String() + "/api/v3"
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serveAPI), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// jettons lists the served jettons: USDT first.
func (c *tonChain) jettons() []tonJetton {
	return []tonJetton{{tonMaster, "USD₮"}, {tonLookalike, "USD₮"}}
}

// wallet returns owner's jetton wallet of master, making its record (not
// deployed) if there is none. Callers hold c.mu.
func (c *tonChain) wallet(master, owner *address.Address) *tonWallet {
	a := tonJettonWallet(master, owner)
	w, ok := c.wallets[tonRaw(a)]
	if !ok {
		w = &tonWallet{addr: a, owner: owner, master: master, balance: new(big.Int)}
		c.wallets[tonRaw(a)] = w
	}
	return w
}

// digest is a devnet hash of parts under the run's salt.
func (c *tonChain) digest(parts ...any) [32]byte {
	h := sha256.New()
	h.Write(c.salt[:])
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			h.Write([]byte(v))
		case uint64:
			h.Write(binary.BigEndian.AppendUint64(nil, v))
		case []byte:
			h.Write(v)
		}
		h.Write([]byte{0})
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// openBlock starts the next masterchain block. Callers hold c.mu.
func (c *tonChain) openBlock() *tonBlock {
	seqno := uint64(len(c.blocks))
	c.lastTime = max(c.lastTime, time.Now().Unix())
	c.blocks = append(c.blocks, tonBlock{seqno: seqno, utime: c.lastTime, startLT: seqno * tonLTSpan})
	c.nextLT = seqno*tonLTSpan + 1
	return &c.blocks[len(c.blocks)-1]
}

// closeBlock ends the open block after its transactions. Callers hold
// c.mu.
func (c *tonChain) closeBlock() {
	b := &c.blocks[len(c.blocks)-1]
	b.endLT = c.nextLT
	for i := len(c.txs) - 1; i >= 0 && c.txs[i].seqno == b.seqno; i-- {
		b.txs++
	}
}

// lt takes the open block's next logical time. Callers hold c.mu.
func (c *tonChain) lt() uint64 {
	c.nextLT++
	return c.nextLT - 1
}

// head is the newest block. Callers hold c.mu.
func (c *tonChain) head() tonBlock { return c.blocks[len(c.blocks)-1] }

// message makes a message sent now (by from, if any: it joins from's
// out_msgs). Callers hold c.mu.
func (c *tonChain) message(from *tonTx, src, dst *address.Address, value uint64, bounce bool, body *cell.Cell) *tonMsg {
	m := &tonMsg{src: src, dst: dst, value: value, bounce: bounce, body: body, createdLT: c.lt(), createdAt: c.head().utime, fwdFee: 3_000_000}
	if body.BitsSize() >= 32 {
		m.op, m.hasOp = uint32(body.BeginParse().MustPreloadUInt(32)), true
	}
	m.hash = c.digest("msg", m.createdLT, body.Hash())
	if from != nil {
		from.out = append(from.out, m)
	}
	return m
}

// deliver makes the transaction of m's destination, in the open block;
// aborted makes its compute phase fail with exitCode. Callers hold c.mu.
func (c *tonChain) deliver(m *tonMsg, trace *tonTx, aborted bool, exitCode int) *tonTx {
	m.delivered = true
	key := tonRaw(m.dst)
	t := &tonTx{account: m.dst, in: m, lt: c.lt(), seqno: c.head().seqno, now: c.head().utime, aborted: aborted, exitCode: exitCode}
	t.hash = c.digest("tx", key, t.lt)
	t.trace = t.hash
	if trace != nil {
		t.trace = trace.trace
	}
	if p := c.last[key]; p != nil {
		t.prevHash, t.prevLT = p.hash, p.lt
	}
	t.origStatus = c.accountStatus(key)
	t.endStatus = t.origStatus
	if w := c.wallets[key]; w != nil && !aborted {
		w.deployed, w.lastLT = true, t.lt
		t.endStatus = "active"
	}
	c.last[key] = t
	c.txs = append(c.txs, t)
	return t
}

// accountStatus is an account's state: a jetton wallet that never took
// a transfer does not exist; owners and masters are active. Callers hold
// c.mu.
func (c *tonChain) accountStatus(key string) string {
	if w := c.wallets[key]; w != nil && !w.deployed {
		return "nonexist"
	}
	return "active"
}

// tonComment is a text comment: 32 zero bits and the text.
func tonComment(b *cell.Builder, text string) *cell.Builder {
	return b.MustStoreUInt(0, 32).MustStoreSlice([]byte(text), uint(len(text))*8)
}

// tonPayload stores forward_payload:(Either Cell ^Cell) of comment, in
// the ref form when ref is set (or when inline does not fit).
func tonPayload(b *cell.Builder, comment string, ref bool) (*cell.Builder, *cell.Cell) {
	if comment == "" {
		return b.MustStoreBoolBit(false), nil
	}
	if !ref && b.BitsLeft() >= 1+32+uint(len(comment))*8 {
		return tonComment(b.MustStoreBoolBit(false), comment), nil
	}
	p := tonComment(cell.BeginCell(), comment).EndCell()
	return b.MustStoreBoolBit(true).MustStoreRef(p), p
}

// tonPlan is one transfer to make.
type tonPlan struct {
	kind    string
	master  *address.Address
	owner   *address.Address
	units   *big.Int
	comment string
}

// apply makes p's transactions in the open block and returns the one
// TransferResult names: the recipient jetton wallet's (the owner's for a
// forged notification). Callers hold c.mu and have checked the balance.
func (c *tonChain) apply(p tonPlan, failed bool) *tonTx {
	c.sent++
	queryID := c.sent
	inline := c.sent%2 == 1
	fwd := uint64(0)
	if p.comment != "" {
		fwd = 1
	}
	if p.kind == tonKindForged {
		b := cell.BeginCell().MustStoreUInt(tonOpNotification, 32).MustStoreUInt(queryID, 64).MustStoreBigCoins(p.units).MustStoreAddr(tonFaucet)
		b, _ = tonPayload(b, p.comment, !inline)
		return c.deliver(c.message(nil, tonAttacker, p.owner, 10_000_000, false, b.EndCell()), nil, false, 0)
	}
	src, dst := c.wallet(p.master, tonFaucet), c.wallet(p.master, p.owner)
	// 1. The faucet asks its jetton wallet to send.
	b := cell.BeginCell().MustStoreUInt(tonOpTransfer, 32).MustStoreUInt(queryID, 64).MustStoreBigCoins(p.units).
		MustStoreAddr(p.owner).MustStoreAddr(tonFaucet).MustStoreBoolBit(false).MustStoreCoins(fwd)
	b, _ = tonPayload(b, p.comment, !inline)
	t1 := c.deliver(c.message(nil, tonFaucet, src.addr, 100_000_000, true, b.EndCell()), nil, false, 0)
	// 2. Its wallet sends internal_transfer to the recipient's.
	b = cell.BeginCell().MustStoreUInt(tonOpInternalTransfer, 32).MustStoreUInt(queryID, 64).MustStoreBigCoins(p.units).
		MustStoreAddr(tonFaucet).MustStoreAddr(tonFaucet).MustStoreCoins(fwd)
	b, _ = tonPayload(b, p.comment, !inline)
	m2 := c.message(t1, src.addr, dst.addr, 90_000_000, true, b.EndCell())
	if !dst.deployed {
		m2.init = cell.BeginCell().MustStoreAddr(dst.owner).MustStoreAddr(dst.master).EndCell()
	}
	if failed {
		t2 := c.deliver(m2, t1, true, 48) // not enough gas
		bounce := cell.BeginCell().MustStoreUInt(tonOpBounced, 32).MustStoreUInt(tonOpInternalTransfer, 32).MustStoreUInt(queryID, 64).EndCell()
		m4 := c.message(t2, dst.addr, src.addr, 80_000_000, false, bounce)
		m4.bounced = true
		c.deliver(m4, t1, false, 0)
		return t2
	}
	src.balance.Sub(src.balance, p.units)
	dst.balance.Add(dst.balance, p.units)
	t2 := c.deliver(m2, t1, false, 0)
	// 3. The recipient's wallet tells its owner, if paid to.
	if fwd > 0 {
		b = cell.BeginCell().MustStoreUInt(tonOpNotification, 32).MustStoreUInt(queryID, 64).MustStoreBigCoins(p.units).MustStoreAddr(tonFaucet)
		b, _ = tonPayload(b, p.comment, !inline)
		c.deliver(c.message(t2, dst.addr, p.owner, fwd, false, b.EndCell()), t1, false, 0)
	}
	return t2
}

// hexHash is a hash as TransferResult names it: 64 lowercase hex digits.
func hexHash(h [32]byte) string { return hex.EncodeToString(h[:]) }
