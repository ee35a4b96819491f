package paywatch

import "math/big"

// MicroDistance returns |tx − expected| and whether a single transfer of tx
// matches a pool + micro_amount payment of expected (MicroMatch). Distances
// of one token compare exactly with Amount.Cmp.
func MicroDistance(tx, expected Amount) (Amount, bool) {
	x, y, d := align(tx, expected)
	diff := new(big.Int).Sub(x, y)
	diff.Abs(diff)
	return NewAmount(diff, d), MicroMatch(tx, expected)
}

// ClassifyMicro is the amount rule of a pool + micro_amount payment: the
// customer was asked for an exact amount, and a transfer within the match
// window (|paid − expected| < 0.0001, MicroMatch) pays it, even a hair
// below; otherwise the ordinary rule (Classify) applies to the adjusted
// amount, as interface.md says for overpaid.
func ClassifyMicro(paid, expected Amount) Status {
	if MicroMatch(paid, expected) {
		return StatusPaid
	}
	return Classify(paid, expected)
}

// ClaimCandidate is an open payment that a transfer to its address could
// count for, as PickClaimant weighs it.
type ClaimCandidate struct {
	// PaymentID identifies the payment.
	PaymentID string
	// Expected is the payment's amount (with its micro offset).
	Expected Amount
	// Micro marks pool + micro_amount: only a transfer within the match
	// window of Expected is its.
	Micro bool
}

// PickClaimant returns the index of the one payment among candidates that a
// transfer of amount counts for, or -1 if none. Candidates are the open
// payments watching the transfer's address that accept its token, block and
// hash, oldest first. A transfer counts for one payment at most:
//
//   - a payment that is not micro_amount owns its address (or, in pool +
//     txid mode, claimed the transaction), so it wins;
//   - otherwise the micro_amount payment whose amount is nearest the
//     transfer's, among those within the match window;
//   - on a tie, the oldest.
func PickClaimant(amount Amount, candidates []ClaimCandidate) int {
	best := -1
	var bestDist Amount
	for i, c := range candidates {
		if !c.Micro {
			return i
		}
		d, ok := MicroDistance(amount, c.Expected)
		if ok && (best < 0 || d.Cmp(bestDist) < 0) {
			best, bestDist = i, d
		}
	}
	return best
}
