-- +goose Up
-- Unmatched funds are told (issue 27): each unmatched transfer becomes one
-- transfer.unmatched event in the project's event log (webhook_events,
-- without a payment), sent as a webhook when the project opted in
-- (unmatched_webhooks, off by default so that existing receivers see
-- nothing new) and as a Telegram message when the project has a chat.
-- notified_at marks a transfer whose verdict is settled: told when
-- unmatched, or left silent when a finished payment holds it or it is
-- below the dust minimum. Transfers recorded before the upgrade have none,
-- so the first pass tells every unmatched one received before it too.
ALTER TABLE projects ADD COLUMN unmatched_webhooks BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE chain_transfers ADD COLUMN notified_at TIMESTAMPTZ;
CREATE INDEX chain_transfers_unsettled_idx ON chain_transfers (network, block_number)
    WHERE notified_at IS NULL AND project_id IS NOT NULL;

ALTER TABLE webhook_events ALTER COLUMN payment_id DROP NOT NULL,
    ADD COLUMN network TEXT, ADD COLUMN tx_hash TEXT, ADD COLUMN log_index BIGINT,
    ADD CONSTRAINT webhook_events_subject CHECK (payment_id IS NOT NULL OR tx_hash IS NOT NULL);
-- One event per transfer: its event_id is derived from the transfer's key,
-- and this index keeps a second one out whatever the id.
CREATE UNIQUE INDEX webhook_events_transfer_idx ON webhook_events (network, tx_hash, log_index)
    WHERE tx_hash IS NOT NULL;
ALTER TABLE chat_messages ALTER COLUMN payment_id DROP NOT NULL;

-- Index probes for each transfer classified (store.classifiedSQL): the
-- payment an address served last before a transfer's block, and the
-- payments on an address that may still take one, without reading a pool
-- address's finished payments.
CREATE INDEX payments_address_start_idx ON payments (network, address, start_block DESC, created_at DESC, id DESC) WHERE address IS NOT NULL;
CREATE INDEX payments_open_address_idx ON payments (network, address) WHERE status IN ('pending', 'confirming', 'partial');
CREATE INDEX payments_expired_address_idx ON payments (network, address, expires_at) WHERE status = 'expired';

-- +goose Down
DROP INDEX payments_address_start_idx;
DROP INDEX payments_open_address_idx;
DROP INDEX payments_expired_address_idx;
DELETE FROM chat_messages WHERE payment_id IS NULL;
DELETE FROM webhook_attempts a USING webhook_events e WHERE a.event_id = e.event_id AND e.payment_id IS NULL;
DELETE FROM webhook_events WHERE payment_id IS NULL;
ALTER TABLE chat_messages ALTER COLUMN payment_id SET NOT NULL;
DROP INDEX webhook_events_transfer_idx;
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_subject,
    DROP COLUMN network, DROP COLUMN tx_hash, DROP COLUMN log_index,
    ALTER COLUMN payment_id SET NOT NULL;
DROP INDEX chain_transfers_unsettled_idx;
ALTER TABLE chain_transfers DROP COLUMN notified_at;
ALTER TABLE projects DROP COLUMN unmatched_webhooks;
