// Package migrations holds paywatch's versioned SQL migrations, embedded in
// the binary and applied by goose (github.com/pressly/goose/v3).
//
// Never edit a migration that has been applied anywhere: add a new file with
// the next number instead.
package migrations

import "embed"

// FS holds the migration files, named NNNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
