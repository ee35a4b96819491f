package paywatch

import (
	"encoding/hex"
	"strings"

	"github.com/xssnick/tonutils-go/address"
)

// NormalizeTONWallet checks a TON wallet address as a merchant registers
// it (operations.md §9) and returns its one canonical form: the
// user-friendly, non-bounceable mainnet form ("UQ…", base64url), which
// TON wallets show for a wallet and which the other forms name too. It
// takes the raw form ("0:" and 64 hex digits) and the user-friendly forms
// (bounceable "EQ…" or not, base64url or standard base64), checking their
// CRC16. A testnet-only address is refused on mainnet, and so is an
// address outside the basechain (workchain 0), where jetton wallets live.
// (tonutils-go parses and prints the forms.)
func NormalizeTONWallet(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxAddressInput {
		return "", invalidf("invalid TON address: want a wallet's address, raw (0:<hex>) or user-friendly (UQ… or EQ…)")
	}
	var a *address.Address
	if strings.Contains(s, ":") {
		wc, hexPart, _ := strings.Cut(s, ":")
		if len(hexPart) != 64 {
			return "", invalidf("invalid TON address: a raw address is <workchain>:<64 hex digits>")
		}
		if _, err := hex.DecodeString(hexPart); err != nil {
			return "", invalidf("invalid TON address: not hexadecimal")
		}
		if wc != "0" {
			return "", invalidf("invalid TON address: workchain %s; give a basechain (0) wallet", quoteInput(wc))
		}
		parsed, err := address.ParseRawAddr(strings.ToLower(s))
		if err != nil {
			return "", invalidf("invalid TON address: %s", err.Error())
		}
		a = parsed
	} else {
		if len(s) != 48 {
			return "", invalidf("invalid TON address: a user-friendly address has 48 characters")
		}
		// Standard base64 spells the same bytes with + and /.
		parsed, err := address.ParseAddr(strings.NewReplacer("+", "-", "/", "_").Replace(s))
		if err != nil {
			return "", invalidf("invalid TON address: bad checksum or encoding (a mistyped address?)")
		}
		if parsed.IsTestnetOnly() {
			return "", invalidf("invalid TON address: a testnet address; give the wallet's mainnet address")
		}
		if parsed.Workchain() != 0 {
			return "", invalidf("invalid TON address: workchain %d; give a basechain (0) wallet", parsed.Workchain())
		}
		a = parsed
	}
	return a.Bounce(false).Testnet(false).String(), nil
}
