-- +goose Up
-- A redelivery replaces the event's running delivery, but the replaced
-- run's last writes (an attempt in flight, its log entry) can land after
-- the redelivery was accepted. Each redelivery starts a new generation;
-- a run carries the generation it was started for, and a write from an
-- older one no longer sets the event's state nor sends the event, so a
-- late "failed" cannot undo an accepted redelivery. Existing events and
-- their running deliveries are generation 0. started_generation is the
-- latest generation whose run was started: a redelivery whose start failed
-- is started by the reconciler in place of the run it replaced, which may
-- still hold the event's workflow ID.
ALTER TABLE webhook_events ADD COLUMN generation integer NOT NULL DEFAULT 0,
	ADD COLUMN started_generation integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE webhook_events DROP COLUMN generation, DROP COLUMN started_generation;
