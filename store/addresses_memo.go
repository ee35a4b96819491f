package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// memoAddress gives a memo payment (per_payment or per_user on a family
// without watch-only derivation: SOLANA) the wallet's first registered
// address of the network and its memo: a fresh one for a per_payment
// payment; for a per_user one the customer's memo for the network and
// token, made on first use and kept like a per_user address
// (user_memos). A memo is a Solana Pay reference: 32 random bytes, so two
// payments never share one (the unique index on user_memos would refuse
// it, and a payment's own is never stored twice).
func (s *Store) memoAddress(ctx context.Context, tx pgx.Tx, w *Wallet, p *paymentRow, n paywatch.Network, t paywatch.Token) (int64, string, string, error) {
	var id int64
	var address string
	err := tx.QueryRow(ctx, `
		SELECT id, address FROM static_addresses
		WHERE wallet_id = $1 AND network = $2 AND removed_at IS NULL
		ORDER BY id LIMIT 1`, w.ID, n).Scan(&id, &address)
	if noRows(err) {
		return 0, "", "", errNoAddresses
	}
	if err != nil {
		return 0, "", "", fmt.Errorf("memo payment address: %w", err)
	}
	if p.mode != paywatch.ModePerUser {
		return id, address, paywatch.NewMemo(n), nil
	}
	// Insert, or read the one a concurrent first payment of the customer
	// made: the insert waits for that one's commit, and the read, a new
	// statement, sees it.
	var memo string
	err = tx.QueryRow(ctx, `
		INSERT INTO user_memos (wallet_id, external_ref, network, token, memo) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (wallet_id, external_ref, network, token) DO NOTHING RETURNING memo`,
		w.ID, p.externalRef, n, t, paywatch.NewMemo(n)).Scan(&memo)
	if noRows(err) {
		err = tx.QueryRow(ctx, `
			SELECT memo FROM user_memos WHERE wallet_id = $1 AND external_ref = $2 AND network = $3 AND token = $4`,
			w.ID, p.externalRef, n, t).Scan(&memo)
	}
	if err != nil {
		return 0, "", "", fmt.Errorf("per_user memo: %w", err)
	}
	return id, address, memo, nil
}

// noXPubFamily refuses an xPub for a family whose wallets have none.
func noXPubFamily(f paywatch.Family) error {
	return invalid(fmt.Sprintf("xpubs.%s: %s wallets have no watch-only xPub; register the wallet's addresses under addresses.%s instead",
		f, f, strings.Join(networkNames(paywatch.NetworksOf(f)), ", addresses.")))
}

func networkNames(ns []paywatch.Network) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = string(n)
	}
	return out
}
