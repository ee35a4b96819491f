-- +goose NO TRANSACTION
-- +goose Up
-- The merchant's event log (GET /v1/events, operations.md §8) lists a
-- project's webhook events newest first, a page at a time; without this
-- index every page would sort all of the project's events. Built
-- CONCURRENTLY: webhook_events takes writes while replicas start.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_events_project_created_idx ON webhook_events (project_id, created_at DESC);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhook_events_project_created_idx;
