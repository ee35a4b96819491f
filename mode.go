package paywatch

import "slices"

// AddressMode is a project's way of assigning deposit addresses.
type AddressMode string

// The address modes.
const (
	// ModePerPayment derives a new address from the xPub for every payment.
	ModePerPayment AddressMode = "per_payment"
	// ModePerUser derives one address per external_ref, network and token.
	ModePerUser AddressMode = "per_user"
	// ModeDedicated assigns each external_ref a registered static address.
	ModeDedicated AddressMode = "dedicated"
	// ModePool shares registered static addresses between payments.
	ModePool AddressMode = "pool"
)

// DefaultAddressMode is the mode of a project that never chose one.
const DefaultAddressMode = ModePerPayment

var allAddressModes = []AddressMode{ModePerPayment, ModePerUser, ModeDedicated, ModePool}

// AddressModes returns the four modes; the caller owns the slice.
func AddressModes() []AddressMode {
	return slices.Clone(allAddressModes)
}

// ParseAddressMode validates an address mode name.
func ParseAddressMode(s string) (AddressMode, error) {
	if slices.Contains(allAddressModes, AddressMode(s)) {
		return AddressMode(s), nil
	}
	return "", invalidf("unknown address mode %s", quoteInput(s))
}

// UsesXPub reports whether the mode derives addresses from an xPub
// (per_payment, per_user); the static modes need registered addresses
// instead.
func (m AddressMode) UsesXPub() bool {
	return m == ModePerPayment || m == ModePerUser
}

// PoolMatching is how a pool-mode project tells which payment a transfer
// to a shared address belongs to.
type PoolMatching string

// The pool matching methods.
const (
	// MatchMicroAmount matches on the exact amount, made unique by an offset.
	MatchMicroAmount PoolMatching = "micro_amount"
	// MatchTxID matches on a transaction hash the client submits.
	MatchTxID PoolMatching = "txid"
)

// ParsePoolMatching validates a pool matching name.
func ParsePoolMatching(s string) (PoolMatching, error) {
	switch m := PoolMatching(s); m {
	case MatchMicroAmount, MatchTxID:
		return m, nil
	}
	return "", invalidf("unknown pool matching %s", quoteInput(s))
}
