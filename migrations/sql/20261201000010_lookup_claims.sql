-- +goose Up
-- Which lookup job holds each stale operation the sweep handed on: one row
-- per operation, so that a second sweep — or a sweep on another replica —
-- hands an operation on only once while a job holds it. A lookup job deletes
-- its operations' rows in the transaction that writes their outcomes, or
-- points them at the job that looks them up again; a row whose job is no
-- longer unfinished (lost, discarded, cancelled, cleaned away) is released
-- by the next sweep, so nothing stays claimed forever.
CREATE TABLE sweeper.lookup_claims (
    operation_id bigint      PRIMARY KEY,
    -- The River job (sweeper.river_job.id) holding the operation; NULL only
    -- inside the sweep's transaction that claims it.
    job_id       bigint,
    claimed_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE sweeper.lookup_claims;
