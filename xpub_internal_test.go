package paywatch

import (
	"crypto/pbkdf2"
	"crypto/sha512"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tyler-smith/go-bip32"
)

// TestExternalChainKeyMatchesGoBip32 checks the whole child chain key our
// parser precomputes for a depth-3 xpub (point and chain code), not only
// the addresses derived from it.
func TestExternalChainKeyMatchesGoBip32(t *testing.T) {
	seed, err := pbkdf2.Key(sha512.New, "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about", []byte("mnemonic"), 2048, 64)
	require.NoError(t, err)
	k, err := bip32.NewMasterKey(seed)
	require.NoError(t, err)
	for _, i := range []uint32{bip32.FirstHardenedChild + 44, bip32.FirstHardenedChild + 60, bip32.FirstHardenedChild} {
		k, err = k.NewChildKey(i)
		require.NoError(t, err)
	}
	accountPub := k.PublicKey()
	x, err := ParseXPub(accountPub.B58Serialize())
	require.NoError(t, err)

	want, err := accountPub.NewChildKey(0)
	require.NoError(t, err)
	assert.Equal(t, want.Key, x.external.compressed[:])
	assert.Equal(t, want.ChainCode, x.external.chainCode[:])

	// And one level further, through child rather than childPoint.
	for _, i := range []uint32{0, 1, 7, 1 << 30} {
		w, err := want.NewChildKey(i)
		require.NoError(t, err)
		got, err := x.external.child(i)
		require.NoError(t, err)
		assert.Equal(t, w.Key, got.compressed[:], "index %d", i)
		assert.Equal(t, w.ChainCode, got.chainCode[:], "index %d", i)
	}
}
