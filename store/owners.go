package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// A deposit address has one owner wallet (migration 00010): the scanners
// match transfers by network and address only, so an address in two
// projects would make one transfer pay in both. Registrations and
// derivations claim their addresses in address_owners, whose primary key
// (family, address) decides every race; nothing here reads first and
// inserts later.

// derivedAddress is a derived address to claim and record; externalRef,
// network and token are set for per_user addresses only.
type derivedAddress struct {
	walletID    int64
	family      paywatch.Family
	index       int64
	address     string
	externalRef *string
	network     *string
	token       *string
	decimals    int
}

// claimDerivedAddress records d's wallet as the owner of the address it is
// deriving and, in the same statement, records the derived address; it
// returns the derived address's id, or false when the address already has
// an owner. Any owner makes the index unusable: another wallet's address
// would be shared across projects, and the wallet's own static address may
// still carry pool or dedicated payments, whose late transfers must not pay
// a per_payment or per_user payment. A concurrent claim that is not yet
// committed makes the insert wait for its outcome. A derived address
// recorded concurrently under the same index gives errRetry.
func claimDerivedAddress(ctx context.Context, tx pgx.Tx, d derivedAddress) (int64, bool, error) {
	var id int64
	err := tx.QueryRow(ctx, `
		WITH claim AS (
			INSERT INTO address_owners (family, address, wallet_id) VALUES ($2, $4, $1)
			ON CONFLICT (family, address) DO NOTHING
			RETURNING 1
		)
		INSERT INTO derived_addresses (wallet_id, family, derivation_index, address, external_ref, network, token, decimals)
		SELECT $1::bigint, $2::text, $3::bigint, $4::text, $5::text, $6::text, $7::text, $8::smallint FROM claim
		RETURNING id`,
		d.walletID, d.family, d.index, d.address, d.externalRef, d.network, d.token, d.decimals).Scan(&id)
	switch {
	case noRows(err):
		return 0, false, nil
	case uniqueViolation(err, ""):
		return 0, false, errRetry
	case err != nil:
		return 0, false, fmt.Errorf("claim and record derived address: %w", err)
	}
	return id, true, nil
}

// claimStaticAddress records wallet walletID as the owner of a static
// address it registers on network n, and returns the error to answer when
// another wallet owns it. The wallet's own addresses pass: the same EVM
// address on several networks, and an address the wallet's own xPub
// derived (one project's payments cannot credit another's).
func claimStaticAddress(ctx context.Context, tx pgx.Tx, walletID int64, n paywatch.Network, address string) error {
	f := n.Family()
	tag, err := tx.Exec(ctx, `
		INSERT INTO address_owners (family, address, wallet_id) VALUES ($1, $2, $3)
		ON CONFLICT (family, address) DO NOTHING`, f, address, walletID)
	if err != nil {
		return fmt.Errorf("claim static address: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	// The conflicting row is committed (the insert waited for it) or this
	// transaction's own, so a new statement sees it; owners are never
	// deleted.
	var owner int64
	var static bool
	err = tx.QueryRow(ctx, `
		SELECT o.wallet_id, EXISTS (SELECT 1 FROM static_addresses s WHERE s.wallet_id = o.wallet_id AND s.address = o.address)
		FROM address_owners o WHERE o.family = $1 AND o.address = $2`, f, address).Scan(&owner, &static)
	if err != nil {
		return fmt.Errorf("load address owner: %w", err)
	}
	switch {
	case owner == walletID:
		return nil
	case static:
		return addressInUse(n, address)
	default:
		return addressDerived(n, address)
	}
}

// addressDerived is the 409 of a static address that another project's
// xPub has derived as a deposit address.
func addressDerived(n paywatch.Network, a string) error {
	return conflict(fmt.Sprintf("addresses.%s: %s is already a deposit address derived by another project's xPub", n, a))
}

// UnusedRun returns, per address family, the longest run of consecutive
// derivation indices, from 1 to the highest index the wallet's derivation
// has reached, at which the wallet's current xPub has received nothing.
// Wallet software finds funds by checking addresses in order and stops
// after a gap of unused ones (BIP44 suggests 20), so funds past a longer
// run stay invisible to it until its gap limit is raised. Indices count
// whether paywatch gave them to a payment or skipped them (owned
// elsewhere), and indices taken before the xPub was replaced (its counter
// continues) count as unused for the new one. The highest index reached
// is the highest derived one, or the counter's last unless that one is
// spare (returnIndex): the next derivation takes a spare first. Funded means a confirmed
// transfer was counted for a payment on the address (received > 0). Every
// family is present, 0 when none is derived.
func (s *Store) UnusedRun(ctx context.Context, w *Wallet) (map[paywatch.Family]int, error) {
	out := map[paywatch.Family]int{}
	for _, f := range paywatch.DerivedFamilies() {
		out[f] = 0
		var last int64
		if err := s.pool.QueryRow(ctx, `
			SELECT GREATEST(
			    COALESCE((SELECT c.next_index - 1 FROM wallet_counters c WHERE c.wallet_id = $1 AND c.family = $2
			              AND NOT EXISTS (SELECT 1 FROM derivation_spare_indexes s
			                              WHERE s.wallet_id = $1 AND s.family = $2 AND s.derivation_index = c.next_index - 1)), 0),
			    COALESCE((SELECT max(derivation_index) FROM derived_addresses WHERE wallet_id = $1 AND family = $2), 0))`,
			w.ID, f).Scan(&last); err != nil {
			return nil, fmt.Errorf("read derivation counter: %w", err)
		}
		if last <= 0 || !w.HasXPub(f) {
			continue
		}
		rows, err := s.pool.Query(ctx, `
			SELECT derivation_index, address FROM derived_addresses
			WHERE wallet_id = $1 AND family = $2 AND received > 0 ORDER BY derivation_index`, w.ID, f)
		if err != nil {
			return nil, fmt.Errorf("list funded derived addresses: %w", err)
		}
		type derived struct {
			index int64
			addr  string
		}
		funded, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (derived, error) {
			var d derived
			return d, r.Scan(&d.index, &d.addr)
		})
		if err != nil {
			return nil, fmt.Errorf("list funded derived addresses: %w", err)
		}
		// Only a funded address derived by the current xPub counts as used
		// for it: rows of a replaced xPub are someone else's addresses at
		// those indices (and a switch back to an earlier xPub makes its
		// rows current again). Each funded row is derived once to tell.
		x, err := parseXPub(w.XPubs[f])
		if err != nil {
			return nil, fmt.Errorf("stored xpub of wallet %d: %w", w.ID, err)
		}
		run, prev := 0, int64(0) // prev: the last funded index
		for _, d := range funded {
			if a, err := x.Address(f, uint32(d.index)); err != nil || a != d.addr {
				continue
			}
			run = max(run, int(d.index-prev-1))
			prev = d.index
		}
		out[f] = max(run, int(last-prev))
	}
	return out, nil
}
