-- +goose Up
-- The payments a scanner waits for at block pace, by network
-- (store.Waiting): those in progress. An idle scanner asks every second
-- whether one exists on its network (issue 26), which without this index
-- reads every payment the network ever had.
CREATE INDEX payments_waiting_idx ON payments (network)
    WHERE address IS NOT NULL AND status IN ('pending', 'confirming', 'partial');

-- +goose Down
DROP INDEX payments_waiting_idx;
