package devtemporal

import (
	"bytes"
	"crypto/md5" // #nosec G501: a manifest's checksum in schema_update_history, as temporal-sql-tool writes it
	stdsql "database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/resolver"
	dbschemas "go.temporal.io/server/schema"
)

// PostgresOptions puts the server's persistence in PostgreSQL.
type PostgresOptions struct {
	// URL is a postgres:// URL of the database for Temporal's tables. Its
	// visibility (the workflow lists the Web UI and searches read) goes to
	// VisibilityURL. Both databases must exist (the caller creates them);
	// Start sets their schemas up on first use and updates them to the
	// server's version on every start.
	URL string
	// VisibilityURL is the database of the visibility tables; it must be
	// another database than URL's (both schemas have a schema_version
	// table).
	VisibilityURL string
}

// Persistence settings of a server on PostgreSQL.
const (
	// PostgresHistoryShards is the number of history shards. Temporal fixes
	// it when a cluster's database is first used and never lets it change;
	// 4 is Temporal's own PostgreSQL development setting, which the field
	// notes measured (about 130 workflow starts a second on 2 cores).
	PostgresHistoryShards = 4
	// PostgresRetention is how long closed workflows (finished payments)
	// stay readable in the Web UI, set when the namespace is created.
	PostgresRetention = 7 * 24 * time.Hour
	// Schema directories of Temporal's PostgreSQL schemas, in the schema
	// files compiled into the server (go.temporal.io/server/schema).
	postgresSchema           = "postgresql/v12/temporal"
	postgresVisibilitySchema = "postgresql/v12/visibility"
)

// postgresPersistence sets up or updates both schemas, creates the
// namespace and returns the persistence configuration.
func (opts Options) postgresPersistence() (config.Persistence, error) {
	own, err := postgresConfig(opts.Postgres.URL, 20)
	if err != nil {
		return config.Persistence{}, err
	}
	vis, err := postgresConfig(opts.Postgres.VisibilityURL, 10)
	if err != nil {
		return config.Persistence{}, err
	}
	if own.ConnectAddr == vis.ConnectAddr && own.DatabaseName == vis.DatabaseName {
		return config.Persistence{}, errors.New("the visibility database must be another database than Temporal's own")
	}
	for _, s := range []struct {
		cfg *config.SQL
		dir string
	}{{own, postgresSchema}, {vis, postgresVisibilitySchema}} {
		if err := setupSchema(s.cfg, s.dir); err != nil {
			return config.Persistence{}, fmt.Errorf("set up Temporal schema in database %q: %w", s.cfg.DatabaseName, err)
		}
	}
	if err := opts.createNamespace(own, PostgresRetention); err != nil {
		return config.Persistence{}, err
	}
	return config.Persistence{
		DefaultStore:     "default",
		VisibilityStore:  "visibility",
		NumHistoryShards: PostgresHistoryShards,
		DataStores: map[string]config.DataStore{
			"default":    {SQL: own},
			"visibility": {SQL: vis},
		},
	}, nil
}

// postgresConfig reads a postgres:// URL into the server's SQL settings
// (pgx driver); query parameters such as sslmode become connection
// attributes.
func postgresConfig(raw string, conns int) (*config.SQL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, fmt.Errorf("%q is not a postgres:// URL", redact(raw))
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s names no database", redact(raw))
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "5432")
	}
	pw, _ := u.User.Password()
	attrs := map[string]string{}
	for k, vs := range u.Query() {
		attrs[k] = vs[len(vs)-1]
	}
	return &config.SQL{
		PluginName:        postgresql.PluginNamePGX,
		DatabaseName:      name,
		ConnectAddr:       addr,
		ConnectProtocol:   "tcp",
		User:              u.User.Username(),
		Password:          pw,
		ConnectAttributes: attrs,
		MaxConns:          conns,
		MaxIdleConns:      conns,
		MaxConnLifetime:   time.Hour,
	}, nil
}

// redact returns a database URL without its password.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// manifest is a schema version directory's manifest.json.
type manifest struct {
	CurrVersion          string
	MinCompatibleVersion string
	Description          string
	SchemaUpdateCqlFiles []string
	AllowNoCqlFiles      bool
}

// setupSchema brings the database of cfg to the newest schema version in
// dir, from the schema files compiled into the server: what
// `temporal-sql-tool setup-schema -v 0.0` followed by `update-schema -d
// dir/versioned` do, with the same bookkeeping (schema_version,
// schema_update_history), so Temporal's own tool can take over later. A
// database already at the newest version is left as it is.
//
// Temporal's tools/common/schema package does the same, but importing it
// adds a command-line library (urfave/cli v1) to go.mod for nothing.
func setupSchema(cfg *config.SQL, dir string) error {
	db, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, cfg, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.CreateSchemaVersionTables(); err != nil {
		return err
	}
	current, err := db.ReadSchemaVersion(cfg.DatabaseName)
	switch {
	case errors.Is(err, stdsql.ErrNoRows) || (err == nil && current == ""):
		// No version recorded: a new database, unless Temporal's tables
		// are there (the row was lost or recorded under another db_name),
		// which setting up again from 0.0 would only break further.
		tables, err := db.ListTables(cfg.DatabaseName)
		if err != nil {
			return fmt.Errorf("list tables of %s: %w", cfg.DatabaseName, err)
		}
		for _, t := range tables {
			if t != "schema_version" && t != "schema_update_history" {
				return fmt.Errorf("database %s has Temporal's tables (%s) but no schema version recorded for it: "+
					"not setting it up again; record its version with temporal-sql-tool, or use an empty database", cfg.DatabaseName, t)
			}
		}
		current = "0.0"
		if err := db.UpdateSchemaVersion(cfg.DatabaseName, current, current); err != nil {
			return err
		}
		if err := db.WriteSchemaUpdateLog("0", current, "", "initial version"); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("read schema version of %s: %w", cfg.DatabaseName, err)
	}
	assets := dbschemas.Assets()
	entries, err := fs.ReadDir(assets, path.Join(dir, "versioned"))
	if err != nil {
		return err
	}
	var versions []string
	for _, e := range entries {
		if v := strings.TrimPrefix(e.Name(), "v"); e.IsDir() && compareVersions(v, current) > 0 {
			versions = append(versions, v)
		}
	}
	slices.SortFunc(versions, compareVersions)
	for _, v := range versions {
		vdir := path.Join(dir, "versioned", "v"+v)
		raw, err := fs.ReadFile(assets, path.Join(vdir, "manifest.json"))
		if err != nil {
			return err
		}
		var m manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%s/manifest.json: %w", vdir, err)
		}
		var readers []io.Reader
		for _, f := range m.SchemaUpdateCqlFiles {
			b, err := fs.ReadFile(assets, path.Join(vdir, f))
			if err != nil {
				return err
			}
			readers = append(readers, bytes.NewReader(b))
		}
		stmts, err := persistence.LoadAndSplitQueryFromReaders(readers)
		if err != nil {
			return fmt.Errorf("%s: %w", vdir, err)
		}
		for _, stmt := range stmts {
			// A version that was partly applied before (a crash mid-update:
			// the statements run one by one, and the version is recorded
			// after the last) is applied again: what it created already
			// exists and what it dropped no longer does, and both are
			// skipped.
			if err := db.Exec(stmt); err != nil && !alreadyApplied(err) {
				return fmt.Errorf("schema version %s: %w", v, err)
			}
		}
		if err := db.UpdateSchemaVersion(cfg.DatabaseName, v, m.MinCompatibleVersion); err != nil {
			return err
		}
		sum := md5.Sum(raw) // #nosec G401: see the import
		if err := db.WriteSchemaUpdateLog(current, v, hex.EncodeToString(sum[:]), m.Description); err != nil {
			return err
		}
		current = v
	}
	return nil
}

// alreadyApplied reports whether err is what a schema statement gives when
// it was applied before: a duplicate object (42P07, 42701, 42710) or a
// missing one to drop (42703, 42P01, 42704), in PostgreSQL's words.
func alreadyApplied(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "already exist") || strings.Contains(msg, "does not exist")
}

// compareVersions compares schema versions such as "1.9" and "1.10"
// number by number.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
