package ton

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"unicode/utf8"

	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch"
)

// Jetton message opcodes (TEP-74; the USDT stablecoin contract's
// jetton-wallet.fc).
const (
	// OpInternalTransfer credits a jetton wallet: sent by the sender's
	// jetton wallet (or the master, minting), and accepted by the wallet
	// only from those, so a transaction that processed one without
	// aborting moved real jettons into the wallet.
	OpInternalTransfer = 0x178d4519
	// OpTransferNotification tells the owner of a credited wallet, when
	// the sender forwarded TON for it; anyone can send one, so paywatch
	// never reads it.
	OpTransferNotification = 0x7362d09c
)

// Credit is one jetton credit to a watched owner's jetton wallet: a
// transaction on the wallet that processed an internal_transfer and did
// not abort.
type Credit struct {
	// Wallet is the jetton wallet credited (raw key, rawKey).
	Wallet string
	// TxHash is the wallet's transaction (64 lowercase hex), McSeqno
	// the masterchain block that committed it.
	TxHash  string
	McSeqno uint64
	// From is the sending owner (the internal_transfer's from), in
	// paywatch's canonical form; "" when the message names none.
	From string
	// Amount is in the jetton's base units.
	Amount *big.Int
	// Comment is the forward payload's text comment, "" without one.
	Comment string
}

// errNotCredit marks a transaction that credits nothing: aborted, a
// bounce, an external message, another operation.
var errNotCredit = errors.New("ton: not a jetton credit")

// creditOf reads one transaction of a jetton wallet as a credit, or
// errNotCredit. Only the wallet's own contract decides what it accepts:
// a transaction that did not abort and processed an internal_transfer
// moved the amount into the wallet.
func creditOf(t Transaction) (Credit, error) {
	if t.Description.Aborted || t.InMsg == nil || t.InMsg.Bounced || t.InMsg.Source == nil ||
		t.InMsg.Content == nil || t.InMsg.Content.Body == nil {
		return Credit{}, errNotCredit
	}
	hash, err := hashHex(t.Hash)
	if err != nil {
		return Credit{}, err
	}
	if t.McBlockSeqno == nil {
		return Credit{}, fmt.Errorf("ton: transaction %s without its masterchain block", hash)
	}
	cr := Credit{Wallet: keyOf(t.Account), TxHash: hash, McSeqno: *t.McBlockSeqno}
	if err := cr.readBody(*t.InMsg.Content.Body); err != nil {
		return Credit{}, err
	}
	return cr, nil
}

// readBody reads an internal_transfer body (a base64 BOC):
//
//	internal_transfer#178d4519 query_id:uint64 amount:(VarUInteger 16)
//	  from:MsgAddress response_address:MsgAddress
//	  forward_ton_amount:(VarUInteger 16)
//	  forward_payload:(Either Cell ^Cell)
//
// The comment may sit in the body's own cell (Either's bit 0) or in a
// reference (bit 1); both are read, as TON Center's jetton transfers are
// not (testdata/FACTS.md §1.4).
func (cr *Credit) readBody(b64 string) error {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("ton: transaction %s: body is not base64: %w", cr.TxHash, err)
	}
	c, err := cell.FromBOC(raw)
	if err != nil {
		return fmt.Errorf("ton: transaction %s: body: %w", cr.TxHash, err)
	}
	s := c.BeginParse()
	if op, err := s.LoadUInt(32); err != nil || op != OpInternalTransfer {
		return errNotCredit
	}
	if _, err := s.LoadUInt(64); err != nil {
		return errNotCredit
	}
	if cr.Amount, err = s.LoadBigCoins(); err != nil || cr.Amount.Sign() == 0 {
		return errNotCredit // nothing moved: no credit, however it is labelled
	}
	from, err := s.LoadAddr()
	if err != nil {
		return errNotCredit
	}
	if !from.IsAddrNone() {
		if cr.From, err = paywatch.NormalizeTONWallet(from.StringRaw()); err != nil {
			cr.From = from.StringRaw() // a sender outside the basechain
		}
	}
	if _, err := s.LoadAddr(); err != nil { // response_address
		return nil
	}
	if _, err := s.LoadBigCoins(); err != nil { // forward_ton_amount
		return nil
	}
	inRef, err := s.LoadBoolBit()
	if err != nil {
		return nil // no payload: the credit stands, without a comment
	}
	payload := s
	if inRef {
		if payload, err = s.LoadRef(); err != nil {
			return nil
		}
	}
	cr.Comment, _ = comment(payload)
	return nil
}

// comment reads a payload as a text comment (TEP-74): 32 zero bits, then
// UTF-8 text continued through each cell's first reference. ok is false
// for another payload (another op, an encrypted or binary comment, text
// that is not UTF-8).
func comment(s *cell.Slice) (text string, ok bool) {
	if s.BitsLeft() < 32 {
		return "", false
	}
	op, err := s.LoadUInt(32)
	if err != nil || op != 0 {
		return "", false
	}
	text, err = s.LoadStringSnake()
	if err != nil || !utf8.ValidString(text) {
		return "", false
	}
	return text, true
}
