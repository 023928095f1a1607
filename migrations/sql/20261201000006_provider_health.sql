-- +goose Up
-- A provider's health, shared by every replica: when its lookups fail
-- transiently again and again, it is down for the whole cluster — lookups
-- pause (their budgets stop), one probe at a time asks it at a backoff,
-- and it is up again as soon as a probe is answered. One row per provider
-- that has ever been down; a provider without a row is up.
CREATE TABLE sweeper.provider_health (
    provider          text PRIMARY KEY,
    state             text             NOT NULL,
    -- When the current state began.
    since             timestamptz      NOT NULL,
    -- Seconds spent down before the current state: a lookup's budget
    -- leaves out the time its provider was down.
    down_seconds      double precision NOT NULL DEFAULT 0,
    -- While down: when the next probe may ask, the wait after that one,
    -- and the lease of the probe in flight.
    probe_at          timestamptz,
    probe_backoff     interval         NOT NULL DEFAULT '5 seconds',
    probe_lease_until timestamptz,
    -- The last error that counted, for people (redacted like any other).
    last_error        text,
    updated_at        timestamptz      NOT NULL DEFAULT now(),

    CONSTRAINT provider_health_state_check CHECK (state IN ('up', 'down')),
    CONSTRAINT provider_health_down_seconds_check CHECK (down_seconds >= 0)
);

-- +goose Down
DROP TABLE sweeper.provider_health;
