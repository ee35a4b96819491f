-- +goose Up
-- The core schema shared by the API (issue 5), the payment workflow's
-- activities (issue 4) and the scanners (issue 6). Money columns hold integer
-- token base units (NUMERIC(78,0)) with their scale in a decimals column;
-- addresses are stored normalised (EIP-55 for EVM, base58 for Tron).

CREATE TABLE accounts (
    id          BIGSERIAL PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE CHECK (email = lower(email)),
    plan        TEXT NOT NULL CHECK (plan IN ('free', 'pro')),
    status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'closed')),
    -- Admin overrides of plan limits: {"projects": 5, "api_calls_per_day": 100000, ...}
    limits      JSONB NOT NULL DEFAULT '{}'::jsonb,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE projects (
    id                      BIGSERIAL PRIMARY KEY,
    slug                    TEXT NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
    name                    TEXT NOT NULL,
    webhook_url             TEXT,
    owner_id                BIGINT REFERENCES accounts (id),
    active                  BOOLEAN NOT NULL DEFAULT true,
    address_mode            TEXT NOT NULL DEFAULT 'per_payment'
                            CHECK (address_mode IN ('per_payment', 'per_user', 'dedicated', 'pool')),
    pool_matching           TEXT NOT NULL DEFAULT 'micro_amount' CHECK (pool_matching IN ('micro_amount', 'txid')),
    -- Decimal USD-unit settings, exact (never float).
    min_amount              NUMERIC(40, 18) CHECK (min_amount > 0),
    micro_amount_decimals   SMALLINT NOT NULL DEFAULT 3 CHECK (micro_amount_decimals BETWEEN 1 AND 4),
    rotation_threshold      NUMERIC(40, 18) CHECK (rotation_threshold > 0),
    payment_expiry_minutes  INTEGER NOT NULL DEFAULT 60 CHECK (payment_expiry_minutes BETWEEN 5 AND 1440),
    -- Credentials: only hashes of the API key and secret are kept. The
    -- webhook secret must stay usable for signing (see store for its handling).
    api_key_hash            BYTEA UNIQUE,
    api_key_prefix          TEXT,
    api_secret_hash         BYTEA,
    webhook_secret          TEXT,
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at              TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX projects_owner_idx ON projects (owner_id);

-- One wallet per project: an xPub per address family and/or static addresses.
CREATE TABLE wallets (
    id          BIGSERIAL PRIMARY KEY,
    project_id  BIGINT NOT NULL UNIQUE REFERENCES projects (id),
    name        TEXT NOT NULL DEFAULT '',
    xpub_evm    TEXT,
    xpub_tron   TEXT,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The derivation counter per (wallet, family). Index 0 is reserved for gas;
-- payment addresses start at 1. Taken with UPDATE ... RETURNING, so two
-- concurrent payments never get the same index.
CREATE TABLE wallet_counters (
    wallet_id   BIGINT NOT NULL REFERENCES wallets (id),
    family      TEXT NOT NULL CHECK (family IN ('evm', 'tron')),
    next_index  BIGINT NOT NULL DEFAULT 1 CHECK (next_index >= 1),
    PRIMARY KEY (wallet_id, family)
);

-- Addresses derived from an xPub (per_payment and per_user modes).
CREATE TABLE derived_addresses (
    id                BIGSERIAL PRIMARY KEY,
    wallet_id         BIGINT NOT NULL REFERENCES wallets (id),
    family            TEXT NOT NULL CHECK (family IN ('evm', 'tron')),
    derivation_index  BIGINT NOT NULL CHECK (derivation_index >= 1),
    address           TEXT NOT NULL,
    -- per_user: the customer, network and token the address serves.
    external_ref      TEXT,
    network           TEXT,
    token             TEXT,
    -- Cumulative confirmed receipts, for per_user rotation_threshold.
    received          NUMERIC(78, 0) NOT NULL DEFAULT 0,
    decimals          SMALLINT NOT NULL DEFAULT 0,
    active            BOOLEAN NOT NULL DEFAULT true,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (wallet_id, family, derivation_index)
);
CREATE INDEX derived_addresses_address_idx ON derived_addresses (address);
-- per_user: at most one current address per customer + network + token.
CREATE UNIQUE INDEX derived_addresses_per_user_idx ON derived_addresses (wallet_id, external_ref, network, token)
    WHERE external_ref IS NOT NULL AND active;

-- Static addresses registered by the merchant (dedicated and pool modes).
CREATE TABLE static_addresses (
    id            BIGSERIAL PRIMARY KEY,
    wallet_id     BIGINT NOT NULL REFERENCES wallets (id),
    network       TEXT NOT NULL,
    address       TEXT NOT NULL,
    -- dedicated: the customer this address belongs to, forever.
    external_ref  TEXT,
    assigned_at   TIMESTAMPTZ,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (wallet_id, network, address)
);
CREATE UNIQUE INDEX static_addresses_dedicated_idx ON static_addresses (wallet_id, network, external_ref)
    WHERE external_ref IS NOT NULL;

CREATE TABLE payments (
    id                  UUID PRIMARY KEY,
    project_id          BIGINT NOT NULL REFERENCES projects (id),
    status              TEXT NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'confirming', 'partial', 'paid', 'overpaid', 'expired', 'cancelled')),
    address_mode        TEXT NOT NULL,
    pool_matching       TEXT,
    -- NULL until a network is selected.
    network             TEXT,
    token               TEXT,
    address             TEXT,
    -- Expected amount (including a micro offset) and the requested base
    -- amount, in base units at "decimals" (the token's once a network is set).
    amount              NUMERIC(78, 0) NOT NULL CHECK (amount > 0),
    original_amount     NUMERIC(78, 0),
    decimals            SMALLINT NOT NULL CHECK (decimals BETWEEN 0 AND 36),
    micro_offset        INTEGER,
    paid_amount         NUMERIC(78, 0) NOT NULL DEFAULT 0,
    tx_hash             TEXT,
    -- The counted transfers as the workflow last saw them (Transaction objects).
    transactions        JSONB NOT NULL DEFAULT '[]'::jsonb,
    late_payment        BOOLEAN NOT NULL DEFAULT false,
    external_ref        TEXT NOT NULL CHECK (length(external_ref) BETWEEN 1 AND 255),
    external_order_id   TEXT CHECK (length(external_order_id) <= 255),
    metadata            JSONB,
    expires_at          TIMESTAMPTZ NOT NULL,
    paid_at             TIMESTAMPTZ,
    -- When the address was assigned and the chain head then: the window in
    -- which a transfer counts, and where the final on-chain check starts.
    address_assigned_at TIMESTAMPTZ,
    start_block         BIGINT,
    derived_address_id  BIGINT REFERENCES derived_addresses (id),
    static_address_id   BIGINT REFERENCES static_addresses (id),
    -- Monotonic version of the workflow state last saved: a retried or
    -- reordered save never overwrites a newer one.
    state_version       BIGINT NOT NULL DEFAULT 0,
    -- Set once the workflow has been started; the reconciler starts any
    -- workflow whose row has none.
    workflow_started    BOOLEAN NOT NULL DEFAULT false,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX payments_project_created_idx ON payments (project_id, created_at DESC, id);
CREATE INDEX payments_project_updated_idx ON payments (project_id, updated_at);
CREATE INDEX payments_address_idx ON payments (network, address) WHERE address IS NOT NULL;
CREATE INDEX payments_unstarted_idx ON payments (created_at) WHERE NOT workflow_started;
-- Idempotency: one payment per project and external_order_id.
CREATE UNIQUE INDEX payments_order_idx ON payments (project_id, external_order_id)
    WHERE external_order_id IS NOT NULL;

-- Pool + micro_amount: the final amount in use on a static address. Unique
-- while held, so two payments can never expect the same amount at the same
-- address; released offsets stay unusable until reusable_at (6 h).
CREATE TABLE micro_offsets (
    static_address_id  BIGINT NOT NULL REFERENCES static_addresses (id),
    token              TEXT NOT NULL,
    amount             NUMERIC(78, 0) NOT NULL,
    payment_id         UUID NOT NULL REFERENCES payments (id),
    reusable_at        TIMESTAMPTZ,
    PRIMARY KEY (static_address_id, token, amount)
);

-- Pool + txid: a transaction hash counts for one payment only.
CREATE TABLE tx_claims (
    network     TEXT NOT NULL,
    tx_hash     TEXT NOT NULL,
    payment_id  UUID NOT NULL REFERENCES payments (id),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (network, tx_hash)
);

-- Every matching transfer a scanner saw, stored once.
CREATE TABLE chain_transfers (
    network       TEXT NOT NULL,
    tx_hash       TEXT NOT NULL,
    log_index     BIGINT NOT NULL,
    block_number  BIGINT NOT NULL,
    block_hash    TEXT NOT NULL,
    token         TEXT NOT NULL,
    from_address  TEXT NOT NULL,
    to_address    TEXT NOT NULL,
    amount        NUMERIC(78, 0) NOT NULL,
    removed       BOOLEAN NOT NULL DEFAULT false,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (network, tx_hash, log_index)
);
CREATE INDEX chain_transfers_to_idx ON chain_transfers (network, to_address, block_number);

-- Webhook events: one row per event, created when queued. event_id is
-- stable across retries; sequence increases per payment.
CREATE TABLE webhook_events (
    event_id    UUID PRIMARY KEY,
    project_id  BIGINT NOT NULL REFERENCES projects (id),
    payment_id  UUID NOT NULL REFERENCES payments (id),
    event       TEXT NOT NULL,
    sequence    INTEGER NOT NULL,
    payload     JSONB NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'retrying', 'skipped')),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (payment_id, sequence)
);

-- Every delivery attempt (operations.md §2 webhook-deliveries).
CREATE TABLE webhook_attempts (
    id             BIGSERIAL PRIMARY KEY,
    event_id       UUID NOT NULL REFERENCES webhook_events (event_id),
    attempt        INTEGER NOT NULL,
    status_code    INTEGER,
    response_body  TEXT CHECK (length(response_body) <= 256),
    state          TEXT NOT NULL CHECK (state IN ('delivered', 'failed', 'retrying', 'skipped')),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (event_id, attempt)
);

-- Daily counters per owner account (API calls, webhooks), reset by date (UTC).
CREATE TABLE daily_usage (
    account_id  BIGINT NOT NULL REFERENCES accounts (id),
    day         DATE NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('api_calls', 'webhooks', 'chat_notifications')),
    count       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day, kind)
);

-- Fixed-window rate limit counters shared by every API replica.
CREATE TABLE rate_limits (
    key           TEXT NOT NULL,
    window_start  TIMESTAMPTZ NOT NULL,
    count         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key, window_start)
);

-- +goose Down
DROP TABLE rate_limits;
DROP TABLE daily_usage;
DROP TABLE webhook_attempts;
DROP TABLE webhook_events;
DROP TABLE chain_transfers;
DROP TABLE tx_claims;
DROP TABLE micro_offsets;
DROP TABLE payments;
DROP TABLE static_addresses;
DROP TABLE derived_addresses;
DROP TABLE wallet_counters;
DROP TABLE wallets;
DROP TABLE projects;
DROP TABLE accounts;
