package store

import (
	"context"
	"fmt"

	"github.com/paywatch/paywatch"
)

// OwnedAddresses returns those of addresses (normalised) that a project
// owns or has owned on network n's address family: derived from a wallet's
// xPub (the current one or one it replaced), or registered as static
// addresses (removed ones too). The scanners record every transfer to them,
// so that money no payment takes is still accounted for (ProjectTransfers).
// One query on address_owners' primary key.
func (s *Store) OwnedAddresses(ctx context.Context, n paywatch.Network, addresses []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(addresses) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT o.address FROM address_owners o WHERE o.family = $1 AND o.address = ANY($2::text[])`,
		string(n.Family()), addresses)
	if err != nil {
		return nil, fmt.Errorf("owned addresses on %s: %w", n, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("owned addresses on %s: %w", n, err)
		}
		out[a] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("owned addresses on %s: %w", n, err)
	}
	return out, nil
}
