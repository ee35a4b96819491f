package paywatch

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/binary"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	troncommon "github.com/fbsobreira/gotron-sdk/pkg/common"
	"github.com/tyler-smith/go-bip32"
)

// xpubVersion is the version of the only extended key ParseXPub accepts:
// BIP32 mainnet public, the "xpub" prefix.
const xpubVersion = 0x0488B21E

// keyVersion names the version bytes of an extended key (SLIP-0132), so a
// wrong key can be refused by the name its owner sees in the wallet.
type keyVersion struct {
	name    string
	private bool
}

var keyVersions = map[uint32]keyVersion{
	0x0488B21E: {"xpub", false}, 0x0488ADE4: {"xprv", true},
	0x049D7CB2: {"ypub", false}, 0x049D7878: {"yprv", true},
	0x04B24746: {"zpub", false}, 0x04B2430C: {"zprv", true},
	0x0295B43F: {"Ypub", false}, 0x0295B005: {"Yprv", true},
	0x02AA7ED3: {"Zpub", false}, 0x02AA7A99: {"Zprv", true},
	0x043587CF: {"tpub", false}, 0x04358394: {"tprv", true},
	0x044A5262: {"upub", false}, 0x044A4E28: {"uprv", true},
	0x045F1CF6: {"vpub", false}, 0x045F18BC: {"vprv", true},
	0x024289EF: {"Upub", false}, 0x024285B5: {"Uprv", true},
	0x02575483: {"Vpub", false}, 0x02575048: {"Vprv", true},
	0x019DA462: {"Ltub", false}, 0x019D9CFE: {"Ltpv", true},
	0x01B26EF6: {"Mtub", false}, 0x01B26792: {"Mtpv", true},
	0x02FACAFD: {"dgub", false}, 0x02FAC398: {"dgpv", true},
}

// firstHardened is the first hardened BIP32 child index (2^31).
const firstHardened = 1 << 31

// serializedKeyLen is the length of a decoded extended key: 78 bytes and a
// 4-byte checksum.
const serializedKeyLen = 82

// maxXPubInput bounds the input before base58 decoding, which is quadratic;
// a serialized key is 111 characters.
const maxXPubInput = 128

// chainKey is a non-hardened parent for CKDpub: its public point in affine
// coordinates (Z = 1), its compressed encoding and its chain code.
type chainKey struct {
	point      secp256k1.JacobianPoint
	compressed [33]byte
	chainCode  [32]byte
}

// XPub is a parsed watch-only extended public key from which payment
// addresses are derived. It holds no private material and is safe for
// concurrent use.
type XPub struct {
	canonical string
	depth     int
	// external is the key at m/44'/coin'/account'/0, whose child i is
	// address i: the xpub itself at depth 4, its child 0 at depth 3,
	// computed once at parse time.
	external chainKey
}

// ParseXPub parses and checks a watch-only extended public key. It accepts
// only mainnet "xpub" keys at depth 3 (the BIP44 account, m/44'/coin'/0',
// from which 0/i is derived) or depth 4 (its external chain m/44'/coin'/0'/0,
// from which i is derived), because a key at another depth derives addresses
// that look valid but that the merchant's wallet never shows.
//
// It refuses extended private keys outright, naming no part of them in the
// error; refuses other versions (ypub, zpub, tpub, ...) by name, since their
// owners expect other address types; and refuses keys whose point is not on
// secp256k1. go-bip32, used for decoding, checks none of these. Errors are
// *Error with code EINVALID.
func ParseXPub(s string) (*XPub, error) {
	s = strings.TrimSpace(s)
	if len(s) >= 4 {
		if v, ok := versionByName(s[:4]); ok && v.private {
			return nil, errPrivateKey(v.name)
		}
	}
	if len(s) > maxXPubInput {
		return nil, invalidf("invalid xpub: wrong length")
	}
	raw, err := troncommon.Decode(s)
	if err != nil || s == "" {
		return nil, invalidf("invalid xpub: not base58")
	}
	if len(raw) != serializedKeyLen {
		return nil, invalidf("invalid xpub: wrong length")
	}
	version := binary.BigEndian.Uint32(raw[:4])
	v, known := keyVersions[version]
	if known && v.private {
		return nil, errPrivateKey(v.name)
	}
	key, err := bip32.Deserialize(raw)
	if err != nil {
		return nil, invalidf("invalid xpub: bad checksum")
	}
	switch {
	case key.IsPrivate || raw[45] == 0:
		// A private key under a public version: refuse it all the same.
		return nil, errPrivateKey("")
	case version != xpubVersion && known:
		return nil, invalidf("%s keys are not supported; use an xpub", v.name)
	case version != xpubVersion:
		return nil, invalidf("unknown extended key version %08x; use an xpub", version)
	}
	pub, err := secp256k1.ParsePubKey(key.Key)
	if err != nil || len(key.Key) != 33 {
		return nil, invalidf("invalid xpub: not a valid point on secp256k1")
	}
	depth := int(key.Depth)
	child := binary.BigEndian.Uint32(key.ChildNumber)
	var k chainKey
	pub.AsJacobian(&k.point)
	copy(k.compressed[:], key.Key)
	copy(k.chainCode[:], key.ChainCode)

	switch depth {
	case 3:
		if child < firstHardened {
			return nil, invalidf("invalid xpub: a depth-3 key must be a hardened BIP44 account (m/44'/coin'/0')")
		}
		ext, err := k.child(0)
		if err != nil {
			return nil, invalidf("invalid xpub: its external chain is not derivable")
		}
		k = ext
	case 4:
		if child != 0 {
			return nil, invalidf("invalid xpub: a depth-4 key must be the external chain m/44'/coin'/0'/0")
		}
	default:
		return nil, invalidf("xpub depth %d is not supported: use the account xpub m/44'/coin'/0' (depth 3) or its external chain m/44'/coin'/0'/0 (depth 4)", depth)
	}
	return &XPub{canonical: key.B58Serialize(), depth: depth, external: k}, nil
}

// versionByName finds a key version by its four-letter prefix.
func versionByName(prefix string) (keyVersion, bool) {
	for _, v := range keyVersions {
		if v.name == prefix {
			return v, true
		}
	}
	return keyVersion{}, false
}

// errPrivateKey is the refusal of an extended private key; the service is
// non-custodial and must never hold one.
func errPrivateKey(name string) *Error {
	if name == "" {
		name = "extended private key"
	}
	return invalidf("this is an extended private key (%s); private keys are never accepted, export the watch-only xpub instead", name)
}

// Depth returns the BIP32 depth of the key: 3 for an account key, 4 for an
// external chain key.
func (x *XPub) Depth() int {
	return x.depth
}

// String returns the canonical serialization of the key, the form to store.
func (x *XPub) String() string {
	return x.canonical
}

// Address returns the address at external-chain index i in family f: for
// EVM the EIP-55 form of keccak256(X‖Y)[12:] of the uncompressed child key,
// for Tron the base58check of 0x41 and the same 20 bytes. Index 0 is the
// merchant's gas address; payments start at FirstPaymentIndex.
//
// In the astronomically unlikely case (below 2^-127) that BIP32 declares
// index i invalid, Address returns an error and the caller should move on to
// the next index, as BIP32 prescribes.
func (x *XPub) Address(f Family, index uint32) (string, error) {
	if !f.Derived() {
		return "", invalidf("unknown address family %s", quoteInput(string(f)))
	}
	if index >= firstHardened {
		return "", invalidf("derivation index %d is hardened; a watch-only key derives indices below 2^31", index)
	}
	p, err := x.external.childPoint(index)
	if err != nil {
		return "", err
	}
	id := accountID(&p)
	if f == FamilyTron {
		return TronAddressFromEVMBytes(id[:]), nil
	}
	return common.Address(id).Hex(), nil
}

// accountID returns the 20-byte account id of an affine public point: the
// last 20 bytes of keccak256 over X‖Y. Hashing the compressed key instead
// gives a valid-looking, wrong address.
func accountID(p *secp256k1.JacobianPoint) [20]byte {
	var xy [64]byte
	p.X.PutBytesUnchecked(xy[:32])
	p.Y.PutBytesUnchecked(xy[32:])
	var id [20]byte
	copy(id[:], crypto.Keccak256(xy[:])[12:])
	return id
}

// errInvalidChild reports the 1-in-2^127 BIP32 case of an unusable index.
func errInvalidChild(index uint32) error {
	return Errorf(EINVALID, "derivation index %d yields an invalid key; skip to the next index", index)
}

// intermediate computes HMAC-SHA512(chainCode, serP(K) ‖ ser32(i)), the
// CKDpub intermediate value I = IL ‖ IR.
func (k *chainKey) intermediate(index uint32) [64]byte {
	var data [37]byte
	copy(data[:33], k.compressed[:])
	binary.BigEndian.PutUint32(data[33:], index)
	mac := hmac.New(sha512.New, k.chainCode[:])
	mac.Write(data[:])
	var out [64]byte
	mac.Sum(out[:0])
	return out
}

// childPoint is BIP32 CKDpub without the chain code: point(IL) + K, in
// affine coordinates. It rejects IL ≥ n and the point at infinity, as BIP32
// requires. This is go-bip32's NewChildKey on public keys, on decred's
// secp256k1 instead of big.Int: tens of microseconds instead of milliseconds.
func (k *chainKey) childPoint(index uint32) (secp256k1.JacobianPoint, error) {
	i := k.intermediate(index)
	var il secp256k1.ModNScalar
	if overflow := il.SetByteSlice(i[:32]); overflow {
		return secp256k1.JacobianPoint{}, errInvalidChild(index)
	}
	var ilG, sum secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&il, &ilG)
	secp256k1.AddNonConst(&ilG, &k.point, &sum)
	if (sum.X.IsZero() && sum.Y.IsZero()) || sum.Z.IsZero() {
		return secp256k1.JacobianPoint{}, errInvalidChild(index)
	}
	sum.ToAffine()
	return sum, nil
}

// child returns the full child chain key at a non-hardened index.
func (k *chainKey) child(index uint32) (chainKey, error) {
	p, err := k.childPoint(index)
	if err != nil {
		return chainKey{}, err
	}
	i := k.intermediate(index)
	out := chainKey{point: p}
	copy(out.chainCode[:], i[32:])
	pub := secp256k1.NewPublicKey(&p.X, &p.Y)
	copy(out.compressed[:], pub.SerializeCompressed())
	return out, nil
}
