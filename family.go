package paywatch

import "slices"

// Family is an address family: networks of one family share derived addresses.
type Family string

// The address families.
const (
	FamilyEVM    Family = "evm"
	FamilyTron   Family = "tron"
	FamilySolana Family = "solana"
	FamilyTON    Family = "ton"
)

// derivedFamilies are the families whose addresses derive from a
// watch-only xPub (secp256k1 keys). The others (ed25519 wallets: solana,
// ton)
// have no watch-only derivation: they take registered addresses only,
// and per_payment and per_user payments on them share the wallet's first
// address, told apart by a memo (operations.md §9).
var derivedFamilies = []Family{FamilyEVM, FamilyTron}

// Derived reports whether addresses of family f derive from an xPub.
func (f Family) Derived() bool { return slices.Contains(derivedFamilies, f) }

// Family returns the address family of the network, or "" for an unknown
// network.
func (n Network) Family() Family {
	if row, ok := networkIndex[n]; ok {
		return row.info.Family
	}
	return ""
}

// Families returns the address families in the order their first network
// appears in the registry (tron, evm).
func Families() []Family {
	var out []Family
	for i := range networkTable {
		if f := networkTable[i].info.Family; !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// DerivedFamilies returns the families whose addresses derive from an
// xPub, in Families' order (tron, evm): a wallet holds an xPub of each at
// most.
func DerivedFamilies() []Family {
	var out []Family
	for _, f := range Families() {
		if f.Derived() {
			out = append(out, f)
		}
	}
	return out
}

// ParseFamily validates an address family name ("evm" or "tron").
func ParseFamily(s string) (Family, error) {
	f := Family(s)
	if slices.Contains(Families(), f) {
		return f, nil
	}
	return "", invalidf("unknown address family %s", quoteInput(s))
}

// NetworksOf returns the supported networks of family f in API order; all of
// them share the addresses derived from the family's xPub.
func NetworksOf(f Family) []Network {
	var out []Network
	for i := range networkTable {
		if networkTable[i].info.Family == f {
			out = append(out, networkTable[i].info.Network)
		}
	}
	return out
}

// The Solana token programs (solana-program/token, token-2022).
const (
	SolanaTokenProgram     = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	SolanaToken2022Program = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
)

// TokenProgram returns the token program of token t's mint on a Solana
// network n, "" elsewhere and for a pair that is not served.
func TokenProgram(n Network, t Token) string {
	if row, ok := networkIndex[n]; ok {
		if tr, ok := row.token(t); ok {
			return tr.program
		}
	}
	return ""
}
