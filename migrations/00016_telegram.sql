-- +goose Up
-- Chat notifications on Telegram (operations.md §7, issue 14).

-- The chat a project's notifications go to: a chat id ("123456789",
-- "-1001234567890") or a public channel ("@shop_payments").
ALTER TABLE projects ADD COLUMN telegram_chat_id TEXT CHECK (length(telegram_chat_id) BETWEEN 1 AND 64);

-- One-time codes of https://t.me/<bot>?start=<code>: pressing Start in
-- Telegram sends "/start <code>", and the bot's poller links that chat.
-- Only the SHA-256 of a code is kept.
CREATE TABLE telegram_link_codes (
    code_hash   BYTEA PRIMARY KEY,
    project_id  BIGINT NOT NULL REFERENCES projects (id),
    expires_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One message per webhook event of a project with a chat, counted against
-- the daily chat quota when queued; over it the row is 'skipped'. A sent
-- message keeps Telegram's message_id, so a retry after a crash that
-- follows the acknowledgement does not send it again.
CREATE TABLE chat_messages (
    event_id             UUID PRIMARY KEY REFERENCES webhook_events (event_id),
    project_id           BIGINT NOT NULL REFERENCES projects (id),
    payment_id           UUID NOT NULL REFERENCES payments (id),
    chat_id              TEXT NOT NULL,
    text_body            TEXT NOT NULL,
    state                TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed', 'skipped')),
    attempts             INTEGER NOT NULL DEFAULT 0,
    telegram_message_id  BIGINT,
    last_error           TEXT,
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX chat_messages_payment_idx ON chat_messages (payment_id);

-- The bot's getUpdates offset: the next update to read.
CREATE TABLE telegram_state (
    id             BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
    update_offset  BIGINT NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE telegram_state;
DROP TABLE chat_messages;
DROP TABLE telegram_link_codes;
ALTER TABLE projects DROP COLUMN telegram_chat_id;
