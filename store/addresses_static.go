package store

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// dedicatedAddress returns the static address permanently assigned to the
// customer on the network, assigning the requested one or the next free one
// on first use.
func (s *Store) dedicatedAddress(ctx context.Context, tx pgx.Tx, w *Wallet, ref string, n paywatch.Network, requested string, now time.Time) (int64, string, error) {
	var id int64
	var address string
	var owner *string
	if requested != "" {
		norm, err := paywatch.NormalizeNetworkAddress(n, requested)
		if err != nil {
			return 0, "", invalid(paywatch.MsgAddressNotInWallet)
		}
		err = tx.QueryRow(ctx, `
			SELECT id, address, external_ref FROM static_addresses
			WHERE wallet_id = $1 AND network = $2 AND address = $3 AND removed_at IS NULL FOR UPDATE`, w.ID, n, norm).Scan(&id, &address, &owner)
		if noRows(err) {
			return 0, "", invalid(paywatch.MsgAddressNotInWallet)
		}
		if err != nil {
			return 0, "", err
		}
		if owner != nil {
			if *owner != ref {
				return 0, "", conflict(paywatch.MsgAddressOtherUser)
			}
			return id, address, nil
		}
		var has bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM static_addresses WHERE wallet_id = $1 AND network = $2 AND external_ref = $3)`,
			w.ID, n, ref).Scan(&has); err != nil {
			return 0, "", err
		}
		if has {
			return 0, "", conflict(paywatch.MsgCustomerHasAddress)
		}
	} else {
		err := tx.QueryRow(ctx, `
			SELECT id, address FROM static_addresses WHERE wallet_id = $1 AND network = $2 AND external_ref = $3`,
			w.ID, n, ref).Scan(&id, &address)
		if err == nil {
			return id, address, nil
		}
		if !noRows(err) {
			return 0, "", err
		}
		err = tx.QueryRow(ctx, `
			SELECT id, address FROM static_addresses
			WHERE wallet_id = $1 AND network = $2 AND external_ref IS NULL AND removed_at IS NULL
			ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`, w.ID, n).Scan(&id, &address)
		if noRows(err) {
			return 0, "", errNoAddresses
		}
		if err != nil {
			return 0, "", err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE static_addresses SET external_ref = $2, assigned_at = $3 WHERE id = $1`, id, ref, now)
	if uniqueViolation(err, "static_addresses_dedicated_idx") {
		// The same customer got an address concurrently (another token);
		// the next attempt finds it.
		return 0, "", errRetry
	}
	if err != nil {
		return 0, "", fmt.Errorf("assign dedicated address: %w", err)
	}
	return id, address, nil
}

// leastBusyAddress picks the pool address with the fewest payments in
// progress (pool + txid: matching is by hash, so sharing is unlimited).
func (s *Store) leastBusyAddress(ctx context.Context, tx pgx.Tx, w *Wallet, n paywatch.Network) (int64, string, error) {
	var id int64
	var address string
	err := tx.QueryRow(ctx, `
		SELECT s.id, s.address FROM static_addresses s
		WHERE s.wallet_id = $1 AND s.network = $2 AND s.removed_at IS NULL
		ORDER BY (SELECT count(*) FROM payments p
		          WHERE p.static_address_id = s.id AND p.status IN ('pending', 'confirming', 'partial')), s.id
		LIMIT 1`, w.ID, n).Scan(&id, &address)
	if noRows(err) {
		return 0, "", errNoAddresses
	}
	if err != nil {
		return 0, "", fmt.Errorf("pick pool address: %w", err)
	}
	return id, address, nil
}

// maxOffsetClaims bounds how many free offsets one creation tries before
// giving up; each failed claim means a concurrent payment took that exact
// amount in the meantime.
const maxOffsetClaims = 32

// microOffset claims a final amount base + offset × 10^-microDecimals on
// one of the pool's addresses that no payment holds, and that no expired or
// cancelled payment freed less than 6 hours ago. The claim is a row in
// micro_offsets whose primary key is (address, token, final amount), so two
// concurrent payments can never expect the same amount on the same address.
// Free offsets are tried in random order to keep concurrent claims apart.
func (s *Store) microOffset(ctx context.Context, tx pgx.Tx, w *Wallet, paymentID string, n paywatch.Network, t paywatch.Token, base paywatch.Amount, microDecimals int, now time.Time) (int64, string, int, paywatch.Amount, error) {
	decimals := base.Decimals()
	count := paywatch.MicroOffsetCount(microDecimals)
	step := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals-microDecimals)), nil)
	for range maxOffsetClaims {
		var id int64
		var address string
		var offset int
		err := tx.QueryRow(ctx, `
			SELECT s.id, s.address, o.n FROM static_addresses s
			CROSS JOIN generate_series(1, $3::int) AS o(n)
			WHERE s.wallet_id = $1 AND s.network = $2 AND s.removed_at IS NULL
			  AND NOT EXISTS (
			    SELECT 1 FROM micro_offsets m
			    WHERE m.static_address_id = s.id AND m.token = $4
			      AND m.amount = $5::numeric + o.n * $6::numeric
			      AND (m.reusable_at IS NULL OR m.reusable_at > $7))
			ORDER BY random() LIMIT 1`,
			w.ID, n, count, t, units(base), step.String(), now).Scan(&id, &address, &offset)
		if noRows(err) {
			return 0, "", 0, paywatch.Amount{}, paywatch.Errorf(paywatch.ERATELIMIT, "%s", paywatch.MsgCapacity)
		}
		if err != nil {
			return 0, "", 0, paywatch.Amount{}, fmt.Errorf("find free micro offset: %w", err)
		}
		final, err := paywatch.WithMicroOffset(base, offset, microDecimals).Rescale(decimals)
		if err != nil {
			return 0, "", 0, paywatch.Amount{}, err
		}
		var claimed string
		err = tx.QueryRow(ctx, `
			INSERT INTO micro_offsets (static_address_id, token, amount, payment_id) VALUES ($1, $2, $3::numeric, $4)
			ON CONFLICT (static_address_id, token, amount) DO UPDATE SET payment_id = EXCLUDED.payment_id, reusable_at = NULL
			WHERE micro_offsets.reusable_at IS NOT NULL AND micro_offsets.reusable_at <= $5
			RETURNING payment_id::text`, id, t, units(final), paymentID, now).Scan(&claimed)
		if noRows(err) {
			continue // taken concurrently; try another
		}
		if err != nil {
			return 0, "", 0, paywatch.Amount{}, fmt.Errorf("claim micro offset: %w", err)
		}
		return id, address, offset, final, nil
	}
	return 0, "", 0, paywatch.Amount{}, paywatch.Errorf(paywatch.ERATELIMIT, "%s", paywatch.MsgCapacity)
}
