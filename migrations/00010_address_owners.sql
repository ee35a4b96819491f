-- +goose Up
-- One address, one project (issue 10). The scanners match a transfer by
-- network and address only, so an address that one project registered as a
-- static address and another project's xPub derives would show one transfer
-- as paid in both. The unique indexes of 00007 only compared static with
-- static addresses (per network) and xPub with xPub.
--
-- Every deposit address now has one owner wallet, recorded here in the
-- transaction that registers or derives it; the primary key settles a race
-- between a registration and a derivation. Ownership is per address family:
-- an EVM address is the same account on all four EVM networks.
CREATE TABLE address_owners (
    family      TEXT NOT NULL CHECK (family IN ('evm', 'tron')),
    -- Normalised as in static_addresses and derived_addresses.
    address     TEXT NOT NULL,
    wallet_id   BIGINT NOT NULL REFERENCES wallets (id),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (family, address)
);
CREATE INDEX address_owners_wallet_idx ON address_owners (wallet_id);

-- Backfill, oldest registration or derivation first: where earlier rows
-- already put one address in two wallets, the first keeps it. Such pairs
-- stay in static_addresses and derived_addresses (SQL cannot tell which
-- project the funds were meant for); the operator finds them with
--   SELECT s.* FROM static_addresses s JOIN address_owners o ON o.address = s.address
--   WHERE o.wallet_id <> s.wallet_id;
-- and the losing project's next PUT of that address gets a 409.
INSERT INTO address_owners (family, address, wallet_id, created_at)
SELECT family, address, wallet_id, created_at FROM (
    SELECT CASE network WHEN 'TRC20' THEN 'tron' ELSE 'evm' END AS family,
           address, wallet_id, created_at, id, 0 AS source
    FROM static_addresses
    UNION ALL
    SELECT family, address, wallet_id, created_at, id, 1 AS source
    FROM derived_addresses
) AS a
ORDER BY created_at, source, id
ON CONFLICT (family, address) DO NOTHING;

-- Payment links (issue 10): a link may have only so many payments in
-- progress (store.MaxOpenLinkPayments); creation counts them under the
-- link's row lock on every submission.
CREATE INDEX payments_link_open_idx ON payments (payment_link_id)
    WHERE payment_link_id IS NOT NULL AND status IN ('pending', 'confirming', 'partial');

-- +goose Down
DROP INDEX payments_link_open_idx;
DROP TABLE address_owners;
