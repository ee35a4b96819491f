package paywatch_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func TestNormalizeTxHash(t *testing.T) {
	const lower = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	upper := strings.ToUpper(lower)
	mixed := "A1b2C3d4E5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8F90"
	inputs := []string{lower, upper, mixed, "0x" + lower, "0x" + upper, "0X" + mixed, " 0x" + lower + "\n"}

	for _, n := range []paywatch.Network{paywatch.BEP20, paywatch.ERC20, paywatch.POLYGON, paywatch.ARBITRUM} {
		for _, in := range inputs {
			got, err := paywatch.NormalizeTxHash(n, in)
			require.NoError(t, err, in)
			assert.Equal(t, "0x"+lower, got, "%s %s", n, in)
		}
	}
	for _, in := range inputs {
		got, err := paywatch.NormalizeTxHash(paywatch.TRC20, in)
		require.NoError(t, err, in)
		assert.Equal(t, lower, got, in)
	}

	bad := []struct {
		network paywatch.Network
		in, err string
	}{
		{paywatch.ERC20, "", "invalid transaction hash: want 64 hex digits, optionally prefixed by 0x"},
		{paywatch.ERC20, "0x", "invalid transaction hash: want 64 hex digits, optionally prefixed by 0x"},
		{paywatch.ERC20, lower[:63], "invalid transaction hash: want 64 hex digits, optionally prefixed by 0x"},
		{paywatch.ERC20, lower + "0", "invalid transaction hash: want 64 hex digits, optionally prefixed by 0x"},
		{paywatch.TRC20, "0x0x" + lower[:62], "invalid transaction hash: not hexadecimal"},
		{paywatch.TRC20, lower[:63] + "g", "invalid transaction hash: not hexadecimal"},
		{paywatch.TRC20, lower[:62] + " 0", "invalid transaction hash: not hexadecimal"},
		{paywatch.ERC20, "0x" + lower[:31] + "é" + lower[33:], "invalid transaction hash: not hexadecimal"},
		{"SUI", lower, `unknown network "SUI"`},
		{"", lower, `unknown network ""`},
	}
	for _, tt := range bad {
		_, err := paywatch.NormalizeTxHash(tt.network, tt.in)
		require.EqualError(t, err, tt.err, tt.in)
		assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
	}
}

// A TON transaction hash is 32 bytes: 64 hex digits in any case (as
// explorers print it) or base64, standard or URL-safe (as TON Center and
// wallets print it), all kept as 64 lowercase hex digits.
func TestNormalizeTONHash(t *testing.T) {
	const hexHash = "3bbda967def473763d20b70f3cd43ea6bca8e251737375e686e55d366a05ea65"
	for _, in := range []string{hexHash, strings.ToUpper(hexHash), " O72pZ970c3Y9ILcPPNQ+pryo4lFzc3XmhuVdNmoF6mU=\n", "O72pZ970c3Y9ILcPPNQ-pryo4lFzc3XmhuVdNmoF6mU"} {
		got, err := paywatch.NormalizeTxHash(paywatch.TON, in)
		require.NoError(t, err, in)
		assert.Equal(t, hexHash, got, in)
	}
	for _, bad := range []string{"", "0x" + hexHash, hexHash[:63] + "g", "O72pZ970c3Y9ILcPPNQ+pryo4lFzc3XmhuVdNmoF6m"} {
		_, err := paywatch.NormalizeTxHash(paywatch.TON, bad)
		assert.EqualError(t, err, "invalid transaction hash: want a TON transaction's hash, 64 hex digits or base64", bad)
	}
}

// A SOLANA transaction is named by its first signature: base58 of 64
// bytes, kept as given (base58 has one spelling); hex hashes and other
// lengths are refused.
func TestNormalizeSolanaSignature(t *testing.T) {
	const sig = "28f8jFzCX3D1dJ5sZSABgVmrziAQu3hPeERjRoKMJwvQGrahxDfSRARpgX4rBeGcYvGSMu77QPoEqYdyYTzx9TY7"
	got, err := paywatch.NormalizeTxHash(paywatch.SOLANA, " "+sig+"\n")
	require.NoError(t, err)
	assert.Equal(t, sig, got)
	for _, bad := range []string{"", "0x" + strings.Repeat("ab", 32), strings.Repeat("ab", 32), "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", sig + "0"} {
		_, err := paywatch.NormalizeTxHash(paywatch.SOLANA, bad)
		assert.EqualError(t, err, "invalid transaction signature: want the base58 signature of a Solana transaction", bad)
	}
}
