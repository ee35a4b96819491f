-- +goose NO TRANSACTION
-- +goose Up
-- The payments a scanner waits for, by network (store.Waiting): in
-- progress, or expired with a late window that may still be open. An idle
-- scanner asks every second whether one exists on its network (issue 26),
-- which without this index reads every payment the network ever had.
-- Built CONCURRENTLY: payments takes writes while replicas start.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_waiting_idx ON payments (network, status, expires_at)
    WHERE address IS NOT NULL AND status IN ('pending', 'confirming', 'partial', 'expired');

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS payments_waiting_idx;
