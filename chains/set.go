package chains

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/paywatch/paywatch"
)

// ErrNotOffered means a Set has no client for the network: it has neither
// an RPC URL nor a devnet chain in this process.
var ErrNotOffered = errors.New("network not offered")

// Set is the chain clients of the networks a process offers, one per
// network. The payment activities and the scanners take their clients from
// it (it implements activities.Chains). It is safe for concurrent use; its
// contents never change after it is built.
type Set struct {
	clients map[paywatch.Network]Client
}

// NewSet returns a Set over already dialled clients, at most one per
// network. The Set owns them: Close closes them.
func NewSet(clients ...Client) (*Set, error) {
	s := &Set{clients: make(map[paywatch.Network]Client, len(clients))}
	for _, c := range clients {
		n := c.Network()
		if _, dup := s.clients[n]; dup {
			return nil, fmt.Errorf("chains: two clients for network %s", n)
		}
		s.clients[n] = c
	}
	return s, nil
}

// DialSet dials a client per config and returns them as a Set. Dialling
// does no I/O (see Dial), so an endpoint that is down at start keeps neither
// the process nor the other networks from starting. On error every client
// dialled so far is closed.
func DialSet(ctx context.Context, cfgs ...Config) (*Set, error) {
	var clients []Client
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	for _, cfg := range cfgs {
		c, err := Dial(ctx, cfg)
		if err != nil {
			closeAll()
			return nil, err
		}
		clients = append(clients, c)
	}
	s, err := NewSet(clients...)
	if err != nil {
		closeAll()
		return nil, err
	}
	return s, nil
}

// Client returns the client of network n; an error wrapping ErrNotOffered
// if the Set has none.
func (s *Set) Client(n paywatch.Network) (Client, error) {
	if s != nil {
		if c, ok := s.clients[n]; ok {
			return c, nil
		}
	}
	return nil, fmt.Errorf("chains: %s: %w", n, ErrNotOffered)
}

// Networks returns the networks the Set offers, in API order.
func (s *Set) Networks() []paywatch.Network {
	var out []paywatch.Network
	if s == nil {
		return out
	}
	for _, info := range paywatch.Networks() {
		if _, ok := s.clients[info.Network]; ok {
			out = append(out, info.Network)
		}
	}
	return out
}

// Offers reports whether the Set has a client for n.
func (s *Set) Offers(n paywatch.Network) bool {
	return s != nil && s.clients[n] != nil
}

// Close closes every client.
func (s *Set) Close() {
	if s == nil {
		return
	}
	for _, n := range slices.Sorted(maps.Keys(s.clients)) {
		s.clients[n].Close()
	}
}
