-- +goose Up
-- The height up to which each network's scanner has recorded transfers.
-- A scanner advances it only after a batch's transfers are stored, so after a
-- crash it resumes from here and nothing is lost.
CREATE TABLE chain_cursors (
    network     TEXT PRIMARY KEY,
    height      BIGINT NOT NULL CHECK (height >= 0),
    head        BIGINT NOT NULL DEFAULT 0 CHECK (head >= 0),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE chain_cursors;
