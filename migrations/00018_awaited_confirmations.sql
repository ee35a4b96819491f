-- +goose Up
-- The transfers each payment counts but that still wait for their
-- network's confirmations (issue 15). The payment workflow's state save
-- keeps this table in step with the payment's unconfirmed transactions; a
-- network's scanner, which sees every block, reads the rows whose block has
-- the confirmations at the head it just saw, checks the block is still
-- canonical and signals the payment once (signalled_at). A transfer mined
-- again in another block gets its new block and is signalled again.
CREATE TABLE awaited_confirmations (
    payment_id    UUID NOT NULL REFERENCES payments (id) ON DELETE CASCADE,
    network       TEXT NOT NULL,
    tx_hash       TEXT NOT NULL,
    log_index     BIGINT NOT NULL,
    block_number  BIGINT NOT NULL,
    block_hash    TEXT NOT NULL,
    signalled_at  TIMESTAMPTZ,
    PRIMARY KEY (payment_id, network, tx_hash, log_index)
);
CREATE INDEX awaited_confirmations_due_idx ON awaited_confirmations (network, block_number) WHERE signalled_at IS NULL;

-- Payments confirming when this migration runs are awaited from now on:
-- open ones, and expired ones still inside their 24-hour late window.
INSERT INTO awaited_confirmations (payment_id, network, tx_hash, log_index, block_number, block_hash)
SELECT p.id, p.network, t->>'tx_hash', COALESCE((t->>'log_index')::bigint, 0), (t->>'block_number')::bigint, t->>'block_hash'
FROM payments p
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(p.transactions) = 'array' THEN p.transactions ELSE '[]'::jsonb END) t
WHERE p.network IS NOT NULL
  AND (p.status IN ('pending', 'confirming', 'partial') OR p.status = 'expired' AND p.expires_at > now() - interval '24 hours')
  AND NOT COALESCE((t->>'confirmed')::boolean, false)
  AND t->>'tx_hash' IS NOT NULL AND t->>'block_hash' IS NOT NULL AND t->>'block_number' IS NOT NULL
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TABLE awaited_confirmations;
