-- +goose Up
-- Unmatched funds (issue 27). The scanners recorded only the transfers that
-- a watched payment took; now every token transfer to an address a project
-- owns or has owned (address_owners: derived, static, removed, or of a
-- replaced xPub) is recorded, with that project, so that money no payment
-- counted is listed (store.ProjectTransfers classifies each transfer when
-- it is read) and the merchant can mark it handled.
ALTER TABLE chain_transfers
    ADD COLUMN project_id   BIGINT REFERENCES projects (id),
    ADD COLUMN handled_at   TIMESTAMPTZ,
    ADD COLUMN handled_by   TEXT,
    ADD COLUMN handled_note TEXT CHECK (char_length(handled_note) <= 500);

-- The transfers recorded before the upgrade get their project once, here,
-- and so are classified like every later one.
-- A deleted wallet's addresses stay its project's (deleted_from).
UPDATE chain_transfers t SET project_id = COALESCE(w.project_id, w.deleted_from)
FROM address_owners o JOIN wallets w ON w.id = o.wallet_id
WHERE o.family = CASE t.network WHEN 'TRC20' THEN 'tron' ELSE 'evm' END
  AND o.address = t.to_address;

CREATE INDEX chain_transfers_project_idx ON chain_transfers (project_id, created_at DESC) WHERE project_id IS NOT NULL;

-- +goose Down
DROP INDEX chain_transfers_project_idx;
ALTER TABLE chain_transfers DROP COLUMN project_id, DROP COLUMN handled_at,
    DROP COLUMN handled_by, DROP COLUMN handled_note;
