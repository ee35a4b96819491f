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
// (user_memos). A memo that may repeat (a TON comment, 8 characters) is
// drawn again until no payment on the address and no customer on the
// network has it, and the draws on one address take turns (a
// transaction lock), so two concurrent payments never draw the same
// one; a Solana Pay reference (32 random bytes) never repeats.
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
	if p.mode == paywatch.ModePerUser {
		// The customer's memo, if made already: no draw, no lock.
		var memo string
		err = tx.QueryRow(ctx, `
			SELECT memo FROM user_memos WHERE wallet_id = $1 AND external_ref = $2 AND network = $3 AND token = $4`,
			w.ID, p.externalRef, n, t).Scan(&memo)
		if err == nil {
			return id, address, memo, nil
		}
		if !noRows(err) {
			return 0, "", "", fmt.Errorf("per_user memo: %w", err)
		}
	}
	for range memoDraws {
		fresh, err := s.freshMemo(ctx, tx, n, address)
		if err != nil {
			return 0, "", "", err
		}
		if p.mode != paywatch.ModePerUser {
			return id, address, fresh, nil
		}
		// Insert, or read the one a concurrent first payment of the
		// customer made: the insert waits for that one's commit, and the
		// read, a new statement, sees it. Neither: a customer on another
		// address took the memo meanwhile (user_memos holds each once on
		// the network), so draw again.
		var memo string
		err = tx.QueryRow(ctx, `
			INSERT INTO user_memos (wallet_id, external_ref, network, token, memo) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING RETURNING memo`,
			w.ID, p.externalRef, n, t, fresh).Scan(&memo)
		if noRows(err) {
			err = tx.QueryRow(ctx, `
				SELECT memo FROM user_memos WHERE wallet_id = $1 AND external_ref = $2 AND network = $3 AND token = $4`,
				w.ID, p.externalRef, n, t).Scan(&memo)
			if noRows(err) {
				continue
			}
		}
		if err != nil {
			return 0, "", "", fmt.Errorf("per_user memo: %w", err)
		}
		return id, address, memo, nil
	}
	return 0, "", "", fmt.Errorf("store: no free memo on %s %s in %d draws", n, address, memoDraws)
}

// memoDraws bounds the draws of freshMemo: with a thousand memos in use
// on an address, eight TON characters repeat one about once in a billion
// draws.
const memoDraws = 16

// freshMemo draws a memo for a payment on (n, address) that no payment
// on the address has had and no customer on n holds. It takes the
// address's memo lock first, held to the end of tx, so a concurrent
// draw waits for this one's payment to be committed (or not) and sees
// it.
func (s *Store) freshMemo(ctx context.Context, tx pgx.Tx, n paywatch.Network, address string) (string, error) {
	if !paywatch.MemoMayRepeat(n) && s.newMemo == nil {
		return paywatch.NewMemo(n), nil // never repeats: no turns to take
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('memo ' || $1 || ' ' || $2, 0))`, string(n), address); err != nil {
		return "", fmt.Errorf("memo lock: %w", err)
	}
	draw := s.newMemo
	if draw == nil {
		draw = paywatch.NewMemo
	}
	for range memoDraws {
		memo := draw(n)
		var taken bool
		err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM payments WHERE network = $1 AND address = $2 AND memo = $3)
			    OR EXISTS (SELECT 1 FROM user_memos WHERE network = $1 AND memo = $3)`,
			string(n), address, memo).Scan(&taken)
		if err != nil {
			return "", fmt.Errorf("memo in use: %w", err)
		}
		if !taken {
			return memo, nil
		}
	}
	return "", fmt.Errorf("store: no free memo on %s %s in %d draws", n, address, memoDraws)
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
