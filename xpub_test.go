package paywatch_test

import (
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/binary"
	"strings"
	"sync"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	troncommon "github.com/fbsobreira/gotron-sdk/pkg/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tyler-smith/go-bip32"

	"github.com/paywatch/paywatch"
)

const testMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

// hd holds keys of the test wallet, derived once: the private account keys
// at m/44'/coin'/0' and their external chains m/44'/coin'/0'/0.
type hd struct {
	master                 *bip32.Key
	ethAccount, ethChain   *bip32.Key
	tronAccount, tronChain *bip32.Key
}

var (
	hdOnce sync.Once
	hdKeys hd
)

func testHD(t testing.TB) hd {
	t.Helper()
	hdOnce.Do(func() {
		// BIP39: seed = PBKDF2-HMAC-SHA512(mnemonic, "mnemonic" + passphrase, 2048).
		seed, err := pbkdf2.Key(sha512.New, testMnemonic, []byte("mnemonic"), 2048, 64)
		if err != nil {
			panic(err)
		}
		master, err := bip32.NewMasterKey(seed)
		if err != nil {
			panic(err)
		}
		hdKeys.master = master
		hdKeys.ethAccount = derive(master, bip32.FirstHardenedChild+44, bip32.FirstHardenedChild+60, bip32.FirstHardenedChild)
		hdKeys.ethChain = derive(hdKeys.ethAccount, 0)
		hdKeys.tronAccount = derive(master, bip32.FirstHardenedChild+44, bip32.FirstHardenedChild+195, bip32.FirstHardenedChild)
		hdKeys.tronChain = derive(hdKeys.tronAccount, 0)
	})
	return hdKeys
}

func derive(k *bip32.Key, path ...uint32) *bip32.Key {
	for _, i := range path {
		var err error
		k, err = k.NewChildKey(i)
		if err != nil {
			panic(err)
		}
	}
	return k
}

// reencode serializes key bytes under another version, with a valid
// checksum, the way another wallet or coin would export them.
func reencode(t testing.TB, k *bip32.Key, version uint32) string {
	t.Helper()
	raw, err := k.Serialize()
	require.NoError(t, err)
	payload := append([]byte(nil), raw[:78]...)
	binary.BigEndian.PutUint32(payload[:4], version)
	return troncommon.EncodeCheck(payload)
}

// withKeyBytes serializes k as an xpub with its 33 key bytes replaced.
func withKeyBytes(t testing.TB, k *bip32.Key, key []byte) string {
	t.Helper()
	raw, err := k.Serialize()
	require.NoError(t, err)
	payload := append([]byte(nil), raw[:78]...)
	copy(payload[45:], key)
	return troncommon.EncodeCheck(payload)
}

// privateAddresses derives address i from the private side with go-bip32
// and go-ethereum, independently of the code under test.
func privateAddresses(t testing.TB, chain *bip32.Key, i uint32) (evm string, id [20]byte) {
	t.Helper()
	child, err := chain.NewChildKey(i)
	require.NoError(t, err)
	priv, err := crypto.ToECDSA(child.Key)
	require.NoError(t, err)
	a := crypto.PubkeyToAddress(priv.PublicKey)
	return a.Hex(), a
}

// publicAddress derives address i with go-bip32's public CKDpub step.
func publicAddress(t testing.TB, chainPub *bip32.Key, i uint32) common.Address {
	t.Helper()
	child, err := chainPub.NewChildKey(i)
	require.NoError(t, err)
	pub, err := crypto.DecompressPubkey(child.Key)
	require.NoError(t, err)
	return crypto.PubkeyToAddress(*pub)
}

func TestXPubKnownVectors(t *testing.T) {
	k := testHD(t)
	ethXPub := k.ethAccount.PublicKey().B58Serialize()
	require.True(t, strings.HasPrefix(ethXPub, "xpub6DCoCpSuQZB2"), ethXPub)

	for _, s := range []string{ethXPub, k.ethChain.PublicKey().B58Serialize()} {
		x, err := paywatch.ParseXPub(s)
		require.NoError(t, err)
		assert.Equal(t, s, x.String())
		a, err := x.Address(paywatch.FamilyEVM, 0)
		require.NoError(t, err)
		assert.Equal(t, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", a)
	}
	// The well-known first accounts of this mnemonic in Ethereum wallets.
	x, err := paywatch.ParseXPub(ethXPub)
	require.NoError(t, err)
	assert.Equal(t, 3, x.Depth())
	for i, want := range []string{
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
		"0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0",
		"0xb6716976A3ebe8D39aCEB04372f22Ff8e6802D7A",
		"0xF3f50213C1d2e255e4B2bAD430F8A38EEF8D718E",
		"0x51cA8ff9f1C0a99f88E86B8112eA3237F55374cA",
	} {
		got, err := x.Address(paywatch.FamilyEVM, uint32(i))
		require.NoError(t, err)
		assert.Equal(t, want, got, "index %d", i)
	}

	for _, s := range []string{k.tronAccount.PublicKey().B58Serialize(), k.tronChain.PublicKey().B58Serialize()} {
		x, err := paywatch.ParseXPub(s)
		require.NoError(t, err)
		a, err := x.Address(paywatch.FamilyTron, 0)
		require.NoError(t, err)
		assert.Equal(t, "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", a)
	}
}

func TestXPubMatchesPrivateDerivation(t *testing.T) {
	// Addresses from the watch-only key equal those a wallet computes from
	// its private keys, in both families and at both depths.
	k := testHD(t)
	n := uint32(40)
	if testing.Short() {
		n = 8
	}
	for _, fam := range []struct {
		family         paywatch.Family
		account, chain *bip32.Key
	}{
		{paywatch.FamilyEVM, k.ethAccount, k.ethChain},
		{paywatch.FamilyTron, k.tronAccount, k.tronChain},
	} {
		d3, err := paywatch.ParseXPub(fam.account.PublicKey().B58Serialize())
		require.NoError(t, err)
		d4, err := paywatch.ParseXPub(fam.chain.PublicKey().B58Serialize())
		require.NoError(t, err)
		assert.Equal(t, 4, d4.Depth())
		indices := []uint32{}
		for i := uint32(0); i < n; i++ {
			indices = append(indices, i)
		}
		indices = append(indices, 1000, 65535, 1<<24, 1<<31-1)
		for _, i := range indices {
			evm, id := privateAddresses(t, fam.chain, i)
			want := evm
			if fam.family == paywatch.FamilyTron {
				want = paywatch.TronAddressFromEVMBytes(id[:])
			}
			got3, err := d3.Address(fam.family, i)
			require.NoError(t, err)
			got4, err := d4.Address(fam.family, i)
			require.NoError(t, err)
			require.Equal(t, want, got3, "%s index %d depth 3", fam.family, i)
			require.Equal(t, want, got4, "%s index %d depth 4", fam.family, i)
			// Derived addresses are already canonical.
			canon, err := paywatch.NormalizeAddress(fam.family, got3)
			require.NoError(t, err)
			require.Equal(t, got3, canon)
		}
	}
}

func TestXPubMatchesGoBip32(t *testing.T) {
	// Our CKDpub on decred's secp256k1 against go-bip32's own NewChildKey
	// on the public key, over thousands of indices.
	k := testHD(t)
	n := uint32(2000)
	if testing.Short() {
		n = 200
	}
	chainPub := k.ethChain.PublicKey()
	x, err := paywatch.ParseXPub(k.ethAccount.PublicKey().B58Serialize())
	require.NoError(t, err)
	for i := uint32(0); i < n; i++ {
		want := publicAddress(t, chainPub, i)
		evm, err := x.Address(paywatch.FamilyEVM, i)
		require.NoError(t, err)
		require.Equal(t, want.Hex(), evm, "index %d", i)
		tron, err := x.Address(paywatch.FamilyTron, i)
		require.NoError(t, err)
		require.Equal(t, paywatch.TronAddressFromEVMBytes(want[:]), tron, "index %d", i)
	}
}

func TestXPubOtherAccountsAndConcurrency(t *testing.T) {
	k := testHD(t)
	// Account 1' is a valid BIP44 account too.
	acct1 := derive(k.master, bip32.FirstHardenedChild+44, bip32.FirstHardenedChild+60, bip32.FirstHardenedChild+1)
	x, err := paywatch.ParseXPub(acct1.PublicKey().B58Serialize())
	require.NoError(t, err)
	want, _ := privateAddresses(t, derive(acct1, 0), 5)
	got, err := x.Address(paywatch.FamilyEVM, 5)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Address is safe for concurrent use.
	x, err = paywatch.ParseXPub(k.ethAccount.PublicKey().B58Serialize())
	require.NoError(t, err)
	var wg sync.WaitGroup
	results := make([]string, 64)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = x.Address(paywatch.FamilyEVM, uint32(i%4))
		}()
	}
	wg.Wait()
	for i, r := range results {
		want, _ := x.Address(paywatch.FamilyEVM, uint32(i%4))
		assert.Equal(t, want, r)
	}
}

func TestXPubAddressErrors(t *testing.T) {
	k := testHD(t)
	x, err := paywatch.ParseXPub(k.ethAccount.PublicKey().B58Serialize())
	require.NoError(t, err)
	_, err = x.Address(paywatch.FamilyEVM, 1<<31)
	require.EqualError(t, err, "derivation index 2147483648 is hardened; a watch-only key derives indices below 2^31")
	_, err = x.Address("btc", 1)
	require.EqualError(t, err, `unknown address family "btc"`)
}

func TestParseXPubRejections(t *testing.T) {
	k := testHD(t)
	account := k.ethAccount
	pub := account.PublicKey()
	xpub := pub.B58Serialize()
	xprv := account.B58Serialize()
	require.True(t, strings.HasPrefix(xprv, "xprv"))

	const privateMsg = "private keys are never accepted"

	// An off-curve x coordinate: the first x ≥ 1 with no point on the curve.
	var offCurve []byte
	for x := byte(1); offCurve == nil; x++ {
		key := make([]byte, 33)
		key[0], key[32] = 0x02, x
		if _, err := secp256k1.ParsePubKey(key); err != nil {
			offCurve = key
		}
	}
	aboveP := append([]byte{0x03}, []byte(strings.Repeat("\xff", 32))...)

	tests := []struct {
		name string
		in   string
		want string // substring of the error
	}{
		{"xprv", xprv, "this is an extended private key (xprv); " + privateMsg},
		{"xprv with typo", xprv[:50] + "1" + xprv[51:], privateMsg},
		{"xprv truncated", xprv[:20], privateMsg},
		{"yprv", reencode(t, account, 0x049D7878), "(yprv); " + privateMsg},
		{"zprv", reencode(t, account, 0x04B2430C), "(zprv); " + privateMsg},
		{"tprv", reencode(t, account, 0x04358394), "(tprv); " + privateMsg},
		{"private key bytes under xpub version", reencode(t, account, 0x0488B21E), privateMsg},
		{"ypub", reencode(t, pub, 0x049D7CB2), "ypub keys are not supported; use an xpub"},
		{"zpub", reencode(t, pub, 0x04B24746), "zpub keys are not supported; use an xpub"},
		{"Ypub", reencode(t, pub, 0x0295B43F), "Ypub keys are not supported; use an xpub"},
		{"Zpub", reencode(t, pub, 0x02AA7ED3), "Zpub keys are not supported; use an xpub"},
		{"tpub", reencode(t, pub, 0x043587CF), "tpub keys are not supported; use an xpub"},
		{"upub", reencode(t, pub, 0x044A5262), "upub keys are not supported; use an xpub"},
		{"vpub", reencode(t, pub, 0x045F1CF6), "vpub keys are not supported; use an xpub"},
		{"Ltub", reencode(t, pub, 0x019DA462), "Ltub keys are not supported; use an xpub"},
		{"unknown version", reencode(t, pub, 0x01020304), "unknown extended key version 01020304; use an xpub"},
		{"off curve", withKeyBytes(t, pub, offCurve), "invalid xpub: not a valid point on secp256k1"},
		{"x above p", withKeyBytes(t, pub, aboveP), "invalid xpub: not a valid point on secp256k1"},
		{"bad key prefix", withKeyBytes(t, pub, append([]byte{0x05}, pub.Key[1:]...)), "invalid xpub: not a valid point on secp256k1"},
		{"bad checksum", xpub[:len(xpub)-1] + string("23"[boolIndex(xpub[len(xpub)-1] == '2')]), "invalid xpub: bad checksum"},
		{"not base58", xpub[:10] + "0" + xpub[11:], "invalid xpub: not base58"},
		{"empty", "", "invalid xpub: not base58"},
		{"too short", xpub[:100], "invalid xpub: wrong length"},
		{"too long", xpub + xpub, "invalid xpub: wrong length"},
		{"an address", "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", "invalid xpub: not base58"},
		{"master (depth 0)", k.master.PublicKey().B58Serialize(), "xpub depth 0 is not supported"},
		{"m/44' (depth 1)", derive(k.master, bip32.FirstHardenedChild+44).PublicKey().B58Serialize(), "xpub depth 1 is not supported"},
		{"m/44'/60' (depth 2)", derive(k.master, bip32.FirstHardenedChild+44, bip32.FirstHardenedChild+60).PublicKey().B58Serialize(), "xpub depth 2 is not supported"},
		{"address key (depth 5)", derive(k.ethChain, 0).PublicKey().B58Serialize(), "xpub depth 5 is not supported"},
		{"non-hardened account", derive(k.master, bip32.FirstHardenedChild+44, bip32.FirstHardenedChild+60, 0).PublicKey().B58Serialize(), "a depth-3 key must be a hardened BIP44 account"},
		{"change chain", derive(k.ethAccount, 1).PublicKey().B58Serialize(), "a depth-4 key must be the external chain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := paywatch.ParseXPub(tt.in)
			require.Error(t, err)
			assert.Nil(t, x)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
			if len(tt.in) > 20 {
				// Errors never echo key material.
				assert.NotContains(t, err.Error(), tt.in[4:20])
			}
		})
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestVersionNamesMatchPrefixes(t *testing.T) {
	// Each version encodes to a string starting with its name; this checks
	// the version table against the names users see.
	pub := testHD(t).ethAccount.PublicKey()
	for version, name := range map[uint32]string{
		0x0488B21E: "xpub", 0x0488ADE4: "xprv", 0x049D7CB2: "ypub", 0x049D7878: "yprv",
		0x04B24746: "zpub", 0x04B2430C: "zprv", 0x0295B43F: "Ypub", 0x0295B005: "Yprv",
		0x02AA7ED3: "Zpub", 0x02AA7A99: "Zprv", 0x043587CF: "tpub", 0x04358394: "tprv",
		0x044A5262: "upub", 0x044A4E28: "uprv", 0x045F1CF6: "vpub", 0x045F18BC: "vprv",
		0x024289EF: "Upub", 0x024285B5: "Uprv", 0x02575483: "Vpub", 0x02575048: "Vprv",
		0x019DA462: "Ltub", 0x019D9CFE: "Ltpv", 0x01B26EF6: "Mtub", 0x01B26792: "Mtpv",
		0x02FACAFD: "dgub", 0x02FAC398: "dgpv",
	} {
		s := reencode(t, pub, version)
		assert.True(t, strings.HasPrefix(s, name), "%08x encodes as %s, want prefix %s", version, s[:4], name)
		_, err := paywatch.ParseXPub(s)
		if name == "xpub" {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), name)
	}
}

func TestParseXPubTrimsAndCanonicalises(t *testing.T) {
	s := testHD(t).ethAccount.PublicKey().B58Serialize()
	x, err := paywatch.ParseXPub("  " + s + "\n")
	require.NoError(t, err)
	assert.Equal(t, s, x.String())
}
