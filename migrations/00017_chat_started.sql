-- +goose Up
-- started is set once a ChatWorkflow was started for the message by the
-- payment workflow or by the reconciler, which starts the others (a child
-- start lost to a rolling deploy or a terminated payment workflow).
ALTER TABLE chat_messages ADD COLUMN started BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX chat_messages_unstarted_idx ON chat_messages (created_at) WHERE state = 'pending' AND NOT started;

-- +goose Down
DROP INDEX chat_messages_unstarted_idx;
ALTER TABLE chat_messages DROP COLUMN started;
