package devtemporal

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v12 "go.temporal.io/server/schema/postgresql/v12"

	"github.com/paywatch/paywatch/store/storetest"
)

// Both schemas are set up from nothing to the server's versions, the way
// temporal-sql-tool records it, and a second run (every later start) finds
// nothing to do.
func TestPostgresSchema(t *testing.T) {
	for _, c := range []struct{ dir, version string }{
		{postgresSchema, v12.Version},
		{postgresVisibilitySchema, v12.VisibilityVersion},
	} {
		url := storetest.NewDatabase(t)
		cfg, err := postgresConfig(url, 2)
		require.NoError(t, err)
		require.NoError(t, setupSchema(cfg, c.dir), c.dir)
		require.NoError(t, setupSchema(cfg, c.dir), "%s again", c.dir)

		conn, err := pgx.Connect(context.Background(), url)
		require.NoError(t, err)
		var version string
		var updates int
		require.NoError(t, conn.QueryRow(context.Background(), `SELECT curr_version FROM schema_version`).Scan(&version))
		require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*) FROM schema_update_history`).Scan(&updates))
		require.NoError(t, conn.Close(context.Background()))
		assert.Equal(t, c.version, version, c.dir)
		assert.Greater(t, updates, 10, "%s: one record per version, as the tool keeps them", c.dir)
	}
}

// A start killed mid-update leaves a version partly applied and not
// recorded: the next start applies it again and gets through. A database
// with Temporal's tables but no recorded version is refused, never set up
// again from 0.0 over what it holds.
func TestPostgresSchemaRecovers(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	cfg, err := postgresConfig(url, 2)
	require.NoError(t, err)
	require.NoError(t, setupSchema(cfg, postgresSchema))
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	version := func() string {
		var v string
		require.NoError(t, conn.QueryRow(ctx, `SELECT curr_version FROM schema_version`).Scan(&v))
		return v
	}

	// Every version after 1.3 applied, but only 1.3 recorded.
	_, err = conn.Exec(ctx, `UPDATE schema_version SET curr_version = '1.3'`)
	require.NoError(t, err)
	require.NoError(t, setupSchema(cfg, postgresSchema), "the versions after 1.3 are applied again")
	assert.Equal(t, v12.Version, version())

	_, err = conn.Exec(ctx, `DELETE FROM schema_version`)
	require.NoError(t, err)
	for range 2 {
		err = setupSchema(cfg, postgresSchema)
		require.ErrorContains(t, err, "no schema version recorded")
	}
	var rows int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM schema_version`).Scan(&rows))
	assert.Zero(t, rows, "nothing written over the database")
}

func TestPostgresConfig(t *testing.T) {
	cfg, err := postgresConfig("postgres://temporal:p%40ss@db.internal/temporal?sslmode=verify-full&sslrootcert=/ca.pem", 20)
	require.NoError(t, err)
	assert.Equal(t, "db.internal:5432", cfg.ConnectAddr)
	assert.Equal(t, "temporal", cfg.DatabaseName)
	assert.Equal(t, "temporal", cfg.User)
	assert.Equal(t, "p@ss", cfg.Password)
	assert.Equal(t, map[string]string{"sslmode": "verify-full", "sslrootcert": "/ca.pem"}, cfg.ConnectAttributes)
	for _, bad := range []string{"mysql://x/y", "postgres://db/", "not a url"} {
		_, err := postgresConfig(bad, 1)
		assert.Error(t, err, bad)
	}
	assert.Negative(t, compareVersions("1.9", "1.10"))
	assert.Positive(t, compareVersions("1.10", "1.9"))
	assert.Zero(t, compareVersions("1.0", "1.0"))
}
