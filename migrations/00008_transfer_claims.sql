-- +goose Up
-- A transfer counts for one payment at most (issue 10). The scanners
-- signalled every payment watching a shared pool address, and each
-- pool + micro_amount workflow decided on its own whether a transfer was
-- its; two payments within the match window of one transfer both took it.
-- Now the payment a transfer counts for is chosen once (the nearest amount,
-- then the oldest payment) and recorded here; the primary key settles a
-- race between a scanner and a payment's final check.
CREATE TABLE transfer_claims (
    network     TEXT NOT NULL,
    tx_hash     TEXT NOT NULL,
    log_index   BIGINT NOT NULL,
    payment_id  UUID NOT NULL REFERENCES payments (id),
    to_address  TEXT NOT NULL,
    token       TEXT NOT NULL,
    amount      NUMERIC(78, 0) NOT NULL CHECK (amount >= 0),
    -- Set in the transaction that saves the payment state in which the
    -- transfer first counts as confirmed; the amount is then added to the
    -- derived address's received total once.
    counted_at  TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (network, tx_hash, log_index)
);
CREATE INDEX transfer_claims_payment_idx ON transfer_claims (payment_id);

-- +goose Down
DROP TABLE transfer_claims;
