-- +goose Up
-- Payment links (issue 7): reusable pages at {pay_url}/l/{slug} that create
-- a payment for a buyer.

CREATE TABLE payment_links (
    id          UUID PRIMARY KEY,
    project_id  BIGINT NOT NULL REFERENCES projects (id),
    -- Links live under one URL space ({pay_url}/l/{slug}), so slugs are
    -- unique across projects.
    slug        TEXT NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(slug) <= 63),
    title       TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    -- The fixed amount in base units at "decimals"; NULL when the buyer
    -- enters the amount.
    amount      NUMERIC(78, 0) CHECK (amount > 0),
    decimals    SMALLINT CHECK (decimals BETWEEN 0 AND 36),
    -- NULL token: the buyer picks any token with the network; NULL network:
    -- the buyer picks the network on the payment page.
    token       TEXT,
    network     TEXT,
    active      BOOLEAN NOT NULL DEFAULT true,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((amount IS NULL) = (decimals IS NULL))
);
CREATE INDEX payment_links_project_idx ON payment_links (project_id);

-- A link payment records its link and what the buyer entered; webhooks
-- carry them (store.WebhookPaymentInfo reads these columns, and the slug
-- from payment_links).
ALTER TABLE payments
    ADD COLUMN payment_link_id UUID REFERENCES payment_links (id),
    ADD COLUMN buyer_email     TEXT CHECK (length(buyer_email) <= 254),
    ADD COLUMN buyer_name      TEXT CHECK (length(buyer_name) <= 100),
    ADD COLUMN buyer_note      TEXT CHECK (length(buyer_note) <= 500);
CREATE INDEX payments_payment_link_idx ON payments (payment_link_id) WHERE payment_link_id IS NOT NULL;

-- +goose Down
DROP INDEX payments_payment_link_idx;
ALTER TABLE payments
    DROP COLUMN buyer_note,
    DROP COLUMN buyer_name,
    DROP COLUMN buyer_email,
    DROP COLUMN payment_link_id;
DROP TABLE payment_links;
