-- +goose Up
-- Pending webhook events (raised while their project had no webhook URL, or
-- redeliveries whose workflow has yet to start) are looked up by the API
-- when a URL is saved and by the reconciler every few seconds. They are few
-- next to all the events ever sent, so a partial index keeps that lookup
-- from scanning the whole table.
CREATE INDEX webhook_events_pending_idx ON webhook_events (created_at) WHERE state = 'pending';

-- Events that the earlier delivery code ended wrongly are put back in the
-- queue, so the reconciler delivers them as the new rules would have:
-- - an event failed only because its project had no webhook URL then now
--   waits for a URL, pending (its logged attempt stays in the history and
--   the next attempt continues the numbering);
-- - an event still "retrying" two hours after its newest attempt (the
--   schedule spans 30 minutes) lost its delivery with a worker: it is sent
--   again, and its receiver may see an attempt twice, with the same
--   event_id.
UPDATE webhook_events e SET state = 'pending', updated_at = now()
WHERE e.state = 'failed'
  AND EXISTS (SELECT 1 FROM webhook_attempts a
              WHERE a.event_id = e.event_id AND a.response_body = 'project has no webhook URL')
  AND NOT EXISTS (SELECT 1 FROM webhook_attempts a
                  WHERE a.event_id = e.event_id AND a.response_body IS DISTINCT FROM 'project has no webhook URL');

UPDATE webhook_events e SET state = 'pending', updated_at = now()
WHERE e.state = 'retrying'
  AND COALESCE((SELECT max(a.created_at) FROM webhook_attempts a WHERE a.event_id = e.event_id), e.created_at)
      < now() - interval '2 hours';

-- +goose Down
DROP INDEX webhook_events_pending_idx;
