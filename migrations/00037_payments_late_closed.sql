-- +goose Up
-- The payment workflow's verdict on its late window (issue 37): set with
-- the state that closes it. The scanners' watch list, the classification
-- of transfers and the unmatched-funds reconciler read it instead of the
-- clock, so that money a workflow may still count (its close waits for the
-- chain's answer) is never told unmatched meanwhile. Windows already over
-- by the clock are closed here; the column's default is open.
ALTER TABLE payments ADD COLUMN late_closed BOOLEAN NOT NULL DEFAULT false;
UPDATE payments SET late_closed = true
WHERE status = 'expired' AND expires_at < now() - interval '24 hours 30 minutes';

-- +goose Down
ALTER TABLE payments DROP COLUMN late_closed;
