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

-- The transfers that payments already counted are claimed for them, the
-- oldest payment first where the old rules let two payments take one
-- transfer, so a new payment can never take them again. Confirmed ones are
-- marked counted, and their amounts (stored as display decimals at the
-- payment's token decimals) become their derived address's received
-- total, which nothing kept before: per_user rotation and the
-- unused-address report start from what was really received.
INSERT INTO transfer_claims (network, tx_hash, log_index, payment_id, to_address, token, amount, counted_at)
SELECT p.network, t->>'tx_hash', (t->>'log_index')::bigint, p.id, p.address, p.token,
       trunc((t->>'amount')::numeric * power(10::numeric, p.decimals)),
       CASE WHEN (t->>'confirmed')::boolean THEN now() END
FROM payments p
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(p.transactions) = 'array' THEN p.transactions ELSE '[]'::jsonb END) t
WHERE p.network IS NOT NULL AND p.address IS NOT NULL AND p.token IS NOT NULL
ORDER BY p.created_at, p.id
ON CONFLICT (network, tx_hash, log_index) DO NOTHING;

UPDATE derived_addresses d SET received = d.received + c.total
FROM (SELECT p.derived_address_id AS id, sum(c.amount) AS total
      FROM transfer_claims c JOIN payments p ON p.id = c.payment_id
      WHERE c.counted_at IS NOT NULL AND p.derived_address_id IS NOT NULL
      GROUP BY p.derived_address_id) c
WHERE d.id = c.id;

-- +goose Down
DROP TABLE transfer_claims;
UPDATE derived_addresses SET received = 0;
