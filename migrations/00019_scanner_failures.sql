-- +goose Up
-- The networks whose scanner is failing (issue 16): a row appears with the
-- first poll that fails (every RPC endpoint down or rate limiting, a
-- database or signal error), counts the failed polls in a row and keeps the
-- last error, and goes with the first poll that works. /health reads it, so
-- an API process reports the scanners of a worker process, and a network
-- whose scanner never reached its chain (no cursor yet) shows up too.
CREATE TABLE scanner_failures (
    network        TEXT PRIMARY KEY,
    failing_since  TIMESTAMPTZ NOT NULL,
    failed_polls   INT NOT NULL CHECK (failed_polls > 0),
    last_error     TEXT NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE scanner_failures;
