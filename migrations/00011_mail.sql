-- +goose Up
-- Outgoing e-mail (operations.md §5): every message is a row before it is
-- sent, so a crash loses none, and its id is the stable Message-ID a
-- resend carries. Without PAYWATCH_SMTP_URL in dev the rows are the
-- outbox that GET /dev/mail lists.
CREATE TABLE mail_messages (
    id          UUID PRIMARY KEY,
    to_address  TEXT NOT NULL,
    subject     TEXT NOT NULL,
    text_body   TEXT NOT NULL,
    html_body   TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent')),
    -- started is set once a delivery workflow runs for the message; the
    -- reconciler starts the others.
    started     BOOLEAN NOT NULL DEFAULT false,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    sent_at     TIMESTAMPTZ
);
CREATE INDEX mail_messages_unstarted_idx ON mail_messages (created_at) WHERE state = 'pending' AND NOT started;

-- +goose Down
DROP TABLE mail_messages;
