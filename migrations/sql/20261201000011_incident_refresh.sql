-- +goose Up
-- An ended incident's root message and closing reply are edited as the
-- provider's backlog settles. One dispatcher at a time does it, under a
-- lease on the incident row (no transaction is held while Slack answers),
-- and what the messages last showed is kept here, so that whichever
-- dispatcher comes next edits only what changed.
ALTER TABLE sweeper.incidents
    -- The dispatcher bringing the messages up to date, until when.
    ADD COLUMN refresh_owner    text,
    ADD COLUMN refresh_until    timestamptz,
    -- The text the root message and the closing reply were last posted or
    -- edited with; NULL when not known.
    ADD COLUMN shown_root       text,
    ADD COLUMN shown_reply      text,
    -- When a person was found to have deleted the closing reply: it is not
    -- edited any more.
    ADD COLUMN reply_removed_at timestamptz,
    -- When the messages were edited to counts that no longer change
    -- (nothing of the backlog pending): they are not edited any more.
    ADD COLUMN refresh_final_at timestamptz;

-- The review tickets opened since an incident began, counted at every
-- refresh. (The settled count reads ledger.operations without an index of
-- its own: one over every settled row would cost each workflow's writes
-- for the sake of a report made every incident_refresh, on one dispatcher
-- at a time, until the counts are final.)
CREATE INDEX tickets_created_idx ON sweeper.tickets (created_at);

-- +goose Down
DROP INDEX sweeper.tickets_created_idx;
ALTER TABLE sweeper.incidents
    DROP COLUMN refresh_owner,
    DROP COLUMN refresh_until,
    DROP COLUMN shown_root,
    DROP COLUMN shown_reply,
    DROP COLUMN reply_removed_at,
    DROP COLUMN refresh_final_at;
