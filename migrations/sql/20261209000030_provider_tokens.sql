-- +goose Up
-- The newest OAuth tokens of adapters whose provider rotates refresh
-- tokens (QuickBooks Online), one row per provider account: a refresh
-- spends the stored refresh token under this row's lock, so two replicas
-- never spend one, and a restart starts from the newest. The columns hold
-- live credentials: protect this table like the database's own password
-- (sweeper never logs them). seed_sha256 is the SHA-256 of the refresh
-- token the configuration gave when the row began: a new one configured
-- replaces what is stored.
CREATE TABLE sweeper.provider_tokens (
    key           text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 200),
    seed_sha256   text NOT NULL CHECK (seed_sha256 ~ '^[0-9a-f]{64}$'),
    access_token  text NOT NULL,
    refresh_token text NOT NULL,
    refreshed_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE sweeper.provider_tokens;
