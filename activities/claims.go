package activities

import (
	"context"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

// ownTransfers keeps those of ts (transfers to one payment's address, under
// their recorded keys) that count for that payment: each is claimed by the
// rule the scanners use (store.ClaimTransfers), so a transfer a final check
// finds on a shared pool address goes to the one payment it belongs to,
// whoever looks first.
func (a *Activities) ownTransfers(ctx context.Context, n paywatch.Network, paymentID string, ts []chains.Transfer) ([]chains.Transfer, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	claimed, err := a.store.ClaimTransfers(ctx, n, ts)
	if err != nil {
		return nil, err
	}
	var out []chains.Transfer
	for _, c := range claimed {
		if c.PaymentID == paymentID {
			out = append(out, c.Transfer)
		}
	}
	return out, nil
}
