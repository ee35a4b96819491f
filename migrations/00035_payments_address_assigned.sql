-- +goose NO TRANSACTION
-- +goose Up
-- The payment last given an address on another network before a transfer
-- was seen (store's classification, reason other_network): probed by the
-- time the address was assigned, newest first, so that an old transfer
-- reads one row rather than every payment given the address after it.
-- Built CONCURRENTLY: payments takes writes while replicas start.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_address_assigned_idx
    ON payments (network, address, (COALESCE(address_assigned_at, created_at)) DESC, id DESC)
    WHERE address IS NOT NULL AND start_block IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS payments_address_assigned_idx;
