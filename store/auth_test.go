package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A forgiven hit no longer counts toward its window.
func TestForgiveRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	w, err := s.HitRate(ctx, "k", 15*time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.ForgiveRate(ctx, "k", w, 15*time.Minute))
	w, err = s.HitRate(ctx, "k", 15*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1), w.Count)
}

// PruneAuth deletes ended sessions and long-expired links, and keeps the
// live ones.
func TestPruneAuth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	a, err := s.CreateAccount(ctx, "a@example.com", paywatch.PlanFree)
	require.NoError(t, err)
	session := func(name string) []byte {
		h := []byte(name)
		_, err := s.CreateSession(ctx, store.NewSession{TokenHash: h, AccountID: a.ID, CSRF: "c", TTL: 12 * time.Hour})
		require.NoError(t, err)
		return h
	}
	link := func(name string, ttl time.Duration) []byte {
		h := []byte(name)
		_, err := s.IssueToken(ctx, store.NewToken{Purpose: store.TokenReset, Hash: h, Email: name + "@example.com", TTL: ttl},
			func(*store.Account) (*store.Mail, bool) { return nil, true })
		require.NoError(t, err)
		return h
	}
	idle := session("idle")
	link("old", time.Hour)
	clk.Add(8 * 24 * time.Hour)
	busy := session("busy")
	link("new", time.Hour)
	require.NoError(t, s.PruneAuth(ctx, 2*time.Hour))

	_, err = s.SessionByHash(ctx, busy, 2*time.Hour, time.Minute)
	require.NoError(t, err)
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM dashboard_sessions WHERE token_hash = $1`, idle).Scan(&n))
	assert.Zero(t, n)
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM account_tokens`).Scan(&n))
	assert.Equal(t, 1, n)
}
