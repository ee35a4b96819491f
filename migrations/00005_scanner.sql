-- +goose Up
-- What the chain scanners (issue 6) add.

-- The hash of the block at chain_cursors.height as the scanner saw it: when
-- the chain later has another block at that height, a reorg replaced blocks
-- the scanner already read, and it re-checks what it recorded there. Empty
-- when unknown (a cursor written before this column existed).
ALTER TABLE chain_cursors ADD COLUMN block_hash TEXT NOT NULL DEFAULT '';

-- The reorg check reads a network's recent, still canonical transfers by
-- height.
CREATE INDEX chain_transfers_block_idx ON chain_transfers (network, block_number) WHERE NOT removed;

-- +goose Down
DROP INDEX chain_transfers_block_idx;
ALTER TABLE chain_cursors DROP COLUMN block_hash;
