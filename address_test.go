package paywatch_test

import (
	"encoding/hex"
	"strings"
	"testing"

	troncommon "github.com/fbsobreira/gotron-sdk/pkg/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func hexString(b []byte) string { return hex.EncodeToString(b) }

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// swapCase flips the case of every letter, turning a valid EIP-55 checksum
// into an invalid mixed-case one.
func swapCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'f':
			b.WriteRune(r - 'a' + 'A')
		case 'A' <= r && r <= 'F':
			b.WriteRune(r - 'A' + 'a')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestNormalizeAddressEVM(t *testing.T) {
	// The EIP-55 specification's own examples.
	canon := []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
	}
	for _, c := range canon {
		t.Run(c, func(t *testing.T) {
			inputs := []string{
				c,
				strings.ToLower(c),
				"0x" + strings.ToUpper(c[2:]),
				"0X" + strings.ToUpper(c[2:]),
				"  " + c + "\n",
			}
			for _, in := range inputs {
				got, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, in)
				require.NoError(t, err, in)
				assert.Equal(t, c, got, in)
			}
			_, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, "0x"+swapCase(c[2:]))
			require.EqualError(t, err, "invalid EVM address: bad EIP-55 checksum")
		})
	}

	bad := []struct {
		in, err string
	}{
		{"", "invalid EVM address: want 0x followed by 40 hex digits"},
		{"5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "invalid EVM address: want 0x followed by 40 hex digits"},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe", "invalid EVM address: want 0x followed by 40 hex digits"},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAedd", "invalid EVM address: want 0x followed by 40 hex digits"},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg", "invalid EVM address: not hexadecimal"},
		{"0x 5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe", "invalid EVM address: not hexadecimal"},
		// One letter's case changed: a typo the checksum exists to catch.
		{"0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "invalid EVM address: bad EIP-55 checksum"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "invalid EVM address: want 0x followed by 40 hex digits"},
	}
	for _, tt := range bad {
		_, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, tt.in)
		require.EqualError(t, err, tt.err, tt.in)
		assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
	}

	// The zero address is well formed; it appears as the sender of mints.
	got, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, "0x0000000000000000000000000000000000000000")
	require.NoError(t, err)
	assert.Equal(t, "0x0000000000000000000000000000000000000000", got)
}

func TestNormalizeAddressTron(t *testing.T) {
	const usdt = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
	const usdtHex = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"
	good := []string{
		usdt,
		" " + usdt + "\t",
		usdtHex,
		strings.ToUpper(usdtHex),
		"0x" + usdtHex,
	}
	for _, in := range good {
		got, err := paywatch.NormalizeAddress(paywatch.FamilyTron, in)
		require.NoError(t, err, in)
		assert.Equal(t, usdt, got, in)
		b, err := paywatch.TronAddressBytes(in)
		require.NoError(t, err)
		assert.Equal(t, usdtHex, hexString(b))
	}

	// A well-formed base58check string whose payload has another prefix.
	wrongPrefix := troncommon.EncodeCheck(append([]byte{0x42}, mustHex(t, usdtHex)[1:]...))
	// A well-formed base58check string with a zero prefix, like Bitcoin's.
	bitcoinLike := troncommon.EncodeCheck(append([]byte{0x00}, mustHex(t, usdtHex)[1:]...))
	// A well-formed base58check string of 20 bytes only.
	short := troncommon.EncodeCheck(mustHex(t, usdtHex)[1:])
	// Base58check of 0x41 and 20 bytes, with the last character changed.
	badSum := usdt[:len(usdt)-1] + "u"

	bad := []struct {
		in, err string
	}{
		{"", "invalid Tron address: must start with T"},
		{badSum, "invalid Tron address: bad checksum"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6T", "invalid Tron address: bad checksum"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj60", "invalid Tron address: not base58"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6tt", "invalid Tron address: wrong length"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6", "invalid Tron address: bad checksum"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8", "invalid Tron address: wrong length"},
		{short, "invalid Tron address: must start with T"},
		{wrongPrefix, "invalid Tron address: wrong prefix"},
		{bitcoinLike, "invalid Tron address: must start with T"},
		{"0x" + "42" + usdtHex[2:], "invalid Tron address: wrong prefix"},
		{"0xa614f803b6fd780986a42c78ec9c7f77e6ded13c", "invalid Tron address: hex form must be 42 hex digits starting with 41"},
		{"41a614f803b6fd780986a42c78ec9c7f77e6ded13z", "invalid Tron address: not hexadecimal"},
		{"0x9858EfFD232B4033E47d90003D41EC34EcaEda94", "invalid Tron address: hex form must be 42 hex digits starting with 41"},
		{strings.Repeat("T", 200), "invalid Tron address: too long"},
	}
	for _, tt := range bad {
		_, err := paywatch.NormalizeAddress(paywatch.FamilyTron, tt.in)
		require.EqualError(t, err, tt.err, tt.in)
		assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
	}
}

func TestTronWrongPrefixBase58(t *testing.T) {
	// A payload with prefix 0xa0 also encodes to a string starting with T
	// sometimes; build one that does and check the prefix is still refused.
	for p := 0; p < 256; p++ {
		if p == paywatch.TronAddressPrefix {
			continue
		}
		s := troncommon.EncodeCheck(append([]byte{byte(p)}, make([]byte, 20)...))
		if !strings.HasPrefix(s, "T") {
			continue
		}
		_, err := paywatch.NormalizeAddress(paywatch.FamilyTron, s)
		if len(s) == 34 {
			require.EqualError(t, err, "invalid Tron address: wrong prefix", s)
		} else {
			require.Error(t, err, s)
		}
	}
}

func TestNormalizeAddressUnknownFamily(t *testing.T) {
	_, err := paywatch.NormalizeAddress("btc", "1BoatSLRHtKNngkdXEeobR76b53LETtpyT")
	require.EqualError(t, err, `unknown address family "btc"`)
	_, err = paywatch.NormalizeNetworkAddress(paywatch.TON, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94")
	require.EqualError(t, err, "invalid TON address: a user-friendly address has 48 characters")
	_, err = paywatch.NormalizeNetworkAddress("SUI", "0x9858EfFD232B4033E47d90003D41EC34EcaEda94")
	require.EqualError(t, err, `unknown network "SUI"`)
	_, err = paywatch.NormalizeNetworkAddress(paywatch.SOLANA, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94")
	require.EqualError(t, err, "invalid Solana address: not base58")
	got, err := paywatch.NormalizeNetworkAddress(paywatch.SOLANA, " GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK\n")
	require.NoError(t, err)
	assert.Equal(t, "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", got)
	got, err = paywatch.NormalizeNetworkAddress(paywatch.POLYGON, "0x9858effd232b4033e47d90003d41ec34ecaeda94")
	require.NoError(t, err)
	assert.Equal(t, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", got)
}

func TestTronAddressFromEVMBytes(t *testing.T) {
	raw := mustHex(t, "a614f803b6fd780986a42c78ec9c7f77e6ded13c")
	assert.Equal(t, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", paywatch.TronAddressFromEVMBytes(raw))
	assert.Equal(t, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", paywatch.TronAddressFromEVMBytes(append([]byte{0x41}, raw...)))
	// The input is not retained or modified.
	assert.Equal(t, "a614f803b6fd780986a42c78ec9c7f77e6ded13c", hexString(raw))
	assert.Panics(t, func() { paywatch.TronAddressFromEVMBytes(raw[:19]) })
	assert.Panics(t, func() { paywatch.TronAddressFromEVMBytes(append([]byte{0x42}, raw...)) })
	assert.Panics(t, func() { paywatch.TronAddressFromEVMBytes(nil) })
}
