-- +goose Up
-- RPC requests per network and UTC day (issue 26): each network's scanner
-- adds the requests its chain client made, every 30 s and when its run
-- ends, with the daily budget it runs under (0: none). /health and the
-- metrics read today's row; the scanner reads the total back, so a
-- scanner that takes over a network (another replica, a restart) goes on
-- from what the day has used.
CREATE TABLE rpc_usage (
    network    TEXT NOT NULL,
    day        DATE NOT NULL,
    requests   BIGINT NOT NULL DEFAULT 0 CHECK (requests >= 0),
    budget     BIGINT NOT NULL DEFAULT 0 CHECK (budget >= 0),
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (network, day)
);

-- +goose Down
DROP TABLE rpc_usage;
