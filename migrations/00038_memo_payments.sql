-- +goose Up
-- Memo payments (issue 40; operations.md §9): per_payment and per_user
-- payments on a network whose wallets have no watch-only derivation
-- (SOLANA) share the wallet's first registered address and are told apart
-- by a memo, a Solana Pay reference. A per_payment memo is the payment's
-- own; a per_user memo is kept per (wallet, external_ref, network, token)
-- in user_memos, like a per_user address. A transfer records the memos it
-- carried, so that a payment's final check and the classification of
-- unmatched funds apply the same rule as the scanner.
ALTER TABLE payments ADD COLUMN memo TEXT;
CREATE INDEX payments_memo_idx ON payments (network, address, memo) WHERE memo IS NOT NULL;

CREATE TABLE user_memos (
    wallet_id     BIGINT NOT NULL REFERENCES wallets (id) ON DELETE CASCADE,
    external_ref  TEXT NOT NULL,
    network       TEXT NOT NULL,
    token         TEXT NOT NULL,
    memo          TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (wallet_id, external_ref, network, token),
    UNIQUE (network, memo)
);

ALTER TABLE chain_transfers ADD COLUMN memos TEXT[] NOT NULL DEFAULT '{}';

-- How far each watched account of a network read per account (SOLANA: a
-- wallet's associated token account of a mint) has been read: its newest
-- signature at or below the network's cursor, and the slot it was read
-- through (the batch's last), moved with the cursor in the scanner's
-- transaction.
CREATE TABLE account_cursors (
    network     TEXT NOT NULL,
    account     TEXT NOT NULL,
    owner       TEXT NOT NULL,
    signature   TEXT NOT NULL DEFAULT '',
    slot        BIGINT NOT NULL DEFAULT 0 CHECK (slot >= 0),
    through     BIGINT NOT NULL DEFAULT 0 CHECK (through >= 0),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (network, account)
);

-- A Solana wallet is owned like any registered address.
ALTER TABLE address_owners DROP CONSTRAINT address_owners_family_check;
ALTER TABLE address_owners ADD CONSTRAINT address_owners_family_check CHECK (family IN ('evm', 'tron', 'solana'));

-- +goose Down
DELETE FROM address_owners WHERE family = 'solana';
ALTER TABLE address_owners DROP CONSTRAINT address_owners_family_check;
ALTER TABLE address_owners ADD CONSTRAINT address_owners_family_check CHECK (family IN ('evm', 'tron'));
DROP TABLE account_cursors;
ALTER TABLE chain_transfers DROP COLUMN memos;
DROP TABLE user_memos;
DROP INDEX payments_memo_idx;
ALTER TABLE payments DROP COLUMN memo;
