-- +goose Up
-- The devnet run whose chain each devnet network's chain state came from
-- (issue 24, item 11). `paywatch dev` starts its devnet chains from genesis
-- on every run, so their block numbers and (on the EVM chains) their
-- transaction hashes repeat those of an earlier run on the same database:
-- a new transfer would meet the records and claims of an old one with the
-- same hash and count for the old payment. At its start, dev compares each
-- devnet network's row with the run id of the chains it just started and,
-- when they differ, clears that network's chain state (cursor, recorded
-- transfers, claims, awaited confirmations, scanner failures) before its
-- scanners start. Only dev writes here; no other mode reads it.
CREATE TABLE devnet_runs (
    network     TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE devnet_runs;
