package paywatch

import (
	"strings"
)

// NormalizeTxHash validates a transaction hash for network n and returns the
// form it is stored and compared in, so the same transaction can never be
// claimed twice under two spellings. Input is 64 hex digits in any case with
// an optional 0x prefix (surrounding white space is ignored); the result is
// 0x and 64 lowercase hex digits on EVM networks, and 64 lowercase hex digits
// without 0x on TRC20, as Tron tools print them.
func NormalizeTxHash(n Network, s string) (string, error) {
	f := n.Family()
	if f == "" {
		_, err := ParseNetwork(string(n))
		return "", err
	}
	s = strings.TrimSpace(s)
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
