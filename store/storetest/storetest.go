// Package storetest gives tests their own real PostgreSQL database.
//
// The server comes from PAYWATCH_TEST_DATABASE_URL (default: the local
// server, postgres://postgres@127.0.0.1:5432/postgres). Each call creates a
// fresh database on it and drops it when the test ends, so tests can run in
// parallel and never see each other's rows.
package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paywatch/paywatch/store"
)

// DefaultServerURL is used when PAYWATCH_TEST_DATABASE_URL is unset.
const DefaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL is the connection string of the test server's admin database.
func ServerURL() string {
	if u := os.Getenv("PAYWATCH_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultServerURL
}

// NewDatabaseURL returns the URL of a database name that does not exist yet
// and drops that database (if something created it) when t ends. Use it to
// test code that creates its own database.
func NewDatabaseURL(t testing.TB) string {
	t.Helper()
	name := "paywatch_test_" + strings.ToLower(rand.Text()[:12])
	u, err := replaceDatabase(ServerURL(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(t, name) })
	return u
}

// NewDatabase creates an empty database and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	url := NewDatabaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.EnsureDatabase(ctx, url); err != nil {
		t.Fatalf("create test database (is PostgreSQL running? set PAYWATCH_TEST_DATABASE_URL): %v", err)
	}
	return url
}

// NewPool creates a migrated database and returns a pool on it, closed when t ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool, err := store.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := store.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

func drop(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Logf("drop test database %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Logf("drop test database %s: %v", name, err)
	}
}

// replaceDatabase sets the database of a URL-form connection string.
func replaceDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("PAYWATCH_TEST_DATABASE_URL must be a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String(), nil
}
