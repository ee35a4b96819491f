-- +goose Up
-- What the merchant API (issue 5) adds to the core schema.

-- A payment created without a network keeps that fact after the customer
-- selects one, so an idempotent repeat of the network-less request still
-- finds it.
ALTER TABLE payments ADD COLUMN created_without_network BOOLEAN NOT NULL DEFAULT false;

-- per_user and dedicated: one in-progress payment per customer, network and
-- token. Two concurrent creates cannot both win: the second insert waits for
-- the first and then sees the conflict.
CREATE UNIQUE INDEX payments_in_progress_idx ON payments (project_id, external_ref, network, token)
    WHERE status IN ('pending', 'confirming', 'partial')
      AND address_mode IN ('per_user', 'dedicated')
      AND network IS NOT NULL;

-- pool + txid: the least busy static address is chosen by counting its
-- in-progress payments.
CREATE INDEX payments_static_in_progress_idx ON payments (static_address_id)
    WHERE static_address_id IS NOT NULL AND status IN ('pending', 'confirming', 'partial');

-- pool + micro_amount: ReleaseAddress finds a payment's offset by payment.
CREATE INDEX micro_offsets_payment_idx ON micro_offsets (payment_id);

-- Old rate-limit windows are pruned by window_start.
CREATE INDEX rate_limits_window_idx ON rate_limits (window_start);

-- +goose Down
DROP INDEX rate_limits_window_idx;
DROP INDEX micro_offsets_payment_idx;
DROP INDEX payments_static_in_progress_idx;
DROP INDEX payments_in_progress_idx;
ALTER TABLE payments DROP COLUMN created_without_network;
