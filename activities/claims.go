package activities

import (
	"context"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

// ownTransfers keeps those of ts (transfers to one payment's address) that
// count for that payment: each is claimed by the rule the scanners use
// (store.ClaimTransfers), so a transfer a final check finds on a shared pool
// address goes to the one payment it belongs to, whoever looks first.
func (a *Activities) ownTransfers(ctx context.Context, n paywatch.Network, paymentID string, ts []chains.Transfer) ([]chains.Transfer, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	stored := make([]paywatch.Transfer, len(ts))
	for i, t := range ts {
		stored[i] = t
	}
	owners, err := a.store.ClaimTransfers(ctx, n, stored)
	if err != nil {
		return nil, err
	}
	var out []chains.Transfer
	for i, t := range ts {
		if owners[stored[i].Key()] == paymentID {
			out = append(out, t)
		}
	}
	return out, nil
}
