package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// Address assignment failures whose API message depends on the caller:
// creation and the hosted page's network selection word them differently.
var (
	errNoXPub      = errors.New("store: no xpub for the network's family")
	errNoAddresses = errors.New("store: no static address available")
)

// paymentRow is what address assignment needs to know about a payment.
type paymentRow struct {
	id           string
	mode         paywatch.AddressMode
	poolMatching paywatch.PoolMatching
	amount       paywatch.Amount // requested, at any decimals
	externalRef  string
	// reserved is a derivation index its creation took ahead of its
	// transaction (reserveIndex); nil for none.
	reserved *indexReservation
}

// assign gives payment p an address on network n for token t according to
// its address mode, and writes network, token, address, the amount at the
// token's decimals (with a micro offset in pool + micro_amount mode), the
// assignment time and the start block to the payments row. Creation with a
// network and AssignAddress both use it, so the two paths cannot differ.
//
// requested is the dedicated-mode pre-assigned address ("" for none).
func (s *Store) assign(ctx context.Context, tx pgx.Tx, prj *Project, w *Wallet, p *paymentRow, n paywatch.Network, t paywatch.Token, requested string, now time.Time) (paywatch.Assignment, error) {
	var a paywatch.Assignment
	decimals := paywatch.Decimals(n, t)
	amount, err := p.amount.Rescale(decimals)
	if err != nil {
		return a, invalid(paywatch.MsgInvalidRequestBody)
	}
	var (
		address         string
		derivedID       *int64
		staticID        *int64
		original        *paywatch.Amount
		microOffset     *int
		memo            *string
		family          = n.Family()
		walletServesNet = walletServes(p.mode, w, n)
	)
	if !walletServesNet {
		if p.mode.UsesXPub() && family.Derived() {
			return a, errNoXPub
		}
		return a, errNoAddresses
	}
	// The start block is read before the address is chosen: deriving one
	// locks the wallet's counter row until the transaction ends, and
	// concurrent payments of the wallet wait for it (a head read may take
	// a round trip to the chain).
	startBlock, err := s.startBlock(ctx, tx, n, p.mode != paywatch.ModePerPayment)
	if err != nil {
		return a, err
	}
	switch {
	case p.mode.UsesXPub() && !family.Derived():
		// A memo payment (operations.md §9): the wallet's first address
		// of the network, and a memo of the payment's own (per_payment)
		// or of its customer's (per_user).
		id, addr, m, err := s.memoAddress(ctx, tx, w, p, n, t)
		if err != nil {
			return a, err
		}
		staticID, address, memo = &id, addr, &m
	case p.mode == paywatch.ModePerPayment:
		id, addr, err := s.derive(ctx, tx, w, family, nil, n, t, p.reserved)
		if err != nil {
			return a, err
		}
		derivedID, address = &id, addr
	case p.mode == paywatch.ModePerUser:
		id, addr, err := s.perUserAddress(ctx, tx, prj, w, p.externalRef, n, t)
		if err != nil {
			return a, err
		}
		derivedID, address = &id, addr
	case p.mode == paywatch.ModeDedicated:
		id, addr, err := s.dedicatedAddress(ctx, tx, w, p.externalRef, n, requested, now)
		if err != nil {
			return a, err
		}
		staticID, address = &id, addr
	case p.mode == paywatch.ModePool:
		if paywatch.PolicyOf(p.mode, p.poolMatching).TxIDOnly {
			id, addr, err := s.leastBusyAddress(ctx, tx, w, n)
			if err != nil {
				return a, err
			}
			staticID, address = &id, addr
			break
		}
		base := amount
		id, addr, offset, final, err := s.microOffset(ctx, tx, w, p.id, n, t, base, prj.MicroAmountDecimals, now)
		if err != nil {
			return a, err
		}
		staticID, address, original, microOffset, amount = &id, addr, &base, &offset, final
	default:
		return a, fmt.Errorf("unknown address mode %q", p.mode)
	}
	var originalUnits *string
	if original != nil {
		u := units(*original)
		originalUnits = &u
	}
	_, err = tx.Exec(ctx, `
		UPDATE payments SET network = $2, token = $3, address = $4, amount = $5::numeric, original_amount = $6::numeric,
		       decimals = $7, micro_offset = $8, address_assigned_at = $9, start_block = $10,
		       derived_address_id = $11, static_address_id = $12, memo = $13, updated_at = $9
		WHERE id = $1`,
		p.id, n, t, address, units(amount), originalUnits, decimals, microOffset, now, startBlock, derivedID, staticID, memo)
	if uniqueViolation(err, "payments_in_progress_idx") {
		return a, conflict(paywatch.MsgInProgress)
	}
	if err != nil {
		return a, fmt.Errorf("assign address: %w", err)
	}
	out := paywatch.Assignment{
		Network: n, Token: t, Address: address, Amount: amount, OriginalAmount: original,
		StartBlock: uint64(startBlock), AssignedAt: now,
	}
	if memo != nil {
		out.Memo = *memo
	}
	return out, nil
}

// startBlock is the start block of an address assigned on network n now:
// the block after the chain head (WithChainHeads), so a transfer mined
// before the assignment, in the head block itself included, never counts
// for the payment, even when a scanner lags far behind. A head is reused
// for up to one block interval (chains.Heads), so a transfer in the one
// block mined in that interval may still count.
//
// If the head cannot be read, the newest block a scanner has seen (its
// cursor, or the head it saw with its last batch) stands in only while it
// is fresh: recorded within headFreshness. An older one would open a gap
// in which a transfer mined before the assignment counts for the new
// payment, which on a reused address (reused: per_user, dedicated, pool)
// is an earlier payment's money, say a customer's duplicate: such an
// assignment is refused (ERATELIMIT, MsgRecheckFailed: try again in a
// minute, issue 37). A per_payment address is new, so nothing mined before
// its assignment can be sent to it: it goes ahead on a stale block, since
// a chain that cannot be read right now must not stop payments from being
// created. With neither a head nor a scanned block the start block is 0,
// unknown.
func (s *Store) startBlock(ctx context.Context, tx pgx.Tx, n paywatch.Network, reused bool) (int64, error) {
	var seen int64
	var seenAt time.Time
	err := tx.QueryRow(ctx, `SELECT GREATEST(height, head), updated_at FROM chain_cursors WHERE network = $1`, n).Scan(&seen, &seenAt)
	if err != nil && !noRows(err) {
		return 0, fmt.Errorf("read chain cursor: %w", err)
	}
	newest := seen
	if s.heads != nil {
		head, err := s.heads.Head(ctx, n)
		if err == nil {
			newest = max(seen, int64(head))
		} else {
			stale := seen == 0 || s.clock().Sub(seenAt) > headFreshness(n)
			if stale && reused {
				slog.WarnContext(ctx, "chain head unavailable and the scanner's newest block is stale; a reused address is not assigned",
					"network", n, "newestBlock", seen, "recordedAt", seenAt, "error", err)
				return 0, paywatch.Errorf(paywatch.ERATELIMIT, "%s", paywatch.MsgRecheckFailed)
			}
			slog.WarnContext(ctx, "chain head unavailable; the start block of the new address follows the scanner's newest block",
				"network", n, "newestBlock", seen, "stale", stale, "error", err)
		}
	}
	if newest == 0 {
		return 0, nil // nothing known yet: the scanner's own start rule applies
	}
	return newest + 1, nil
}

// headFreshness is how recently a scanner must have recorded its newest
// block for it to stand in for network n's head: two block times, and at
// least 10 s. A scanner at block pace records every block; an idle one
// (nothing waited on the network) only once a minute or so, and then a
// reused address waits for the head to be readable.
func headFreshness(n paywatch.Network) time.Duration {
	info, _ := paywatch.LookupNetwork(n)
	return max(2*info.BlockTime, 10*time.Second)
}

// AssignAddress selects the network of a payment created without one (the
// hosted page's select-network, through the payment workflow): it applies
// the project's address mode exactly as creation with a network does, in
// one transaction. It rescales the amount to the token's decimals, adds the
// micro offset in pool + micro_amount mode, and sets network, token,
// address, address_assigned_at and start_block (the network's scanned
// height, 0 if none) on the payments row.
//
// Errors are *paywatch.Error with the select-network messages of
// interface.md: EINVALID "X on Y is not available for this merchant" and
// "No addresses available for this network" (and "USDC is not supported on
// TRC20"), EFORBIDDEN "This merchant is currently not accepting payments",
// ERATELIMIT "Payment capacity exceeded. Please try again later.", and
// ECONFLICT for a network already selected, a payment no longer pending or
// (per_user, dedicated) another payment of the customer in progress. Calling
// it again with the same pair returns the same assignment.
func (s *Store) AssignAddress(ctx context.Context, paymentID string, n paywatch.Network, t paywatch.Token) (paywatch.Assignment, error) {
	var out paywatch.Assignment
	err := s.retryTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = s.assignAddress(ctx, tx, paymentID, n, t)
		return err
	})
	return out, err
}

func (s *Store) assignAddress(ctx context.Context, tx pgx.Tx, paymentID string, n paywatch.Network, t paywatch.Token) (paywatch.Assignment, error) {
	if !paywatch.ValidPaymentID(paymentID) {
		return paywatch.Assignment{}, notFound(paywatch.MsgPaymentNotFound)
	}
	p, err := scanPayment(tx.QueryRow(ctx, paymentSelect+` WHERE pay.id = $1 FOR UPDATE OF pay`, paymentID))
	if noRows(err) {
		return paywatch.Assignment{}, notFound(paywatch.MsgPaymentNotFound)
	}
	if err != nil {
		return paywatch.Assignment{}, fmt.Errorf("load payment: %w", err)
	}
	if p.Network != "" {
		if p.Network == n && p.Token == t {
			return assignmentOf(p), nil
		}
		return paywatch.Assignment{}, conflict(paywatch.MsgNetworkSelected)
	}
	now := s.clock()
	if err := paywatch.SelectNetworkRefusal(false, p.Status, p.ExpiresAt, now); err != nil {
		return paywatch.Assignment{}, err
	}
	if err := paywatch.ValidatePair(n, t); err != nil {
		return paywatch.Assignment{}, err
	}
	prj, err := scanProject(tx.QueryRow(ctx, projectSelect+` WHERE p.id = $1 FOR SHARE OF p`, p.ProjectID))
	if err != nil {
		return paywatch.Assignment{}, fmt.Errorf("load project: %w", err)
	}
	if !prj.Active || prj.Owner == nil || prj.Owner.Status != AccountActive {
		// 400, not 403: interface.md's select-network table answers it so.
		return paywatch.Assignment{}, invalid(paywatch.MsgNotAccepting)
	}
	notAvailable := invalid(paywatch.MsgNotAvailable(paywatch.Pair{Network: n, Token: t}))
	w, err := walletByProject(ctx, tx, prj.ID)
	if err != nil {
		return paywatch.Assignment{}, err
	}
	if w == nil || !s.Offered(n) || !walletServes(p.Mode, w, n) {
		return paywatch.Assignment{}, notAvailable
	}
	row := &paymentRow{id: p.ID, mode: p.Mode, poolMatching: p.PoolMatching, amount: p.Amount, externalRef: p.ExternalRef}
	a, err := s.assign(ctx, tx, prj, w, row, n, t, "", now)
	switch err {
	case errNoXPub:
		return a, notAvailable
	case errNoAddresses:
		return a, invalid(paywatch.MsgNoAddressesSelect)
	}
	return a, err
}

// Assignment returns the network selection recorded on a payment, ok false
// when it has none (or there is no such payment).
func (s *Store) Assignment(ctx context.Context, paymentID string) (a paywatch.Assignment, ok bool, err error) {
	if !paywatch.ValidPaymentID(paymentID) {
		return a, false, nil
	}
	p, err := scanPayment(s.pool.QueryRow(ctx, paymentSelect+` WHERE pay.id = $1`, paymentID))
	if noRows(err) {
		return a, false, nil
	}
	if err != nil {
		return a, false, fmt.Errorf("load payment: %w", err)
	}
	if p.Network == "" {
		return a, false, nil
	}
	return assignmentOf(p), true, nil
}

// assignmentOf is the assignment already recorded on a payment.
func assignmentOf(p *Payment) paywatch.Assignment {
	a := paywatch.Assignment{
		Network: p.Network, Token: p.Token, Address: p.Address, Amount: p.Amount,
		OriginalAmount: p.OriginalAmount, StartBlock: p.StartBlock, Memo: p.Memo,
	}
	if p.AddressAssignedAt != nil {
		a.AssignedAt = p.AddressAssignedAt.UTC()
	}
	return a
}

// ReleaseAddress frees what a resolved payment held: in per_payment mode
// its derived address is deactivated; in pool + micro_amount mode its
// offset becomes reusable at once when the payment was paid, and only after
// MicroOffsetQuarantine (6 h) when it expired or was cancelled, so a late
// transfer for the old payment cannot match a new one. Other modes hold
// nothing. Calling it again changes nothing.
func (s *Store) ReleaseAddress(ctx context.Context, paymentID string, outcome paywatch.Status) error {
	if !paywatch.ValidPaymentID(paymentID) {
		return notFound(paywatch.MsgPaymentNotFound)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var mode paywatch.AddressMode
		var derivedID *int64
		err := tx.QueryRow(ctx, `SELECT address_mode, derived_address_id FROM payments WHERE id = $1`, paymentID).Scan(&mode, &derivedID)
		if noRows(err) {
			return notFound(paywatch.MsgPaymentNotFound)
		}
		if err != nil {
			return fmt.Errorf("load payment: %w", err)
		}
		if mode == paywatch.ModePerPayment && derivedID != nil {
			if _, err := tx.Exec(ctx, `UPDATE derived_addresses SET active = false WHERE id = $1 AND active`, *derivedID); err != nil {
				return fmt.Errorf("deactivate address: %w", err)
			}
		}
		reusable := s.clock()
		if outcome != paywatch.StatusPaid && outcome != paywatch.StatusOverpaid {
			reusable = reusable.Add(paywatch.MicroOffsetQuarantine)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE micro_offsets SET reusable_at = $2 WHERE payment_id = $1 AND reusable_at IS NULL`,
			paymentID, reusable); err != nil {
			return fmt.Errorf("release micro offset: %w", err)
		}
		// The payment's workflow is ending: nothing of it is awaited any more.
		if _, err := tx.Exec(ctx, `DELETE FROM awaited_confirmations WHERE payment_id = $1`, paymentID); err != nil {
			return fmt.Errorf("forget awaited confirmations: %w", err)
		}
		return nil
	})
}
