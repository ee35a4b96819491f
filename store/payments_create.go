package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// NewPayment is a validated POST /v1/payments request.
type NewPayment struct {
	ProjectID int64
	// Amount is the requested amount, parsed at the token's decimals (or
	// at the smallest decimals of any token when Network is "").
	Amount          paywatch.Amount
	ExternalRef     string
	ExternalOrderID *string
	// Network is "" when the customer selects it on the hosted page.
	Network paywatch.Network
	Token   paywatch.Token
	// ExpiresIn is the payment window; 0 means the project's setting.
	ExpiresIn time.Duration
	// Address pre-assigns a static address (dedicated mode only); "" for none.
	Address  string
	Metadata json.RawMessage
	// Locale is the merchant's default language for the hosted pages
	// (a locale.Lang tag, validated by the caller); "" for none.
	Locale string
}

// CreatePayment writes a new payment with its address, or returns the
// existing payment of an idempotent repeat (existing is then true). Every
// rule of POST /v1/payments that needs the database is applied here, in one
// transaction:
//
//   - the project minimum and the micro-amount precision;
//   - idempotency by external_order_id, and the in-progress rule of the
//     per_user and dedicated modes, both settled by unique indexes: a
//     concurrent duplicate waits for the first insert and then returns it;
//   - address assignment in the project's mode (AssignAddress's code).
//
// The row is written with workflow_started false; the caller starts the
// workflow and calls MarkWorkflowStarted.
func (s *Store) CreatePayment(ctx context.Context, np NewPayment) (*Payment, bool, error) {
	var out *Payment
	var existing bool
	reserved := s.reserveIndex(ctx, np)
	err := s.retryTx(ctx, func(tx pgx.Tx) error {
		if reserved != nil {
			reserved.used = false // an attempt that rolled back used nothing
		}
		var err error
		out, existing, err = s.createPayment(ctx, tx, np, reserved)
		return err
	})
	if err != nil {
		if reserved != nil {
			reserved.used = false // the transaction rolled back: nothing was derived
		}
		s.returnIndex(ctx, reserved)
		return nil, false, err
	}
	s.returnIndex(ctx, reserved)
	return out, existing, nil
}

// createPayment is CreatePayment's transaction; reserved is the index
// reserveIndex took for it, nil for none.
func (s *Store) createPayment(ctx context.Context, tx pgx.Tx, np NewPayment, reserved *indexReservation) (*Payment, bool, error) {
	prj, err := scanProject(tx.QueryRow(ctx, projectSelect+` WHERE p.id = $1 FOR SHARE OF p`, np.ProjectID))
	if err != nil {
		return nil, false, fmt.Errorf("load project: %w", err)
	}
	if err := paywatch.CreationRefusal(prj.AddressMode, prj.PoolMatching, prj.MinAmount, prj.MicroAmountDecimals,
		np.Amount, np.Network, np.Address); err != nil {
		return nil, false, err
	}

	// Idempotency, then the in-progress rule.
	if np.ExternalOrderID != nil {
		p, err := scanPayment(tx.QueryRow(ctx, paymentSelect+` WHERE pay.project_id = $1 AND pay.external_order_id = $2`,
			np.ProjectID, *np.ExternalOrderID))
		if err == nil {
			return sameOrder(p, np)
		}
		if !noRows(err) {
			return nil, false, err
		}
	}
	if paywatch.PolicyOf(prj.AddressMode, prj.PoolMatching).OneInProgress && np.Network != "" {
		p, err := scanPayment(tx.QueryRow(ctx, paymentSelect+`
			WHERE pay.project_id = $1 AND pay.external_ref = $2 AND pay.network = $3 AND pay.token = $4
			  AND pay.status IN ('pending', 'confirming', 'partial')
			  AND `+paywatch.PolicySQL("pay", func(p paywatch.Policy) bool { return p.OneInProgress }),
			np.ProjectID, np.ExternalRef, np.Network, np.Token))
		if err == nil {
			return sameInProgressOrder(p, np)
		}
		if !noRows(err) {
			return nil, false, err
		}
	}

	w, err := walletByProject(ctx, tx, prj.ID)
	if err != nil {
		return nil, false, err
	}
	if w == nil {
		return nil, false, invalid(paywatch.MsgNoWallet)
	}
	if np.Network == "" {
		if len(s.AvailableNetworks(prj.AddressMode, w)) == 0 {
			if prj.AddressMode.UsesXPub() {
				return nil, false, invalid(paywatch.MsgNoXPub)
			}
			return nil, false, invalid(paywatch.MsgNoAddressesCreate)
		}
	} else if !s.Offered(np.Network) {
		return nil, false, invalid(paywatch.MsgNotAvailable(paywatch.Pair{Network: np.Network, Token: np.Token}))
	}

	orderID := np.ExternalOrderID
	if np.Network == "" && orderID == nil {
		id := GeneratedOrderIDPrefix + strings.ToUpper(rand.Text()[:16])
		orderID = &id
	}
	expiresIn := np.ExpiresIn
	if expiresIn == 0 {
		expiresIn = time.Duration(prj.PaymentExpiryMinutes) * time.Minute
	}
	now := s.clock()
	var poolMatching *paywatch.PoolMatching
	if prj.AddressMode == paywatch.ModePool {
		poolMatching = &prj.PoolMatching
	}
	var network, token *string
	if np.Network != "" {
		n, t := string(np.Network), string(np.Token)
		network, token = &n, &t
	}
	var metadata any
	if len(np.Metadata) > 0 {
		metadata = string(np.Metadata)
	}
	var id string
	err = tx.QueryRow(ctx, `
		INSERT INTO payments (id, project_id, address_mode, pool_matching, network, token, amount, decimals,
		                      external_ref, external_order_id, metadata, expires_at, created_without_network,
		                      created_at, updated_at, locale)
		VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6::numeric, $7, $8, $9, $10::jsonb, $11, $12, $13, $13, $14)
		ON CONFLICT DO NOTHING
		RETURNING id::text`,
		prj.ID, prj.AddressMode, poolMatching, network, token, units(np.Amount), np.Amount.Decimals(),
		np.ExternalRef, orderID, metadata, now.Add(expiresIn), np.Network == "", now, optionalText(np.Locale)).Scan(&id)
	if noRows(err) {
		// A concurrent request inserted the same order or in-progress
		// payment and has committed: the next attempt returns it.
		return nil, false, errRetry
	}
	if err != nil {
		return nil, false, fmt.Errorf("insert payment: %w", err)
	}
	if np.Network != "" {
		row := &paymentRow{id: id, mode: prj.AddressMode, poolMatching: prj.PoolMatching, amount: np.Amount, externalRef: np.ExternalRef,
			reserved: reserved}
		_, err := s.assign(ctx, tx, prj, w, row, np.Network, np.Token, np.Address, now)
		switch err {
		case errNoXPub:
			return nil, false, invalid(paywatch.MsgNoXPub)
		case errNoAddresses:
			return nil, false, invalid(paywatch.MsgNoAddressesCreate)
		case nil:
		default:
			return nil, false, err
		}
	}
	p, err := createdPayment(ctx, tx, id)
	if err != nil {
		return nil, false, err
	}
	return p, false, nil
}

// order is what payment p says of its order, for the idempotency rules.
func (p *Payment) order() paywatch.Order {
	return paywatch.Order{
		ExternalRef: p.ExternalRef, ExternalOrderID: p.ExternalOrderID, Networkless: p.CreatedWithoutNetwork,
		Pair: paywatch.Pair{Network: p.Network, Token: p.Token}, Amount: p.RequestedAmount(),
	}
}

// order is what request np says of its order.
func (np NewPayment) order() paywatch.Order {
	return paywatch.Order{
		ExternalRef: np.ExternalRef, ExternalOrderID: np.ExternalOrderID, Networkless: np.Network == "",
		Pair: paywatch.Pair{Network: np.Network, Token: np.Token}, Amount: np.Amount,
	}
}

// sameOrder answers a creation whose external_order_id names payment p
// (paywatch.OrderRepeatRefusal).
func sameOrder(p *Payment, np NewPayment) (*Payment, bool, error) {
	if err := paywatch.OrderRepeatRefusal(p.order(), np.order(), p.Amount); err != nil {
		return nil, false, err
	}
	return p, true, nil
}

// sameInProgressOrder answers a creation while the customer's payment p is
// in progress on the same network and token (paywatch.InProgressRefusal).
func sameInProgressOrder(p *Payment, np NewPayment) (*Payment, bool, error) {
	if err := paywatch.InProgressRefusal(p.order(), np.order(), p.ID, p.Amount); err != nil {
		return nil, false, err
	}
	return p, true, nil
}
