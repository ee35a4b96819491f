package paywatch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	troncommon "github.com/fbsobreira/gotron-sdk/pkg/common"
)

// TronAddressPrefix is the first byte of every Tron mainnet address; it is
// what makes base58check addresses start with "T".
const TronAddressPrefix = 0x41

// maxAddressInput bounds the input length before any decoding work, because
// base58 decoding is quadratic and an address is never longer than 44 bytes.
const maxAddressInput = 128

// NormalizeAddress validates a static address of family f and returns its
// one canonical form, the form stored and compared everywhere:
//
//   - evm: "0x" and 40 hex digits in any single case, or mixed case that is a
//     valid EIP-55 checksum (a wrong mixed-case checksum is a typo and is
//     rejected); the canonical form is the EIP-55 checksum string.
//   - tron: base58check "T..." of 0x41 and 20 bytes, or the same 21 bytes as
//     42 hex digits ("41..." with an optional 0x); the canonical form is the
//     base58check string.
//   - solana: a wallet's base58 public key (32 bytes on the ed25519 curve;
//     NormalizeSolanaWallet), its canonical form the base58 string.
//   - ton: a wallet's raw ("0:<hex>") or user-friendly address
//     (NormalizeTONWallet), its canonical form the non-bounceable
//     mainnet user-friendly string ("UQ…").
//
// Surrounding white space is ignored, as pasted addresses often carry it.
func NormalizeAddress(f Family, s string) (string, error) {
	s = strings.TrimSpace(s)
	switch f {
	case FamilyEVM:
		a, err := parseEVMAddress(s)
		if err != nil {
			return "", err
		}
		return a.Hex(), nil
	case FamilyTron:
		b, err := TronAddressBytes(s)
		if err != nil {
			return "", err
		}
		return troncommon.EncodeCheck(b), nil
	case FamilySolana:
		return NormalizeSolanaWallet(s)
	case FamilyTON:
		return NormalizeTONWallet(s)
	default:
		return "", invalidf("unknown address family %s", quoteInput(string(f)))
	}
}

// NormalizeNetworkAddress is NormalizeAddress for the family of network n.
func NormalizeNetworkAddress(n Network, s string) (string, error) {
	f := n.Family()
	if f == "" {
		_, err := ParseNetwork(string(n))
		return "", err
	}
	return NormalizeAddress(f, s)
}

// parseEVMAddress accepts a 0x-prefixed 40-hex-digit address in one case or
// with a valid EIP-55 checksum.
func parseEVMAddress(s string) (common.Address, error) {
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return common.Address{}, invalidf("invalid EVM address: want 0x followed by 40 hex digits")
	}
	digits := s[2:]
	var raw [20]byte
	if _, err := hex.Decode(raw[:], []byte(digits)); err != nil {
		return common.Address{}, invalidf("invalid EVM address: not hexadecimal")
	}
	a := common.Address(raw)
	if digits != strings.ToLower(digits) && digits != strings.ToUpper(digits) {
		// Mixed case is a checksum claim; honour it.
		if a.Hex()[2:] != digits {
			return common.Address{}, invalidf("invalid EVM address: bad EIP-55 checksum")
		}
	}
	return a, nil
}

// TronAddressBytes decodes a Tron address, in base58check or 42-hex-digit
// form, into its 21 bytes including the 0x41 prefix.
func TronAddressBytes(addr string) ([]byte, error) {
	s := strings.TrimSpace(addr)
	if len(s) > maxAddressInput {
		return nil, invalidf("invalid Tron address: too long")
	}
	if h, ok := strings.CutPrefix(s, "0x"); ok || (len(s) == 42 && strings.HasPrefix(s, "41")) {
		if !ok {
			h = s
		}
		return tronHexBytes(h)
	}
	if !strings.HasPrefix(s, "T") {
		return nil, invalidf("invalid Tron address: must start with T")
	}
	raw, err := troncommon.Decode(s)
	if err != nil {
		return nil, invalidf("invalid Tron address: not base58")
	}
	if len(raw) != 25 {
		return nil, invalidf("invalid Tron address: wrong length")
	}
	body, check := raw[:21], raw[21:]
	sum := sha256.Sum256(body)
	sum = sha256.Sum256(sum[:])
	if string(sum[:4]) != string(check) {
		return nil, invalidf("invalid Tron address: bad checksum")
	}
	if body[0] != TronAddressPrefix {
		return nil, invalidf("invalid Tron address: wrong prefix")
	}
	return body, nil
}

// tronHexBytes decodes the 42-hex-digit form of a Tron address.
func tronHexBytes(h string) ([]byte, error) {
	if len(h) != 42 {
		return nil, invalidf("invalid Tron address: hex form must be 42 hex digits starting with 41")
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, invalidf("invalid Tron address: not hexadecimal")
	}
	if b[0] != TronAddressPrefix {
		return nil, invalidf("invalid Tron address: wrong prefix")
	}
	return b, nil
}

// TronAddressFromEVMBytes returns the base58check Tron address of a 20-byte
// account id, as found in Tron event logs and topics, which omit the 0x41
// prefix. A 21-byte value that already carries the prefix is accepted too.
// Any other length is a programming error and panics, because a silently
// wrong address would misroute money matching.
func TronAddressFromEVMBytes(b []byte) string {
	var buf [21]byte
	switch {
	case len(b) == 20:
		buf[0] = TronAddressPrefix
		copy(buf[1:], b)
	case len(b) == 21 && b[0] == TronAddressPrefix:
		copy(buf[:], b)
	default:
		panic(fmt.Sprintf("paywatch: TronAddressFromEVMBytes needs 20 bytes, got %d", len(b)))
	}
	return troncommon.EncodeCheck(buf[:])
}
