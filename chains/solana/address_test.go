package solana_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/chains/solana"
)

// The associated token accounts of recorded mainnet transfers
// (testdata/mainnet) are derived from their owners and mints alone, for
// SPL Token and for Token-2022, whose accounts differ by the program seed.
func TestAssociatedTokenAccountOfRecordedTransfers(t *testing.T) {
	for _, tc := range []struct {
		owner, mint, program, account string
	}{
		// getTransaction_usdc_transferChecked_json.json, the credited account.
		{"GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", usdc, spl, "BKHLvZxmSGUJRMX9WPPLFTQvRTktctpL6At2yWnxbLtV"},
		// getTransaction_token2022_transferChecked_transferfee_json.json.
		{"5Sp1e78jLb9b4B8FMFEGobzQCc9kW23tydFNaeGsNJSt", "7atgF8KQo4wJrD5ATGX7t1V2zVvykPJbFfNeVf1icFv1", token22, "4RCuNxRhspEdRLyk66WTTj68aoQGoLiDTYJWTwoUuH9q"},
	} {
		got, err := solana.AssociatedTokenAccount(tc.owner, tc.mint, tc.program)
		require.NoError(t, err)
		assert.Equal(t, tc.account, got, "%s's account of %s", tc.owner, tc.mint)
	}
	// The program is a seed: the same owner and mint under the other
	// token program is another account.
	other, err := solana.AssociatedTokenAccount("GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", usdc, token22)
	require.NoError(t, err)
	assert.NotEqual(t, "BKHLvZxmSGUJRMX9WPPLFTQvRTktctpL6At2yWnxbLtV", other)

	_, err = solana.AssociatedTokenAccount("GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", usdc, wsol)
	assert.ErrorContains(t, err, "not a token program")
	_, err = solana.AssociatedTokenAccount("not-base58-0OIl", usdc, spl)
	assert.Error(t, err)
}
