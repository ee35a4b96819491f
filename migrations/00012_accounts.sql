-- +goose Up
-- The merchant dashboard's accounts (operations.md §6): how an account signs
-- in, its sessions, the single-use links it is e-mailed, and the viewers of
-- projects. The columns are NULL for operator-created accounts until their
-- first password is set.
ALTER TABLE accounts
    -- argon2id in the PHC string form ($argon2id$v=19$m=...,t=...,p=...$salt$key).
    ADD COLUMN password_hash        TEXT,
    ADD COLUMN email_confirmed_at   TIMESTAMPTZ,
    -- TOTP (RFC 6238) shared secrets, base32. They are stored readable:
    -- the server must compute the same codes as the authenticator app, so
    -- a hash would not do (unlike passwords).
    ADD COLUMN totp_secret          TEXT,
    -- totp_pending_secret waits for the first code that proves the app has
    -- it; only then does it become totp_secret.
    ADD COLUMN totp_pending_secret  TEXT,
    -- The newest 30-second step whose code was accepted: a code of that
    -- step or an earlier one is refused (replay protection).
    ADD COLUMN totp_last_step       BIGINT,
    -- argon2id, like the password.
    ADD COLUMN protection_key_hash  TEXT;

-- One-time recovery codes of two-factor sign-in; only SHA-256 hashes of
-- the account id and the code are stored.
CREATE TABLE account_recovery_codes (
    account_id  BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    code_hash   BYTEA NOT NULL,
    used_at     TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, code_hash)
);

-- Single-use links sent by e-mail. The link carries 32 random bytes; only
-- their SHA-256 is stored. A link is consumed by setting used_at, in the
-- transaction that does what it allows.
CREATE TABLE account_tokens (
    token_hash     BYTEA PRIMARY KEY,
    purpose        TEXT NOT NULL CHECK (purpose IN ('confirm', 'set_password', 'reset', 'invite')),
    email          TEXT NOT NULL CHECK (email = lower(email)),
    -- The account the link is for (set_password and reset).
    account_id     BIGINT REFERENCES accounts (id) ON DELETE CASCADE,
    -- The project of an invitation.
    project_id     BIGINT REFERENCES projects (id) ON DELETE CASCADE,
    -- A registration's password, hashed, until the address is confirmed.
    password_hash  TEXT,
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    used_at        TIMESTAMPTZ,
    CHECK (purpose <> 'invite' OR project_id IS NOT NULL),
    CHECK (purpose <> 'confirm' OR password_hash IS NOT NULL)
);
CREATE INDEX account_tokens_open_idx ON account_tokens (purpose, email) WHERE used_at IS NULL;
CREATE INDEX account_tokens_project_idx ON account_tokens (project_id) WHERE project_id IS NOT NULL;
CREATE INDEX account_tokens_expires_idx ON account_tokens (expires_at);

-- Signed-in browsers. The cookie carries 32 random bytes; only their
-- SHA-256 is stored. A pending row is a sign-in waiting for its second
-- factor: it opens no page and lives five minutes.
CREATE TABLE dashboard_sessions (
    token_hash    BYTEA PRIMARY KEY,
    account_id    BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    pending       BOOLEAN NOT NULL DEFAULT false,
    csrf_token    TEXT NOT NULL,
    ip            TEXT NOT NULL DEFAULT '',
    user_agent    TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL,
    last_seen_at  TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX dashboard_sessions_account_idx ON dashboard_sessions (account_id);
CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_at);

-- Accounts invited to view a project's payments (the owner is the
-- project's owner_id, never a row here).
CREATE TABLE project_viewers (
    project_id  BIGINT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    account_id  BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (project_id, account_id)
);
CREATE INDEX project_viewers_account_idx ON project_viewers (account_id);

-- +goose Down
DROP TABLE project_viewers;
DROP TABLE dashboard_sessions;
DROP TABLE account_tokens;
DROP TABLE account_recovery_codes;
ALTER TABLE accounts
    DROP COLUMN protection_key_hash,
    DROP COLUMN totp_last_step,
    DROP COLUMN totp_pending_secret,
    DROP COLUMN totp_secret,
    DROP COLUMN email_confirmed_at,
    DROP COLUMN password_hash;
