package paywatch

import (
	"crypto/rand"
	"net/url"
	"strings"

	"github.com/mr-tron/base58"
)

// Solana Pay transfer requests (solana-foundation/solana-pay SPEC.md),
// the wallet link and QR code of a SOLANA memo payment (operations.md
// §9): the wallet sends amount of the mint to the recipient's associated
// token account and adds the reference as a read-only account of its
// transfer instruction, which is how paywatch tells the payment's
// transfer from any other to the same wallet.

// NewSolanaReference returns a fresh Solana Pay reference: 32 random
// bytes in base58, a key no one holds (it only has to be unique; the
// spec asks for a public key's form, not one on the curve).
func NewSolanaReference() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base58.Encode(b[:])
}

// SolanaPayRequest is one transfer request's fields.
type SolanaPayRequest struct {
	// Recipient is the merchant's wallet (never a token account).
	Recipient string
	// Amount is in whole tokens; SPEC.md wants a decimal, never an
	// exponent, with no more decimals than the mint's.
	Amount Amount
	// Mint is the token's mint (the spl-token parameter).
	Mint string
	// Reference is the payment's memo.
	Reference string
	// Label names the merchant, Message the item; both optional.
	Label, Message string
}

// URL returns the request as solana:<recipient>?amount=…&spl-token=…
// &reference=…&label=…&message=…, with the label and message
// percent-encoded (a space as %20, as SPEC.md's encodeURIComponent does:
// a wallet decoding them would not turn "+" back into a space).
func (r SolanaPayRequest) URL() string {
	return walletLink("solana:"+r.Recipient,
		"amount", plainDecimal(r.Amount), "spl-token", r.Mint, "reference", r.Reference, "label", r.Label, "message", r.Message)
}

// walletLink writes a wallet link: base, then the non-empty values of
// pairs (key, value, key, value…) as a query, each value percent-encoded
// as encodeURIComponent does (a space as %20: a wallet decoding the
// value would not turn "+" back into a space).
func walletLink(base string, pairs ...string) string {
	var b strings.Builder
	b.WriteString(base)
	sep := byte('?')
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(pairs[i])
		b.WriteByte('=')
		b.WriteString(strings.ReplaceAll(url.QueryEscape(pairs[i+1]), "+", "%20"))
	}
	return b.String()
}

// plainDecimal writes a non-negative amount with only its significant
// decimals ("25.5", "0.000001", "10"), never an exponent.
func plainDecimal(a Amount) string {
	if a.Sign() <= 0 {
		return ""
	}
	_, intPart, frac := a.split()
	frac = frac[:a.FractionDigits()]
	if frac == "" {
		return intPart
	}
	return intPart + "." + frac
}
