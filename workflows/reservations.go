package workflows

import "slices"

// reservations are what update handlers awaiting an activity are about to
// decide: the payment's network (select-network) and hashes being verified
// (submit-tx-hash).
type reservations struct {
	network bool
	hashes  []string
}

// reserveNetwork reserves the network for a select-network handler; the
// returned release ends the reservation and wakes the main loop.
func (p *payment) reserveNetwork() (release func()) {
	p.held.network = true
	return func() {
		p.held.network = false
		p.wake = true
	}
}

// reserveHash reserves hash h for a submit-tx-hash handler; the returned
// release ends the reservation and wakes the main loop.
func (p *payment) reserveHash(h string) (release func()) {
	p.held.hashes = append(p.held.hashes, h)
	return func() {
		p.held.hashes = slices.DeleteFunc(p.held.hashes, func(v string) bool { return v == h })
		p.wake = true
	}
}

// deadlineHeld reports whether the deadline must wait: a network is being
// assigned, and expiring the payment meanwhile would strand its address.
func (p *payment) deadlineHeld() bool { return p.held.network }
