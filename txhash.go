package paywatch

import (
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/mr-tron/base58"
)

// NormalizeTxHash validates a transaction hash for network n and returns the
// form it is stored and compared in, so the same transaction can never be
// claimed twice under two spellings. Input is 64 hex digits in any case with
// an optional 0x prefix (surrounding white space is ignored); the result is
// 0x and 64 lowercase hex digits on EVM networks, and 64 lowercase hex digits
// without 0x on TRC20, as Tron tools print them. On SOLANA a transaction
// is named by its first signature: base58 of 64 bytes, kept as given
// (base58 is case-sensitive, so it has one spelling). On TON a hash is
// 64 lowercase hex digits too, and base64 is accepted (normalizeTONHash).
func NormalizeTxHash(n Network, s string) (string, error) {
	f := n.Family()
	if f == "" {
		_, err := ParseNetwork(string(n))
		return "", err
	}
	s = strings.TrimSpace(s)
	if parse, ok := txHashForms[f]; ok {
		return parse(s)
	}
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	if len(s) != 64 {
		return "", invalidf("invalid transaction hash: want 64 hex digits, optionally prefixed by 0x")
	}
	var b strings.Builder
	b.Grow(66)
	if f == FamilyEVM {
		b.WriteString("0x")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			c += 'a' - 'A'
		default:
			return "", invalidf("invalid transaction hash: not hexadecimal")
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// txHashForms are the families whose transactions are not named by 32
// bytes of hex, each with its parser.
var txHashForms = map[Family]func(string) (string, error){
	FamilySolana: normalizeSolanaSignature,
	FamilyTON:    normalizeTONHash,
}

// normalizeTONHash checks a TON transaction hash: 32 bytes as 64 hex
// digits (explorers) or as base64, standard or URL-safe, padded or not
// (TON Center's answers, wallets); the canonical form is 64 lowercase
// hex digits, which tonviewer.com links take.
func normalizeTONHash(s string) (string, error) {
	const msg = "invalid transaction hash: want a TON transaction's hash, 64 hex digits or base64"
	if len(s) == 64 {
		b, err := hex.DecodeString(s)
		if err != nil {
			return "", invalidf(msg)
		}
		return hex.EncodeToString(b), nil
	}
	s = strings.TrimRight(s, "=")
	if len(s) != 43 {
		return "", invalidf(msg)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.NewReplacer("+", "-", "/", "_").Replace(s))
	if err != nil || len(b) != 32 {
		return "", invalidf(msg)
	}
	return hex.EncodeToString(b), nil
}

// normalizeSolanaSignature checks a Solana transaction signature.
func normalizeSolanaSignature(s string) (string, error) {
	const msg = "invalid transaction signature: want the base58 signature of a Solana transaction"
	if s == "" || len(s) > maxAddressInput {
		return "", invalidf(msg)
	}
	b, err := base58.Decode(s)
	if err != nil || len(b) != 64 {
		return "", invalidf(msg)
	}
	return base58.Encode(b), nil
}
