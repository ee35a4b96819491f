-- +goose Up
-- A transfer's timeline (issue 27, item 3): every mark an owner puts on an
-- unmatched transfer is kept, oldest first by id, so that a second mark
-- (a corrected note, a refund after a credit) no longer erases who did the
-- first. chain_transfers.handled_* stay the current mark, which the list
-- reads and filters on; store.MarkTransferHandled writes both in one
-- transaction. Rows are never updated or deleted, except with their
-- transfer: a new devnet run clears its network's recorded transfers
-- (store.StartDevnetRun), and their marks go with them.
CREATE TABLE chain_transfer_marks (
    id          BIGSERIAL PRIMARY KEY,
    network     TEXT NOT NULL,
    tx_hash     TEXT NOT NULL,
    log_index   BIGINT NOT NULL,
    project_id  BIGINT NOT NULL REFERENCES projects (id),
    at          TIMESTAMPTZ NOT NULL,
    marked_by   TEXT NOT NULL,
    note        TEXT NOT NULL CHECK (char_length(note) <= 500),
    FOREIGN KEY (network, tx_hash, log_index) REFERENCES chain_transfers (network, tx_hash, log_index) ON DELETE CASCADE
);
-- One transfer's marks in order: its timeline, and the dashboard's page of
-- transfers (and the cascade above) read by this.
CREATE INDEX chain_transfer_marks_transfer_idx ON chain_transfer_marks (network, tx_hash, log_index, id);

-- Backfill: each transfer marked before the upgrade gets its current mark
-- as its first. Marks it replaced were never kept and stay unknown.
INSERT INTO chain_transfer_marks (network, tx_hash, log_index, project_id, at, marked_by, note)
SELECT network, tx_hash, log_index, project_id, handled_at, COALESCE(handled_by, ''), COALESCE(handled_note, '')
FROM chain_transfers
WHERE handled_at IS NOT NULL AND project_id IS NOT NULL
ORDER BY handled_at, network, tx_hash, log_index;

-- +goose Down
DROP TABLE chain_transfer_marks;
