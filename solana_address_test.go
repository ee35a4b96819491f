package paywatch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func TestNormalizeSolanaWallet(t *testing.T) {
	// Owners of recorded mainnet transfers (chains/solana/testdata/mainnet).
	for _, w := range []string{"GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", "54r6W445JsjDf5UGzmVtcczsPpgg3B3J16USuNcu1EY"} {
		got, err := paywatch.NormalizeSolanaWallet(w)
		require.NoError(t, err, w)
		assert.Equal(t, w, got)
	}
	got, err := paywatch.NormalizeSolanaWallet(" GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK\n")
	require.NoError(t, err, "pasted with spaces around it")
	assert.Equal(t, "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", got)
	_, err = paywatch.NormalizeSolanaWallet("11111111111111111111111111111111")
	assert.ErrorContains(t, err, "not a wallet's key", "the System Program's all-zero key")
	for in, msg := range map[string]string{
		// The USDC account of GabwTHe1…: an associated token account.
		"BKHLvZxmSGUJRMX9WPPLFTQvRTktctpL6At2yWnxbLtV": "invalid Solana address: not a wallet's key (a program-derived address such as a token account, or a mistyped key); give the wallet's own address",
		"": "invalid Solana address: want the base58 public key of a wallet",
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94":    "invalid Solana address: not base58",
		"GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFU":    "invalid Solana address: 31 bytes, want 32",
		"1GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK": "invalid Solana address: 33 bytes, want 32",
	} {
		_, err := paywatch.NormalizeSolanaWallet(in)
		assert.EqualError(t, err, msg, in)
		assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err), in)
	}
}
