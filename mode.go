package paywatch

import (
	"fmt"
	"slices"
	"strings"
)

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

// Policy is what a payment's address mode (and, in pool mode, its pool
// matching) decides about the transfers it takes: the one table of these
// rules, which the workflow, the scanners' queries, the store and the
// pages all read.
type Policy struct {
	// LateFunds: full funds up to LateWindow after expiry still count
	// (per_payment, pool + txid), so the scanners keep watching.
	LateFunds bool
	// TxIDOnly: only transfers whose hash the client submitted, and that
	// were verified and claimed for the payment, count (pool + txid).
	TxIDOnly bool
	// ExactMatch: the amount carries a micro offset, and only a single
	// transfer within the match window of it is the payment's (pool +
	// micro_amount).
	ExactMatch bool
	// OneInProgress: a customer (external_ref) has at most one payment in
	// progress per network and token, since it reuses their address
	// (per_user, dedicated).
	OneInProgress bool
}

// PolicyOf returns the policy of mode m with pool matching pm (read in
// pool mode only; any pool matching other than txid is micro_amount).
//
//	mode                  late funds  txid only  exact match  one in progress
//	per_payment           yes         no         no           no
//	per_user, dedicated   no          no         no           yes
//	pool + micro_amount   no          no         yes          no
//	pool + txid           yes         yes        no           no
func PolicyOf(m AddressMode, pm PoolMatching) Policy {
	switch {
	case m == ModePerPayment:
		return Policy{LateFunds: true}
	case m == ModePerUser, m == ModeDedicated:
		return Policy{OneInProgress: true}
	case m == ModePool && pm == MatchTxID:
		return Policy{LateFunds: true, TxIDOnly: true}
	case m == ModePool:
		return Policy{ExactMatch: true}
	}
	return Policy{}
}

// CreationRefusal is the verdict of the rules of creating a payment that
// need only its project's settings: the amount is at least the project
// minimum (or the global 0.10), has no more decimals than
// micro_amount_decimals in pool + micro_amount, and a pre-assigned address
// comes only in dedicated mode with a network. The store applies it in the
// transaction that reads the project, before the rules that need rows.
func CreationRefusal(m AddressMode, pm PoolMatching, projectMin *Amount, microDecimals int, amount Amount, network Network, address string) error {
	if min := DustMinimum(projectMin); amount.Cmp(min) < 0 {
		return Errorf(EINVALID, MsgProjectMinimumFormat, min.String())
	}
	if PolicyOf(m, pm).ExactMatch {
		if err := ValidateMicroPrecision(amount, microDecimals); err != nil {
			return err
		}
	}
	if address != "" && (m != ModeDedicated || network == "") {
		return Errorf(EINVALID, "%s", MsgInvalidRequestBody)
	}
	return nil
}

// PolicySQL is a rule of the policy table as an SQL condition on the
// columns address_mode and pool_matching of the table alias t, for queries
// that must select what the workflow would, for example
// PolicySQL("p", func(p Policy) bool { return p.LateFunds }).
func PolicySQL(t string, rule func(Policy) bool) string {
	or := []string{"false"}
	for _, m := range allAddressModes {
		if m == ModePool {
			for _, pm := range []PoolMatching{MatchMicroAmount, MatchTxID} {
				if rule(PolicyOf(m, pm)) {
					or = append(or, fmt.Sprintf("(%s.address_mode = '%s' AND %s.pool_matching = '%s')", t, m, t, pm))
				}
			}
			continue
		}
		if rule(PolicyOf(m, "")) {
			or = append(or, fmt.Sprintf("%s.address_mode = '%s'", t, m))
		}
	}
	return "(" + strings.Join(or, " OR ") + ")"
}
