package paywatch

import (
	"crypto/rand"
	"math/big"
	"net/url"
	"strings"
)

// TON memo payments (operations.md §9, issue 41): per_payment and per_user
// payments on TON share the wallet's registered address and are told
// apart by the text comment of the jetton transfer, which a buyer may
// have to type: a short code from an alphabet without look-alikes.

// tonCommentAlphabet has the digits and capital letters a person reading
// or typing a comment cannot mistake for one another: no 0 and O, no 1,
// I and L.
const tonCommentAlphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"

// TONCommentLength is the length of a TON memo: 31^8, about 8.5 × 10^11
// codes, so a fresh one meets an open payment's on the same address
// about once in a billion draws even with a thousand open.
const TONCommentLength = 8

// NewTONComment returns a fresh TON memo: TONCommentLength characters of
// tonCommentAlphabet, drawn uniformly.
func NewTONComment() string {
	var b strings.Builder
	n := big.NewInt(int64(len(tonCommentAlphabet)))
	for range TONCommentLength {
		i, _ := rand.Int(rand.Reader, n) // crypto/rand never fails
		b.WriteByte(tonCommentAlphabet[i.Int64()])
	}
	return b.String()
}

// TONTransferRequest is a TON transfer link's fields (ton://transfer):
// the jetton transfer a TON wallet fills in from it.
type TONTransferRequest struct {
	// Recipient is the merchant's wallet (never its jetton wallet).
	Recipient string
	// Jetton is the jetton master (USDT's).
	Jetton string
	// Units is the amount in the jetton's base units.
	Units *big.Int
	// Text is the comment: the payment's memo.
	Text string
}

// URL returns the link as ton://transfer/<recipient>?jetton=<master>
// &amount=<base units>&text=<comment>, the form TON wallets read (TON's
// "ton://" deeplinks; operations.md §9), each value percent-encoded.
func (r TONTransferRequest) URL() string {
	amount := ""
	if r.Units != nil && r.Units.Sign() > 0 {
		amount = r.Units.String()
	}
	return walletLink("ton://transfer/"+url.PathEscape(r.Recipient), "jetton", r.Jetton, "amount", amount, "text", r.Text)
}
