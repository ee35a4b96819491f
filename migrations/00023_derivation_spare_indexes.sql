-- +goose Up
-- Derivation indexes a per_payment creation reserved before its transaction
-- (store.reserveIndex) and then did not use: the creation was refused, or
-- it turned out to be the idempotent repeat of a concurrent one. No address
-- was derived or shown at them, so the next derivation of the wallet and
-- family takes the lowest of them before a new index: a caller's refused or
-- repeated requests leave no run of unused addresses for the merchant's
-- wallet software to stop at (issue 24).
CREATE TABLE derivation_spare_indexes (
    wallet_id         BIGINT NOT NULL REFERENCES wallets (id),
    family            TEXT NOT NULL CHECK (family IN ('evm', 'tron')),
    derivation_index  BIGINT NOT NULL CHECK (derivation_index >= 1),
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (wallet_id, family, derivation_index)
);

-- +goose Down
DROP TABLE derivation_spare_indexes;
