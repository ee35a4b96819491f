package paywatch

import (
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Status is the state of a payment as the API reports it.
type Status string

// The payment statuses, in the order of the specification.
const (
	StatusPending    Status = "pending"
	StatusConfirming Status = "confirming"
	StatusPartial    Status = "partial"
	StatusPaid       Status = "paid"
	StatusOverpaid   Status = "overpaid"
	StatusExpired    Status = "expired"
	StatusCancelled  Status = "cancelled"
)

var allStatuses = []Status{
	StatusPending, StatusConfirming, StatusPartial, StatusPaid,
	StatusOverpaid, StatusExpired, StatusCancelled,
}

// Statuses returns the seven statuses in specification order; the caller
// owns the slice.
func Statuses() []Status {
	return slices.Clone(allStatuses)
}

// ParseStatus validates a status name, as given in the list filter of
// GET /v1/payments. Names are exact and lowercase.
func ParseStatus(s string) (Status, error) {
	if slices.Contains(allStatuses, Status(s)) {
		return Status(s), nil
	}
	return "", invalidf("unknown status %s", quoteInput(s))
}

// Valid reports whether s is one of the seven statuses.
func (s Status) Valid() bool {
	return slices.Contains(allStatuses, s)
}

// Final reports whether s ends monitoring of the payment's amount: paid,
// overpaid, expired and cancelled. (An expired payment may still turn paid
// through the late-payment check, which is a separate, explicit path.)
func (s Status) Final() bool {
	switch s {
	case StatusPaid, StatusOverpaid, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Timing and tolerance rules of the specification, in one place so the
// workflows, the API and the hosted page cannot disagree.
const (
	// OverpaidTolerancePercent is how far above the expected amount a
	// payment may go and still count as paid rather than overpaid.
	OverpaidTolerancePercent = 1
	// ConfirmingGrace is how long a confirming payment may outlive its
	// window before it is checked on-chain once more and expired.
	ConfirmingGrace = 30 * time.Minute
	// LateWindow is how long after expiry full late funds still turn an
	// expired payment into paid (per_payment and pool + txid).
	LateWindow = 24 * time.Hour
	// LateHold is how long after expires_at an expired payment whose
	// workflow has not closed its late window (the payments row's
	// late_closed, the workflow's LateClosed) is still taken to count a
	// transfer: the late window, the confirming grace of a transfer still
	// confirming at its end, and a day of patience with an on-chain check
	// that gets no answer (the workflow's outagePatience, counted from the
	// first failure, which may come a grace after the end), with an hour to
	// spare. Until the workflow closes the window, no transfer to the
	// address is told unmatched, and its reorgs are still signalled; past
	// LateHold the clock decides, so that a workflow that is gone
	// (terminated by an operator) holds no address forever.
	LateHold = 2*LateWindow + 2*ConfirmingGrace + time.Hour
	// PendingShownExpiredAfter is how long after expires_at a pending
	// payment keeps being shown as pending, to absorb clock skew and
	// transfers in flight at the deadline.
	PendingShownExpiredAfter = 3 * time.Minute
	// MicroOffsetQuarantine is how long a micro offset freed by an expired
	// or cancelled payment stays unused, so a late transfer for the old
	// payment cannot match a new one.
	MicroOffsetQuarantine = 6 * time.Hour
)

// Micro-amount precision limits: micro_amount_decimals is 1..4, default 3.
const (
	MinMicroDecimals     = 1
	MaxMicroDecimals     = 4
	DefaultMicroDecimals = 3
)

// FirstPaymentIndex is the first HD derivation index used for payment
// addresses; index 0 is reserved for the merchant's gas and fees.
const FirstPaymentIndex = 1

// Classify applies the amount rule to confirmed funds: less than expected is
// partial, more than expected × 1.01 is overpaid, anything in between
// (inclusive) is paid. It uses integer arithmetic at the larger of the two
// scales, so 18-decimal BSC amounts are compared exactly.
func Classify(paid, expected Amount) Status {
	p, e, _ := align(paid, expected)
	if p.Cmp(e) < 0 {
		return StatusPartial
	}
	// paid × 100 > expected × (100 + tolerance)
	lhs := new(big.Int).Mul(p, big.NewInt(100))
	rhs := new(big.Int).Mul(e, big.NewInt(100+OverpaidTolerancePercent))
	if lhs.Cmp(rhs) > 0 {
		return StatusOverpaid
	}
	return StatusPaid
}

// microMatchExponent is the power of ten of the micro-amount match window:
// a transfer matches when |tx − expected| < 10^-4.
const microMatchExponent = 4

// MicroMatch reports whether a single transfer of tx matches a pool +
// micro_amount payment of expected: |tx − expected| < 0.0001, strictly, in
// exact arithmetic. A difference of exactly 0.0001 does not match, because
// that is the distance between neighbouring offsets at 4 decimals.
func MicroMatch(tx, expected Amount) bool {
	x, y, d := align(tx, expected)
	diff := new(big.Int).Sub(x, y)
	diff.Abs(diff)
	// |diff| / 10^d < 1 / 10^4  ⇔  |diff| × 10^4 < 10^d
	diff.Mul(diff, pow10(microMatchExponent))
	return diff.Cmp(pow10(d)) < 0
}

// GlobalDustMinimum is the dust threshold of projects without a minAmount:
// transfers below 0.10 token units are ignored.
var GlobalDustMinimum = MustParseAmount("0.10", 2)

// DustMinimum returns the active dust threshold: the project's minAmount when
// set (projectMin non-nil), otherwise GlobalDustMinimum.
func DustMinimum(projectMin *Amount) Amount {
	if projectMin != nil {
		return *projectMin
	}
	return GlobalDustMinimum
}

// IsDust reports whether a transfer of a is ignored silently: it is below
// the active minimum. A zero or negative amount is always dust, even for a
// project whose minimum is zero, because zero-value transfers are the
// address-poisoning spam every watched address receives.
func IsDust(a Amount, projectMin *Amount) bool {
	return a.Sign() <= 0 || a.Cmp(DustMinimum(projectMin)) < 0
}

// MicroOffsetCount returns how many distinct offsets micro_amount_decimals d
// allows (10^d − 1: 9, 99, 999, 9999), or 0 if d is outside 1..4.
func MicroOffsetCount(microDecimals int) int {
	if microDecimals < MinMicroDecimals || microDecimals > MaxMicroDecimals {
		return 0
	}
	return int(pow10(microDecimals).Int64()) - 1
}

// WithMicroOffset returns base + offset × 10^-microDecimals, the amount a
// pool + micro_amount customer must send. Offsets run from 1 to
// MicroOffsetCount(microDecimals); 0 is never used so that the requested
// amount itself stays unclaimed. The result has the larger of base's decimals
// and microDecimals. It panics on an offset or precision out of range, which
// is a bug in the allocator, not bad input.
func WithMicroOffset(base Amount, offset int, microDecimals int) Amount {
	count := MicroOffsetCount(microDecimals)
	if count == 0 {
		panic(fmt.Sprintf("paywatch: micro_amount_decimals %d outside %d..%d", microDecimals, MinMicroDecimals, MaxMicroDecimals))
	}
	if offset < 1 || offset > count {
		panic(fmt.Sprintf("paywatch: micro offset %d outside 1..%d", offset, count))
	}
	return base.Add(NewAmount(big.NewInt(int64(offset)), microDecimals))
}

// ValidateMicroPrecision checks a requested base amount against the
// project's micro_amount_decimals, with the exact message the API returns.
func ValidateMicroPrecision(a Amount, microDecimals int) error {
	if a.FractionDigits() > microDecimals {
		return invalidf("Amount has more decimal places than this project's micro-amount precision allows")
	}
	return nil
}

// ShownStatus returns the status GET /v1/payments/:id and the hosted page
// show: a pending payment reads as expired once now ≥ expiresAt + 3 minutes
// (the workflow may not have expired it yet); any other status is shown as
// is.
func ShownStatus(s Status, expiresAt, now time.Time) Status {
	if s == StatusPending && !now.Before(expiresAt.Add(PendingShownExpiredAfter)) {
		return StatusExpired
	}
	return s
}

// SelectNetworkRefusal is the verdict of interface.md's select-network
// table on a payment in this state: nil when a network may be selected
// now, else the refusal, checked in this order: a network is already
// selected (409), the window has ended or the payment expired (410), the
// payment is not pending (409). The workflow's update validator, the store
// that assigns the address and the API answering for an ended workflow
// all give this one verdict; the pair's validity and whether the merchant
// offers it are checked apart.
func SelectNetworkRefusal(hasNetwork bool, st Status, expiresAt, now time.Time) error {
	switch {
	case hasNetwork:
		return Errorf(ECONFLICT, "%s", MsgNetworkSelected)
	case !now.Before(expiresAt) || st == StatusExpired:
		return Errorf(EGONE, "%s", MsgPaymentExpired)
	case st != StatusPending:
		return Errorf(ECONFLICT, "%s", MsgNotPending)
	}
	return nil
}
