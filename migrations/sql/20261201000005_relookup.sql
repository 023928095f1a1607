-- +goose Up
-- Open not_found and lookup_failed tickets are looked up again on a
-- schedule — a record indexed late, a provider back from an outage —
-- and resolve themselves as done when the record turns up: relookup_at
-- is when the next re-lookup is due (NULL: none), relookups how many
-- have been made. Neither is guarded: they change nothing a person
-- decided or was told.
ALTER TABLE sweeper.tickets
    ADD COLUMN relookup_at timestamptz,
    ADD COLUMN relookups   integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT tickets_relookups_check CHECK (relookups >= 0);

-- The re-lookup scan: open tickets whose re-lookup is due.
CREATE INDEX tickets_relookup_idx ON sweeper.tickets (relookup_at, id)
    WHERE state = 'open' AND relookup_at IS NOT NULL;

-- +goose Down
DROP INDEX sweeper.tickets_relookup_idx;
ALTER TABLE sweeper.tickets
    DROP CONSTRAINT tickets_relookups_check,
    DROP COLUMN relookups,
    DROP COLUMN relookup_at;
