-- +goose Up
-- Each provider's rate limit, shared by every replica: a token bucket per
-- provider (rate_limit tokens a second, at most as many as one second's
-- worth held). A request takes a token in one statement; the bucket may go
-- into debt, and the request whose token made the debt waits until its turn
-- (debt ÷ rate). Times are the database's, so replicas with skewed clocks
-- share one bucket alike.
CREATE TABLE sweeper.provider_rate (
    provider   text             PRIMARY KEY,
    tokens     double precision NOT NULL,
    updated_at timestamptz      NOT NULL
);

-- +goose Down
DROP TABLE sweeper.provider_rate;
