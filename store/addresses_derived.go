package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// derive takes the next derivation index of (wallet, family) and records the
// derived address. The counter row is updated in place, so concurrent
// payments serialise on it and never share an index; index 0 stays
// reserved for gas. An index whose address already has an owner (see
// claimDerivedAddress) is skipped, so the sequence can have gaps.
// externalRef, network and token are set for per_user addresses only.
// reserved, when it is of this wallet and family, is tried first instead
// of the counter (reserveIndex).
func (s *Store) derive(ctx context.Context, tx pgx.Tx, w *Wallet, f paywatch.Family, externalRef *string, n paywatch.Network, t paywatch.Token, reserved *indexReservation) (int64, string, error) {
	x, err := parseXPub(w.XPubs[f])
	if err != nil {
		return 0, "", fmt.Errorf("stored xpub of wallet %d: %w", w.ID, err)
	}
	for {
		var index int64
		if reserved != nil && reserved.walletID == w.ID && reserved.family == f {
			reserved.used = true
			index, reserved = reserved.index, nil
		} else if spare, ok, err := takeSpareIndex(ctx, tx, w.ID, f); err != nil {
			return 0, "", err
		} else if ok {
			index = spare
		} else if err := tx.QueryRow(ctx, `
			INSERT INTO wallet_counters (wallet_id, family, next_index) VALUES ($1, $2, $3)
			ON CONFLICT (wallet_id, family) DO UPDATE SET next_index = wallet_counters.next_index + 1
			RETURNING next_index - 1`, w.ID, f, paywatch.FirstPaymentIndex+1).Scan(&index); err != nil {
			return 0, "", fmt.Errorf("take derivation index: %w", err)
		}
		if index >= 1<<31 {
			return 0, "", fmt.Errorf("wallet %d family %s: derivation indices exhausted", w.ID, f)
		}
		address, err := x.Address(f, uint32(index))
		if err != nil {
			continue // BIP32: an invalid child index is skipped
		}
		// An address that already has an owner (another project's, or this
		// wallet's static one) is skipped like an invalid index: a
		// transfer to it would pay two payments.
		var network, token *string
		if externalRef != nil {
			ns, ts := string(n), string(t)
			network, token = &ns, &ts
		}
		id, claimed, err := claimDerivedAddress(ctx, tx, derivedAddress{
			walletID: w.ID, family: f, index: index, address: address,
			externalRef: externalRef, network: network, token: token, decimals: paywatch.Decimals(n, t),
		})
		if err != nil {
			return 0, "", err
		}
		if !claimed {
			continue
		}
		return id, address, nil
	}
}

// perUserAddress returns the customer's current address for the network
// and token, deriving one on first use, or a fresh one when the cumulative
// confirmed amount received on the current one (kept by SavePaymentState)
// exceeds the project's rotation_threshold, or when the wallet's xPub was
// replaced since the current one was derived.
func (s *Store) perUserAddress(ctx context.Context, tx pgx.Tx, prj *Project, w *Wallet, ref string, n paywatch.Network, t paywatch.Token) (int64, string, error) {
	var id, index int64
	var address, received string
	var decimals int
	err := tx.QueryRow(ctx, `
		SELECT id, derivation_index, address, received::text, decimals FROM derived_addresses
		WHERE wallet_id = $1 AND external_ref = $2 AND network = $3 AND token = $4 AND active
		FOR UPDATE`, w.ID, ref, n, t).Scan(&id, &index, &address, &received, &decimals)
	switch {
	case noRows(err):
	case err != nil:
		return 0, "", fmt.Errorf("load per_user address: %w", err)
	default:
		got, err := amountOf(received, decimals)
		if err != nil {
			return 0, "", err
		}
		current, err := derivedByCurrentXPub(w, n.Family(), index, address)
		if err != nil {
			return 0, "", err
		}
		if current && (prj.RotationThreshold == nil || got.Cmp(*prj.RotationThreshold) <= 0) {
			return id, address, nil
		}
		if _, err := tx.Exec(ctx, `UPDATE derived_addresses SET active = false WHERE id = $1`, id); err != nil {
			return 0, "", fmt.Errorf("rotate per_user address: %w", err)
		}
	}
	return s.derive(ctx, tx, w, n.Family(), &ref, n, t, nil)
}

// derivedByCurrentXPub reports whether the wallet's current xPub of family
// f derives address at index: false once the xPub was replaced.
func derivedByCurrentXPub(w *Wallet, f paywatch.Family, index int64, address string) (bool, error) {
	x, err := parseXPub(w.XPubs[f])
	if err != nil {
		return false, fmt.Errorf("stored xpub of wallet %d: %w", w.ID, err)
	}
	a, err := x.Address(f, uint32(index))
	if err != nil {
		return false, nil
	}
	return a == address, nil
}

// indexReservation is a derivation index of a wallet and family that
// reserveIndex took for one creation.
type indexReservation struct {
	walletID int64
	family   paywatch.Family
	index    int64
	// used is set once derive took the index in the creation's current
	// attempt; an index left unused is returned (returnIndex).
	used bool
}

// takeSpareIndex takes the lowest spare index of wallet walletID and
// family f (returnIndex), if any. SKIP LOCKED: a spare that a concurrent
// derivation holds is its own, and a derivation never waits for another;
// a transaction that rolls back gives its spare back.
func takeSpareIndex(ctx context.Context, q querier, walletID int64, f paywatch.Family) (int64, bool, error) {
	var index int64
	err := q.QueryRow(ctx, `
		DELETE FROM derivation_spare_indexes d
		WHERE (d.wallet_id, d.family, d.derivation_index) = (
			SELECT s.wallet_id, s.family, s.derivation_index FROM derivation_spare_indexes s
			WHERE s.wallet_id = $1 AND s.family = $2
			ORDER BY s.derivation_index LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING d.derivation_index`, walletID, f).Scan(&index)
	switch {
	case noRows(err):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("take spare derivation index: %w", err)
	}
	return index, true, nil
}

// returnIndex gives back a reserved index that its creation did not use
// (refused, or the idempotent repeat of a concurrent creation): no address
// was derived at it, so it is spare, and the next derivation of the wallet
// takes it before a new one. Without this, each refused or repeated request
// would leave an unused index behind, and enough of them a run past the
// gap limit of the merchant's wallet software (issue 24). Best effort: a
// failure here leaves a gap, as a crash between the two would.
func (s *Store) returnIndex(ctx context.Context, r *indexReservation) {
	if r == nil || r.used {
		return
	}
	if _, err := s.pool.Exec(context.WithoutCancel(ctx), `
		INSERT INTO derivation_spare_indexes (wallet_id, family, derivation_index, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, r.walletID, r.family, r.index, s.clock()); err != nil {
		slog.Warn("returning an unused derivation index failed; it stays a gap",
			"walletId", r.walletID, "family", string(r.family), "index", r.index, "error", err)
	}
}

// xpubColumns name the wallets column of each family's xPub.
var xpubColumns = map[paywatch.Family]string{paywatch.FamilyEVM: "xpub_evm", paywatch.FamilyTron: "xpub_tron"}

// reserveIndex takes, in a statement of its own, the derivation index a
// per_payment creation with a network is about to need, so that the
// counter row, which every creation of the wallet updates, stays locked
// only while that statement commits instead of for the rest of the
// creation's transaction (issue 15: concurrent creations of one merchant
// queued on it). The transaction derives from the reserved index (derive);
// it takes its own from the counter as before when there is none (any other
// mode, an idempotent repeat, an error here) or when the wallet changed in
// between.
//
// A creation the project's settings refuse (an amount under the minimum, a
// network not offered) reserves nothing: the rules are applied to the
// project as read here first, as the transaction applies them again. One
// refused after the reservation anyway (settings changed meanwhile, a lost
// race with an identical creation) returns its index (returnIndex), and the
// reservation takes a returned index before a new one, so no request that
// makes no payment leaves an unused index behind (issue 24).
func (s *Store) reserveIndex(ctx context.Context, np NewPayment) *indexReservation {
	f := np.Network.Family()
	col, ok := xpubColumns[f]
	if np.Network == "" || np.Address != "" || !ok {
		return nil
	}
	if !s.Offered(np.Network) {
		return nil
	}
	prj, err := scanProject(s.pool.QueryRow(ctx, projectSelect+` WHERE p.id = $1`, np.ProjectID))
	if err != nil || paywatch.CreationRefusal(prj.AddressMode, prj.PoolMatching, prj.MinAmount, prj.MicroAmountDecimals,
		np.Amount, np.Network, np.Address) != nil {
		return nil // the transaction meets the error or the refusal itself
	}
	r := indexReservation{family: f}
	err = s.pool.QueryRow(ctx, `
		WITH w AS (
			SELECT w.id FROM projects p JOIN wallets w ON w.project_id = p.id
			WHERE p.id = $1 AND p.address_mode = $3 AND w.`+col+` IS NOT NULL
			  AND NOT EXISTS (SELECT 1 FROM payments o WHERE o.project_id = p.id AND o.external_order_id = $4)
		)
		DELETE FROM derivation_spare_indexes d
		WHERE (d.wallet_id, d.family, d.derivation_index) = (
			SELECT s.wallet_id, s.family, s.derivation_index FROM derivation_spare_indexes s JOIN w ON w.id = s.wallet_id
			WHERE s.family = $2
			ORDER BY s.derivation_index LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING d.wallet_id, d.derivation_index`,
		np.ProjectID, f, paywatch.ModePerPayment, np.ExternalOrderID).Scan(&r.walletID, &r.index)
	if err == nil {
		return &r
	}
	err = s.pool.QueryRow(ctx, `
		INSERT INTO wallet_counters (wallet_id, family, next_index)
		SELECT w.id, $2, $3 FROM projects p JOIN wallets w ON w.project_id = p.id
		WHERE p.id = $1 AND p.address_mode = $4 AND w.`+col+` IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM payments o WHERE o.project_id = p.id AND o.external_order_id = $5)
		ON CONFLICT (wallet_id, family) DO UPDATE SET next_index = wallet_counters.next_index + 1
		RETURNING wallet_id, next_index - 1`,
		np.ProjectID, f, paywatch.FirstPaymentIndex+1, paywatch.ModePerPayment, np.ExternalOrderID).Scan(&r.walletID, &r.index)
	if err != nil {
		return nil // no row: not per_payment, or a repeat; or the transaction meets the error itself
	}
	return &r
}
