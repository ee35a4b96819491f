-- +goose Up
-- A deposit address belongs to one project. The scanners match a transfer
-- by network and address only, so an address two projects share would
-- credit a payment in each of them.

-- What an xPub derives, independent of how it is written: the family's
-- address at the first payment index (an account xpub at depth 3 and its
-- external chain at depth 4 are different strings that derive the same
-- addresses). The store computes it when an xPub is saved; rows saved
-- before this migration keep NULL until their xPub is saved again, since
-- SQL cannot derive addresses.
ALTER TABLE wallets
    ADD COLUMN xpub_evm_fingerprint  TEXT,
    ADD COLUMN xpub_tron_fingerprint TEXT;
CREATE UNIQUE INDEX wallets_xpub_evm_fingerprint_idx ON wallets (xpub_evm_fingerprint)
    WHERE xpub_evm_fingerprint IS NOT NULL;
CREATE UNIQUE INDEX wallets_xpub_tron_fingerprint_idx ON wallets (xpub_tron_fingerprint)
    WHERE xpub_tron_fingerprint IS NOT NULL;

-- A static address is registered by one wallet only. The store checked this
-- with a read before its insert, which two concurrent registrations could
-- both pass; the index settles the race. (It fails to build only if such a
-- race already left a duplicate, which must then be removed by hand.)
CREATE UNIQUE INDEX static_addresses_network_address_idx ON static_addresses (network, address);

-- +goose Down
DROP INDEX static_addresses_network_address_idx;
DROP INDEX wallets_xpub_tron_fingerprint_idx;
DROP INDEX wallets_xpub_evm_fingerprint_idx;
ALTER TABLE wallets
    DROP COLUMN xpub_tron_fingerprint,
    DROP COLUMN xpub_evm_fingerprint;
