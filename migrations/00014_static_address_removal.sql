-- +goose Up
-- A merchant can take a static address out of the wallet in the dashboard
-- (issue 13). Payments keep a reference to the address they used
-- (payments.static_address_id), so the row stays and is marked: a removed
-- address is offered to no new payment, and adding it again clears the mark.
ALTER TABLE static_addresses ADD COLUMN removed_at TIMESTAMPTZ;

-- +goose Down
DELETE FROM static_addresses WHERE removed_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.static_address_id = static_addresses.id);
ALTER TABLE static_addresses DROP COLUMN removed_at;
