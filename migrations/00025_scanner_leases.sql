-- +goose Up
-- One row per network: the generation of the scan that owns the network's
-- cursor (issue 24). Each scan activity attempt takes the next generation
-- when it starts, and every cursor write is conditional on it, so an
-- older attempt that still runs (its worker cut off, its retry already
-- started elsewhere) has its writes refused and stops.
CREATE TABLE scanner_leases (
    network     TEXT PRIMARY KEY,
    generation  BIGINT NOT NULL CHECK (generation > 0),
    acquired_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE scanner_leases;
