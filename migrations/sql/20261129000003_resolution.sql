-- +goose Up
-- Resolution and acknowledgement: who took a ticket at which escalation
-- level, and what a person decided, with their note and the provider record
-- the ledger now names. The outcome itself stays in resolution (checked by
-- tickets_resolution_check); tickets_guard already keeps a resolved ticket,
-- its evidence and its operation final, so it needs no change.
ALTER TABLE sweeper.tickets
    ADD COLUMN acknowledged_by      text,
    ADD COLUMN acknowledged_at      timestamptz,
    ADD COLUMN acknowledged_level   integer,
    ADD COLUMN resolution_note      text,
    ADD COLUMN resolution_record_id text,

    -- An acknowledgement is whole: who, when and at which level, a level the
    -- ticket has reached.
    ADD CONSTRAINT tickets_acknowledged_check CHECK (
        (acknowledged_by IS NULL AND acknowledged_at IS NULL AND acknowledged_level IS NULL)
        OR (acknowledged_by IS NOT NULL AND acknowledged_at IS NOT NULL AND acknowledged_level IS NOT NULL
            AND acknowledged_by <> '' AND char_length(acknowledged_by) <= 200
            AND acknowledged_level BETWEEN 0 AND escalation_level)),
    -- A note and a record id belong to a resolution, never to an open ticket.
    ADD CONSTRAINT tickets_resolution_fields_check CHECK (
        (state = 'resolved' OR (resolution_note IS NULL AND resolution_record_id IS NULL))
        AND char_length(resolution_note) <= 2000
        AND resolution_record_id <> '');

-- +goose Down
ALTER TABLE sweeper.tickets
    DROP CONSTRAINT tickets_resolution_fields_check,
    DROP CONSTRAINT tickets_acknowledged_check,
    DROP COLUMN resolution_record_id,
    DROP COLUMN resolution_note,
    DROP COLUMN acknowledged_level,
    DROP COLUMN acknowledged_at,
    DROP COLUMN acknowledged_by;
