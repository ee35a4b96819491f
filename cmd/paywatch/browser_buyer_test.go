package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// showsShopAndReference asserts the payment page names the shop and the
// item (none for an API payment) and shows the payment id as the
// reference to keep.
func (p *browserPage) showsShopAndReference(shop, item, id string) {
	p.t.Helper()
	assert.True(p.t, p.visible("#shop"), "the shop is named")
	assert.Equal(p.t, shop, p.text("#shop"))
	if item == "" {
		assert.False(p.t, p.visible("#item"))
	} else {
		assert.True(p.t, p.visible("#item"), "the item is named")
		assert.Equal(p.t, item, p.text("#item"))
	}
	assert.True(p.t, p.visible("#reference-id"), "the reference is shown")
	assert.Equal(p.t, id, p.text("#reference-id"))
}

// walletRequest is an EIP-681 token transfer request, read apart from the
// code that writes it: ethereum:<contract>@<chain id>/transfer?address=<to>&uint256=<units>.
type walletRequest struct {
	contract, chainID, function, to, units string
}

func parseWalletRequest(t *testing.T, uri string) walletRequest {
	t.Helper()
	u, err := url.Parse(uri)
	require.NoError(t, err, uri)
	require.Equal(t, "ethereum", u.Scheme, uri)
	target, function, _ := strings.Cut(u.Opaque, "/")
	contract, chainID, _ := strings.Cut(target, "@")
	q := u.Query()
	require.Len(t, q, 2, "address and uint256 only: %s", uri)
	return walletRequest{contract: contract, chainID: chainID, function: function, to: q.Get("address"), units: q.Get("uint256")}
}
