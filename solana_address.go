package paywatch

import (
	"strings"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
)

// NormalizeSolanaWallet checks a Solana wallet address as a merchant
// registers it (operations.md §9): the base58 form of a 32-byte ed25519
// public key on the curve, returned in its one canonical base58 form.
// A key off the curve is a program-derived address (an associated token
// account is one), which no wallet signs for: it is refused, saying so,
// because tokens sent "to" it would go to the associated token account of
// an account nobody controls; so is the all-zero key, the System
// Program's. About half of all mistyped keys fall off the curve too, and
// the message says that as well. (A token account made from a key pair is
// on the curve; telling it from a wallet needs the chain, which the
// Solana client is to ask when an address is registered.)
func NormalizeSolanaWallet(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxAddressInput {
		return "", invalidf("invalid Solana address: want the base58 public key of a wallet")
	}
	b, err := base58.Decode(s)
	if err != nil {
		return "", invalidf("invalid Solana address: not base58")
	}
	if len(b) != solana.PublicKeyLength {
		return "", invalidf("invalid Solana address: %d bytes, want 32", len(b))
	}
	if !solana.IsOnCurve(b) || solana.PublicKeyFromBytes(b).IsZero() {
		return "", invalidf("invalid Solana address: not a wallet's key (a program-derived address such as a token account, or a mistyped key); give the wallet's own address")
	}
	return base58.Encode(b), nil
}
