-- +goose Up
-- How far behind the head a scanner keeps its cursor by design: an EVM
-- scanner on whose network nothing waits stays chains.RecentBlocks behind,
-- where a batch costs no header reads (issue 26). /health judges a
-- scanner lagging only past PAYWATCH_MAX_LAG_BLOCKS beyond this.
ALTER TABLE chain_cursors ADD COLUMN lag_allowance BIGINT NOT NULL DEFAULT 0 CHECK (lag_allowance >= 0);

-- +goose Down
ALTER TABLE chain_cursors DROP COLUMN lag_allowance;
