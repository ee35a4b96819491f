package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// refuseModeSwitch refuses a change of address_mode or pool_matching that
// would let payments of two modes share addresses: while any payment is
// pending, and while any payment still takes transfers on an address the
// new mode would give out (issue 24).
func (s *Store) refuseModeSwitch(ctx context.Context, tx pgx.Tx, id int64, current *Project, ps ProjectSettings) error {
	changes := current != nil &&
		((ps.AddressMode != nil && *ps.AddressMode != current.AddressMode) ||
			(ps.PoolMatching != nil && *ps.PoolMatching != current.PoolMatching))
	if !changes {
		return nil
	}
	var pending bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payments WHERE project_id = $1 AND status = 'pending')`, id).Scan(&pending); err != nil {
		return err
	}
	if pending {
		return conflict(paywatch.MsgModePending)
	}
	// A payment still watched (confirming, partial, or expired in its late
	// window) keeps taking transfers on its address; a payment of the new
	// mode on the same address would share them (issue 24: a micro_amount
	// payment's transfer confirmed again by hash on an expired txid
	// payment). Static modes hand out the same registered addresses in
	// every mode, and per_user reuses a customer's address that may have
	// been registered as static since; only a switch between the two xPub
	// modes, which derive every new address at a fresh index (derive) and
	// reuse only per_user addresses, shares none.
	mode := current.AddressMode
	if ps.AddressMode != nil {
		mode = *ps.AddressMode
	}
	if current.AddressMode.UsesXPub() && mode.UsesXPub() {
		return nil
	}
	var watched bool
	if err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM payments p WHERE p.project_id = $1 AND `+watchedOnAnyNetwork("$2")+`)`,
		id, s.lateWindowStart()).Scan(&watched); err != nil {
		return err
	}
	if watched {
		return conflict(paywatch.MsgModeAddressesWatched)
	}
	return nil
}
