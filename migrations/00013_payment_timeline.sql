-- +goose Up
-- What the merchant dashboard (operations.md §6) adds: a payment's status
-- timeline, and wallets a merchant can delete.

-- Every status a payment went through, oldest first by id: the creation
-- (pending, at created_at) in the creating transaction, then one row per
-- saved state whose status differs from the last row, in the transaction
-- that saves it (store.SavePaymentState). paid_amount is in base units at
-- "decimals", as the payment had them then. state_version is the saved
-- state's version (0 for the creation); the unique index makes a replayed
-- save add nothing, whatever the path.
CREATE TABLE payment_status_changes (
    id             BIGSERIAL PRIMARY KEY,
    payment_id     UUID NOT NULL REFERENCES payments (id),
    status         TEXT NOT NULL
                   CHECK (status IN ('pending', 'confirming', 'partial', 'paid', 'overpaid', 'expired', 'cancelled')),
    paid_amount    NUMERIC(78, 0) NOT NULL DEFAULT 0,
    decimals       SMALLINT NOT NULL CHECK (decimals BETWEEN 0 AND 36),
    state_version  BIGINT NOT NULL DEFAULT 0,
    at             TIMESTAMPTZ NOT NULL,
    UNIQUE (payment_id, state_version)
);

-- Backfill: each existing payment's creation, then its current status when
-- that is no longer pending (at updated_at, the time of its last save).
-- Intermediate changes were never recorded and stay unknown.
INSERT INTO payment_status_changes (payment_id, status, paid_amount, decimals, state_version, at)
SELECT id, 'pending', 0, decimals, 0, created_at FROM payments ORDER BY created_at, id;
INSERT INTO payment_status_changes (payment_id, status, paid_amount, decimals, state_version, at)
SELECT id, status, paid_amount, decimals, state_version, updated_at FROM payments
WHERE status <> 'pending'
ORDER BY created_at, id
ON CONFLICT (payment_id, state_version) DO NOTHING;

-- A deleted wallet is detached from its project rather than removed: its
-- derivation counters, derived addresses and address_owners rows must
-- outlive it, or re-adding the same xPub would hand out used addresses
-- again. Detached (project_id NULL, deleted_from the project), it is no
-- project's wallet, so every read by project_id (the wallet itself,
-- has_wallet, the wallet plan limit) leaves it out without knowing of
-- deletion; the scanners watch payments, not wallets, so the addresses of
-- payments still in their window stay watched. The project's next PUT of
-- a wallet reattaches it (store.PutWallet), counters and all.
ALTER TABLE wallets
    ALTER COLUMN project_id DROP NOT NULL,
    ADD COLUMN deleted_from BIGINT REFERENCES projects (id),
    ADD COLUMN deleted_at   TIMESTAMPTZ,
    ADD CONSTRAINT wallets_attached_or_deleted CHECK (
        (project_id IS NULL) = (deleted_from IS NOT NULL) AND (deleted_from IS NULL) = (deleted_at IS NULL));
CREATE UNIQUE INDEX wallets_deleted_from_idx ON wallets (deleted_from) WHERE deleted_from IS NOT NULL;

-- +goose Down
-- Deleted wallets come back attached: the old schema cannot hold them
-- otherwise.
DROP INDEX wallets_deleted_from_idx;
ALTER TABLE wallets DROP CONSTRAINT wallets_attached_or_deleted;
UPDATE wallets SET project_id = deleted_from WHERE project_id IS NULL;
ALTER TABLE wallets
    DROP COLUMN deleted_at,
    DROP COLUMN deleted_from,
    ALTER COLUMN project_id SET NOT NULL;
DROP TABLE payment_status_changes;
