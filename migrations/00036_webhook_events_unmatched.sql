-- +goose NO TRANSACTION
-- +goose Up
-- A project's transfer.unmatched events (store.CountUnmatched, the
-- dashboard's count on every project page): read from here rather than
-- from every event of the project, payment events included.
-- Built CONCURRENTLY: webhook_events takes writes while replicas start.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_events_unmatched_idx ON webhook_events (project_id)
    WHERE event = 'transfer.unmatched';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhook_events_unmatched_idx;
