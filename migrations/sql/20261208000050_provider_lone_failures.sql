-- +goose Up
-- The operations a provider failed while it answered others: a failure of
-- one of them, reported by a lookup, and followed in the same process by
-- the provider's answer to another operation. Their later failures are
-- their own — they never count toward the provider's outage, whichever
-- replica sees them — until the provider answers them, or for a week
-- after their last failure. Rows come and go with such failures only: a
-- provider that answers everyone writes none.
CREATE TABLE sweeper.provider_lone_failures (
    provider  text        NOT NULL,
    op_key    text        NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, op_key)
);

-- +goose Down
DROP TABLE sweeper.provider_lone_failures;
