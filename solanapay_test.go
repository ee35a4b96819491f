package paywatch_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// parseSolanaPay reads a transfer request as SPEC.md describes it, with
// net/url rather than the code that wrote it: the scheme, the recipient
// as the opaque part, and each parameter decoded once.
func parseSolanaPay(t *testing.T, link string) (recipient string, q url.Values) {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	require.Equal(t, "solana", u.Scheme)
	q, err = url.ParseQuery(u.RawQuery)
	require.NoError(t, err)
	return u.Opaque, q
}

func TestSolanaPayTransferRequest(t *testing.T) {
	ref := paywatch.NewSolanaReference()
	raw, err := base58.Decode(ref)
	require.NoError(t, err)
	assert.Len(t, raw, 32)
	assert.NotEqual(t, ref, paywatch.NewSolanaReference(), "fresh each time")

	link := paywatch.SolanaPayRequest{
		Recipient: "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK",
		Amount:    paywatch.MustParseAmount("25.500000", 6),
		Mint:      "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
		Reference: ref,
		Label:     "Café Noir & Co",
		Message:   "T-shirt, size M (#1001)",
	}.URL()
	assert.NotContains(t, link, "+", "a space is %20, never +")
	recipient, q := parseSolanaPay(t, link)
	assert.Equal(t, "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", recipient)
	assert.Equal(t, "25.5", q.Get("amount"), "whole tokens, significant decimals only")
	assert.Equal(t, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", q.Get("spl-token"))
	assert.Equal(t, []string{ref}, q["reference"])
	assert.Equal(t, "Café Noir & Co", q.Get("label"))
	assert.Equal(t, "T-shirt, size M (#1001)", q.Get("message"))
	assert.True(t, strings.HasPrefix(link, "solana:GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK?amount=25.5&spl-token="), link)

	for amount, want := range map[string]string{"10": "10", "0.000001": "0.000001", "1000000.10": "1000000.1"} {
		_, q := parseSolanaPay(t, paywatch.SolanaPayRequest{Recipient: "r", Amount: paywatch.MustParseAmount(amount, 6)}.URL())
		assert.Equal(t, want, q.Get("amount"), amount)
	}
	// No amount (the buyer's choice) and no label: the parameters are left out.
	assert.Equal(t, "solana:r?reference="+ref, paywatch.SolanaPayRequest{Recipient: "r", Reference: ref}.URL())
}
