package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// AccountCursor is how far one account of a network read per account
// (SOLANA: a wallet's token account of one mint) has been read: its newest
// signature at or below the network's cursor, and that signature's slot.
type AccountCursor struct {
	Account, Owner string
	Signature      string
	Slot           uint64
	// Through is the last slot the account was read through.
	Through uint64
}

// WatchedOwners lists the addresses a network read per account reads
// (SOLANA: each owner's token accounts cost a call per poll): every
// address of the network's family a project has registered and not
// removed, and a removed one while a payment given it may still count a
// transfer (created within ownerLookback: its longest window and its late
// window). A transfer to a removed address after that is not read, so not
// reported as unmatched funds (on block-read networks it is, at no cost).
func (s *Store) WatchedOwners(ctx context.Context, n paywatch.Network) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT o.address FROM address_owners o
		WHERE o.family = $1 AND (
		    EXISTS (SELECT 1 FROM static_addresses a WHERE a.network = $2 AND a.address = o.address AND a.removed_at IS NULL)
		    OR EXISTS (SELECT 1 FROM payments p WHERE p.network = $2 AND p.address = o.address AND p.created_at > $3))
		ORDER BY o.address`, string(n.Family()), string(n), s.clock().Add(-ownerLookback))
	if err != nil {
		return nil, fmt.Errorf("watched owners on %s: %w", n, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("watched owners on %s: %w", n, err)
	}
	return out, nil
}

// ownerLookback is how long after its payment's creation a removed
// address is still read: the longest payment window (24 h), the late
// window (24 h) and the grace and checks around them.
const ownerLookback = 50 * time.Hour

// AccountCursors returns the recorded cursors of network n's accounts.
func (s *Store) AccountCursors(ctx context.Context, n paywatch.Network) (map[string]AccountCursor, error) {
	rows, err := s.pool.Query(ctx, `SELECT account, owner, signature, slot, through FROM account_cursors WHERE network = $1`, string(n))
	if err != nil {
		return nil, fmt.Errorf("account cursors of %s: %w", n, err)
	}
	defer rows.Close()
	out := map[string]AccountCursor{}
	for rows.Next() {
		var c AccountCursor
		var slot, through int64
		if err := rows.Scan(&c.Account, &c.Owner, &c.Signature, &slot, &through); err != nil {
			return nil, fmt.Errorf("account cursors of %s: %w", n, err)
		}
		c.Slot, c.Through = uint64(slot), uint64(through)
		out[c.Account] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("account cursors of %s: %w", n, err)
	}
	return out, nil
}

// saveAccountCursors writes a batch's account cursors, in the transaction
// that moves the network's cursor (RecordScan).
func saveAccountCursors(ctx context.Context, tx pgx.Tx, n paywatch.Network, cs []AccountCursor, now time.Time) error {
	if len(cs) == 0 {
		return nil
	}
	accounts := make([]string, len(cs))
	owners := make([]string, len(cs))
	sigs := make([]string, len(cs))
	slots := make([]int64, len(cs))
	throughs := make([]int64, len(cs))
	for i, c := range cs {
		accounts[i], owners[i], sigs[i], slots[i], throughs[i] = c.Account, c.Owner, c.Signature, int64(c.Slot), int64(c.Through)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO account_cursors (network, account, owner, signature, slot, through, updated_at)
		SELECT $1, a.account, a.owner, a.signature, a.slot, a.through, $7
		FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[]) AS a(account, owner, signature, slot, through)
		ON CONFLICT (network, account) DO UPDATE SET
			owner = EXCLUDED.owner, signature = EXCLUDED.signature, slot = EXCLUDED.slot, through = EXCLUDED.through,
			updated_at = EXCLUDED.updated_at`,
		string(n), accounts, owners, sigs, slots, throughs, now)
	if err != nil {
		return fmt.Errorf("save %d %s account cursors: %w", len(cs), n, err)
	}
	return nil
}
