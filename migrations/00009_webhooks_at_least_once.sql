-- +goose Up
-- Pending webhook events (raised while their project had no webhook URL, or
-- redeliveries whose workflow has yet to start) are looked up by the API
-- when a URL is saved and by the reconciler every few seconds. They are few
-- next to all the events ever sent, so a partial index keeps that lookup
-- from scanning the whole table.
CREATE INDEX webhook_events_pending_idx ON webhook_events (created_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX webhook_events_pending_idx;
