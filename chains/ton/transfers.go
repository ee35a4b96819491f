// Package ton reads TON jetton transfers (issue 41; TON is not offered
// yet): the answers of TON Center's HTTP API v3 (or a self-hosted
// ton-indexer serving the same API), whose indexer stores only
// transactions a masterchain block has committed, leaves aborted ones
// out of /api/v3/jetton/transfers, and lists a jetton transfer only from
// a jetton wallet its master vouches for (get_wallet_address), so a
// forged transfer_notification sent to a merchant is no row at all. What
// is left to check here is the master: a look-alike jetton has a master
// of its own. tonutils-go reads addresses and the payload cells.
package ton

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch"
)

// JettonTransfer is one element of /api/v3/jetton/transfers' answer, as
// TON Center writes it: amounts and logical times as decimal strings,
// addresses in raw form, payloads as base64 BOCs (null for none).
type JettonTransfer struct {
	QueryID             string  `json:"query_id"`
	Source              string  `json:"source"`      // the sender's owner
	Destination         string  `json:"destination"` // the recipient's owner
	Amount              string  `json:"amount"`      // base units
	SourceWallet        string  `json:"source_wallet"`
	JettonMaster        string  `json:"jetton_master"`
	TransactionHash     string  `json:"transaction_hash"`
	TransactionLT       string  `json:"transaction_lt"`
	TransactionNow      int64   `json:"transaction_now"`
	TransactionAborted  bool    `json:"transaction_aborted"`
	ResponseDestination string  `json:"response_destination"`
	CustomPayload       *string `json:"custom_payload"`
	ForwardTONAmount    *string `json:"forward_ton_amount"`
	ForwardPayload      *string `json:"forward_payload"`
}

// jettonTransfers is /api/v3/jetton/transfers' answer.
type jettonTransfers struct {
	JettonTransfers []JettonTransfer `json:"jetton_transfers"`
}

// Credit is one jetton transfer to a watched owner.
type Credit struct {
	// To and From are the recipient's and the sender's owners, in
	// paywatch's canonical form (NormalizeTONWallet).
	To, From string
	// Amount is in the jetton's base units.
	Amount *big.Int
	// TxHash is the sender's jetton wallet transaction (base64), LT its
	// logical time and Time its unix time.
	TxHash string
	LT     uint64
	Time   int64
	// Comment is the forward payload's text comment, "" without one.
	Comment string
}

// ErrBadAnswer is returned for an answer that does not read as TON
// Center's.
var ErrBadAnswer = errors.New("ton: not an /api/v3/jetton/transfers answer")

// Credits returns the transfers of master's jetton in an
// /api/v3/jetton/transfers answer, in its order: rows of another master
// (a look-alike jetton) and aborted ones are left out.
func Credits(answer []byte, master string) ([]Credit, error) {
	var a jettonTransfers
	if err := json.Unmarshal(answer, &a); err != nil || a.JettonTransfers == nil {
		return nil, ErrBadAnswer
	}
	return creditsOf(a, master)
}

// creditsOf is Credits of a decoded answer.
func creditsOf(a jettonTransfers, master string) ([]Credit, error) {
	want, err := paywatch.NormalizeTONWallet(master)
	if err != nil {
		return nil, fmt.Errorf("ton: master %q: %w", master, err)
	}
	var out []Credit
	for _, t := range a.JettonTransfers {
		if t.TransactionAborted {
			continue
		}
		if m, err := paywatch.NormalizeTONWallet(t.JettonMaster); err != nil || m != want {
			continue // another jetton, whatever it calls itself
		}
		c := Credit{TxHash: t.TransactionHash, Time: t.TransactionNow}
		if c.To, err = paywatch.NormalizeTONWallet(t.Destination); err != nil {
			return nil, fmt.Errorf("ton: transfer %s: destination: %w", t.TransactionHash, err)
		}
		if c.From, err = paywatch.NormalizeTONWallet(t.Source); err != nil {
			return nil, fmt.Errorf("ton: transfer %s: source: %w", t.TransactionHash, err)
		}
		var ok bool
		if c.Amount, ok = new(big.Int).SetString(t.Amount, 10); !ok || c.Amount.Sign() < 0 {
			return nil, fmt.Errorf("ton: transfer %s: amount %q", t.TransactionHash, t.Amount)
		}
		if c.LT, err = strconv.ParseUint(t.TransactionLT, 10, 64); err != nil {
			return nil, fmt.Errorf("ton: transfer %s: logical time %q", t.TransactionHash, t.TransactionLT)
		}
		if t.ForwardPayload != nil {
			if text, ok, err := Comment(*t.ForwardPayload); err != nil {
				return nil, fmt.Errorf("ton: transfer %s: forward payload: %w", t.TransactionHash, err)
			} else if ok {
				c.Comment = text
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// Comment reads a payload BOC (base64) as a text comment (TEP-74): 32
// zero bits, then UTF-8 text continued through each cell's first
// reference. ok is false for another payload (an op other than 0, an
// encrypted or binary comment, text that is not UTF-8).
func Comment(boc string) (text string, ok bool, err error) {
	raw, err := base64.StdEncoding.DecodeString(boc)
	if err != nil {
		if raw, err = base64.URLEncoding.DecodeString(boc); err != nil {
			return "", false, fmt.Errorf("ton: payload is not base64: %w", err)
		}
	}
	c, err := cell.FromBOC(raw)
	if err != nil {
		return "", false, fmt.Errorf("ton: payload BOC: %w", err)
	}
	s := c.BeginParse()
	if s.BitsLeft() < 32 {
		return "", false, nil
	}
	op, err := s.LoadUInt(32)
	if err != nil || op != 0 {
		return "", false, nil
	}
	text, err = s.LoadStringSnake()
	if err != nil || !utf8.ValidString(text) {
		return "", false, nil
	}
	return text, true, nil
}
