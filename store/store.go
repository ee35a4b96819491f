package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paywatch/paywatch"
)

// Store is paywatch's PostgreSQL store. Its methods open a transaction where
// several statements must agree and leave races to database constraints.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
	// offered lists the networks the service offers; nil means all.
	offered []paywatch.Network
	// heads reads a network's chain head for address assignments; nil
	// means the scanners' cursors only.
	heads HeadReader
	// newMemo draws a memo payment's memo; nil means paywatch.NewMemo
	// (tests draw from fewer).
	newMemo func(paywatch.Network) string
}

// HeadReader reads a network's current chain head; *chains.Heads
// implements it.
type HeadReader interface {
	Head(ctx context.Context, n paywatch.Network) (uint64, error)
}

// WithChainHeads makes address assignment read the chain head for a
// payment's start block. Without it (or when the read fails) the start
// block is the newest block a scanner has seen (its cursor, or the head it
// saw with its last batch).
func WithChainHeads(h HeadReader) Option {
	return func(s *Store) { s.heads = h }
}

// Option configures a Store.
type Option func(*Store)

// WithClock replaces time.Now, so tests of daily limits and quarantines use
// an injected clock instead of sleeping.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// WithNetworks sets the networks the service offers: those with an RPC URL
// or a devnet chain (operations.md §1). A network outside the list is absent
// from available_networks and /v1/config and cannot be assigned. Without
// this option every supported network is offered.
func WithNetworks(networks []paywatch.Network) Option {
	return func(s *Store) { s.offered = append([]paywatch.Network{}, networks...) }
}

// New returns a Store over pool.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{pool: pool, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Pool returns the underlying pool, for health checks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
