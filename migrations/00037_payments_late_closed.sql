-- +goose Up
-- The payment workflow's verdict on its late window (issue 37): set with
-- the state that closes it. The scanners' watch list, the classification
-- of transfers and the unmatched-funds reconciler read it instead of the
-- clock, so that money a workflow may still count (its close waits for the
-- chain's answer) is never told unmatched meanwhile. Windows already over
-- by the clock, and not yet past paywatch.LateHold (after which the clock
-- decides anyway), are closed here; the column's default is open.
--
-- late_by_chain marks the payments whose workflow closes its late window
-- by reading the chain (setupVersion 4): only they may leave their network
-- at the idle pace while in their late window; a run of the release
-- before judges a late transfer by when its signal arrives.
ALTER TABLE payments ADD COLUMN late_closed BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE payments ADD COLUMN late_by_chain BOOLEAN NOT NULL DEFAULT false;
UPDATE payments SET late_closed = true
WHERE status = 'expired' AND expires_at < now() - interval '24 hours 30 minutes'
  AND expires_at > now() - interval '50 hours';

-- +goose Down
ALTER TABLE payments DROP COLUMN late_by_chain;
ALTER TABLE payments DROP COLUMN late_closed;
