package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// StaticAddress is an address a merchant registered (dedicated and pool
// modes), as the dashboard lists it.
type StaticAddress struct {
	Network paywatch.Network
	Address string
	// ExternalRef is the customer a dedicated address belongs to, for good;
	// "" while it is free.
	ExternalRef string
}

// StaticAddresses lists the static addresses of a project's wallet, by
// network and then in the order they were added.
func (s *Store) StaticAddresses(ctx context.Context, projectID int64) ([]StaticAddress, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT sa.network, sa.address, COALESCE(sa.external_ref, '')
		FROM static_addresses sa JOIN wallets w ON w.id = sa.wallet_id
		WHERE w.project_id = $1 AND sa.removed_at IS NULL
		ORDER BY sa.network, sa.id`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list static addresses: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StaticAddress, error) {
		var a StaticAddress
		err := r.Scan(&a.Network, &a.Address, &a.ExternalRef)
		return a, err
	})
}

// RemoveStaticAddress takes a static address out of a project's wallet, so
// no new payment gets it. It is refused while a payment still needs the
// address watched, and for a dedicated address assigned to a customer,
// whose payments must always go to the same address. The project row is
// locked as for a wallet update, so a payment being assigned the address
// at the same moment is either seen here or waits and no longer finds it.
// The row stays, marked removed, because past payments refer to it; the
// wallet stays the address's owner (address_owners), and adding the
// address again clears the mark.
func (s *Store) RemoveStaticAddress(ctx context.Context, slug string, network paywatch.Network, address string) error {
	_, err := s.RemoveStaticAddressAlerted(ctx, slug, network, address, nil)
	return err
}

// RemoveStaticAddressAlerted is RemoveStaticAddress that also queues the
// e-mail alert makes of the project and the address as stored (nil: none),
// in the transaction that removes the address, so the wallet never loses
// an address without its alert.
func (s *Store) RemoveStaticAddressAlerted(ctx context.Context, slug string, network paywatch.Network, address string,
	alert func(p *Project, address string) *Mail) (*Mail, error) {
	norm, err := paywatch.NormalizeNetworkAddress(network, address)
	if err != nil {
		return nil, notFound(paywatch.MsgStaticAddressNotFound)
	}
	var queued *Mail
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		prj, err := scanProject(tx.QueryRow(ctx, projectSelect+` WHERE p.slug = $1 FOR UPDATE OF p`, slug))
		if noRows(err) {
			return notFound(paywatch.MsgProjectNotFound)
		}
		if err != nil {
			return err
		}
		var id int64
		var ref *string
		err = tx.QueryRow(ctx, `
			SELECT sa.id, sa.external_ref FROM static_addresses sa JOIN wallets w ON w.id = sa.wallet_id
			WHERE w.project_id = $1 AND sa.network = $2 AND sa.address = $3 AND sa.removed_at IS NULL FOR UPDATE OF sa`,
			prj.ID, network, norm).Scan(&id, &ref)
		if noRows(err) {
			return notFound(paywatch.MsgStaticAddressNotFound)
		}
		if err != nil {
			return fmt.Errorf("load static address: %w", err)
		}
		if ref != nil {
			return conflict(paywatch.MsgStaticAddressAssigned)
		}
		var open bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM payments WHERE project_id = $1 AND network = $2 AND address = $3
			    AND (status IN ('pending', 'confirming', 'partial')
			         OR (`+lateOpenSQL("payments", "$4")+` AND `+paywatch.PolicySQL("payments", func(p paywatch.Policy) bool { return p.LateFunds })+`)))`,
			prj.ID, network, norm, s.lateWindowStart()).Scan(&open); err != nil {
			return fmt.Errorf("check open payments: %w", err)
		}
		if open {
			return conflict(paywatch.MsgStaticAddressBusy)
		}
		if _, err := tx.Exec(ctx, `UPDATE static_addresses SET removed_at = now() WHERE id = $1`, id); err != nil {
			return fmt.Errorf("remove static address: %w", err)
		}
		if alert != nil {
			if m := alert(prj, norm); m != nil {
				q, err := s.queueMail(ctx, tx, *m)
				if err != nil {
					return err
				}
				queued = &q
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return queued, nil
}
