package paywatch_test

import (
	"math/big"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// A TON memo is 8 characters a person can type without a look-alike
// (no 0/O, no 1/I/L), and fresh each time.
func TestNewTONComment(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		c := paywatch.NewTONComment()
		require.Len(t, c, paywatch.TONCommentLength)
		assert.Empty(t, strings.Trim(c, "23456789ABCDEFGHJKMNPQRSTUVWXYZ"), c)
		assert.False(t, seen[c], "a repeat in 2,000 draws")
		seen[c] = true
	}
}

// The TON transfer link a memo payment's QR code carries, read back by a
// parser of the test's own: the recipient, the jetton master, the amount
// in base units and the comment.
func TestTONTransferRequestURL(t *testing.T) {
	r := paywatch.TONTransferRequest{
		Recipient: "UQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_p0p",
		Jetton:    "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs",
		Units:     big.NewInt(25_500_000),
		Text:      "K7QX 4MN+&",
	}
	raw := r.URL()
	u, err := url.Parse(raw)
	require.NoError(t, err, raw)
	assert.Equal(t, "ton", u.Scheme)
	assert.Equal(t, "transfer", u.Host)
	assert.Equal(t, "/"+r.Recipient, u.Path)
	q, err := url.ParseQuery(u.RawQuery)
	require.NoError(t, err)
	assert.Equal(t, r.Jetton, q.Get("jetton"))
	assert.Equal(t, "25500000", q.Get("amount"), "base units, never a decimal")
	assert.Equal(t, "K7QX 4MN+&", q.Get("text"), "the comment survives encoding")
	assert.NotContains(t, raw, "+4MN", "a space is %20, never +")
}
