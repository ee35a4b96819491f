package store

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paywatch/paywatch"
)

// PostgreSQL error codes the store reacts to.
const (
	pgUniqueViolation      = "23505"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
)

// uniqueViolation reports whether err is a unique-constraint violation,
// optionally of the named constraint or index only.
func uniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgUniqueViolation {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}

// retryable reports whether a transaction lost a race that a fresh attempt
// can win: a unique violation on a helper table, a serialization failure or
// a deadlock.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case pgSerializationFailure, pgDeadlockDetected:
		return true
	}
	return false
}

// inTx runs fn in a transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// errRetry asks the retry loop of a store method for another attempt: the
// transaction lost a race to a concurrent one that has committed since.
var errRetry = errors.New("store: retry")

// maxAttempts bounds the retries of a transaction that lost a race.
const maxAttempts = 8

// retryTx runs inTx until it succeeds, fails for good, or runs out of
// attempts; an attempt is retried when fn returns errRetry or a retryable
// PostgreSQL error.
func (s *Store) retryTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for range maxAttempts {
		err = s.inTx(ctx, fn)
		if !errors.Is(err, errRetry) && !retryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("transaction kept losing races: %w", err)
}

// units returns the base units of a as the text form of a NUMERIC(78,0).
func units(a paywatch.Amount) string {
	return a.Units().String()
}

// amountOf builds an Amount from NUMERIC(78,0) text and its decimals.
func amountOf(text string, decimals int) (paywatch.Amount, error) {
	u, ok := new(big.Int).SetString(text, 10)
	if !ok {
		return paywatch.Amount{}, fmt.Errorf("bad numeric %q", text)
	}
	return paywatch.NewAmount(u, decimals), nil
}

// decimalOf parses a NUMERIC(40,18) column read as text, such as a project
// minimum; nil for NULL.
func decimalOf(text *string) (*paywatch.Amount, error) {
	if text == nil {
		return nil, nil
	}
	var a paywatch.Amount
	if err := a.UnmarshalText([]byte(*text)); err != nil {
		return nil, fmt.Errorf("bad decimal %q: %w", *text, err)
	}
	// Drop trailing zeros so the value keeps its natural precision.
	if d := a.FractionDigits(); d < a.Decimals() {
		a, _ = a.Rescale(d)
	}
	return &a, nil
}

// decimalText is the column form of an optional decimal setting.
func decimalText(a *paywatch.Amount) *string {
	if a == nil {
		return nil
	}
	b, _ := a.MarshalText()
	s := string(b)
	return &s
}

// now returns the store's clock in UTC, rounded to microseconds like
// PostgreSQL timestamps so values read back compare equal.
func (s *Store) clock() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// notFound is the error of a missing row with a client-safe message.
func notFound(msg string) error {
	return paywatch.Errorf(paywatch.ENOTFOUND, "%s", msg)
}

// invalid is a 400-class error with an exact API message.
func invalid(msg string) error {
	return paywatch.Errorf(paywatch.EINVALID, "%s", msg)
}

// conflict is a 409-class error with an exact API message.
func conflict(msg string) error {
	return paywatch.Errorf(paywatch.ECONFLICT, "%s", msg)
}

// forbidden is a 403-class error with an exact API message.
func forbidden(msg string) error {
	return paywatch.Errorf(paywatch.EFORBIDDEN, "%s", msg)
}

// scanner is a pgx.Row or pgx.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// noRows reports whether err says a query returned no row.
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
