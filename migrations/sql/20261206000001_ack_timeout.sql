-- +goose Up
-- Acknowledgement timeout (review.ack_timeout): an acknowledgement still
-- standing at its level once that level's timeout has passed lapses. The
-- escalation clears acknowledged_by, _at and _level (the "acknowledged"
-- event keeps who took it and when, the "ack_timed_out" event that it
-- lapsed) and counts the lapse in ack_lapses, which also numbers the
-- dedupe keys of a later acknowledgement and lapse, so that a ticket can be
-- acknowledged again at the same level. Like the other escalation
-- columns, ack_lapses changes only by sweeper's escalation.
ALTER TABLE sweeper.tickets
    ADD COLUMN ack_lapses integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT tickets_ack_lapses_check CHECK (ack_lapses >= 0);

-- The scan for lapsed acknowledgements: open tickets, still escalating,
-- with an acknowledgement, oldest first.
CREATE INDEX tickets_open_ack_idx ON sweeper.tickets (acknowledged_at, id)
    WHERE state = 'open' AND NOT escalation_exhausted AND acknowledged_at IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.tickets_writer_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed text[] := '{}';
BEGIN
    IF NEW.reason IS DISTINCT FROM OLD.reason THEN changed := changed || 'reason'::text; END IF;
    IF NEW.created_at IS DISTINCT FROM OLD.created_at THEN changed := changed || 'created_at'::text; END IF;
    IF cardinality(changed) > 0 THEN
        RAISE EXCEPTION 'sweeper.tickets %: % cannot change', OLD.id, array_to_string(changed, ', ')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_record_final';
    END IF;
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper' THEN
        IF NEW.owner IS DISTINCT FROM OLD.owner THEN changed := changed || 'owner'::text; END IF;
        IF NEW.priority IS DISTINCT FROM OLD.priority THEN changed := changed || 'priority'::text; END IF;
        IF NEW.escalation_level IS DISTINCT FROM OLD.escalation_level THEN changed := changed || 'escalation_level'::text; END IF;
        IF NEW.deadline IS DISTINCT FROM OLD.deadline THEN changed := changed || 'deadline'::text; END IF;
        IF NEW.repeat_count IS DISTINCT FROM OLD.repeat_count THEN changed := changed || 'repeat_count'::text; END IF;
        IF NEW.escalation_exhausted IS DISTINCT FROM OLD.escalation_exhausted THEN changed := changed || 'escalation_exhausted'::text; END IF;
        IF NEW.ack_lapses IS DISTINCT FROM OLD.ack_lapses THEN changed := changed || 'ack_lapses'::text; END IF;
        IF cardinality(changed) > 0 THEN
            RAISE EXCEPTION 'sweeper.tickets %: % change only by sweeper''s escalation; to take the ticket, acknowledge it; to settle it, resolve it',
                OLD.id, array_to_string(changed, ', ')
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_escalation_by_sweeper';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.tickets_writer_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed text[] := '{}';
BEGIN
    IF NEW.reason IS DISTINCT FROM OLD.reason THEN changed := changed || 'reason'::text; END IF;
    IF NEW.created_at IS DISTINCT FROM OLD.created_at THEN changed := changed || 'created_at'::text; END IF;
    IF cardinality(changed) > 0 THEN
        RAISE EXCEPTION 'sweeper.tickets %: % cannot change', OLD.id, array_to_string(changed, ', ')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_record_final';
    END IF;
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper' THEN
        IF NEW.owner IS DISTINCT FROM OLD.owner THEN changed := changed || 'owner'::text; END IF;
        IF NEW.priority IS DISTINCT FROM OLD.priority THEN changed := changed || 'priority'::text; END IF;
        IF NEW.escalation_level IS DISTINCT FROM OLD.escalation_level THEN changed := changed || 'escalation_level'::text; END IF;
        IF NEW.deadline IS DISTINCT FROM OLD.deadline THEN changed := changed || 'deadline'::text; END IF;
        IF NEW.repeat_count IS DISTINCT FROM OLD.repeat_count THEN changed := changed || 'repeat_count'::text; END IF;
        IF NEW.escalation_exhausted IS DISTINCT FROM OLD.escalation_exhausted THEN changed := changed || 'escalation_exhausted'::text; END IF;
        IF cardinality(changed) > 0 THEN
            RAISE EXCEPTION 'sweeper.tickets %: % change only by sweeper''s escalation; to take the ticket, acknowledge it; to settle it, resolve it',
                OLD.id, array_to_string(changed, ', ')
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_escalation_by_sweeper';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
DROP INDEX sweeper.tickets_open_ack_idx;
ALTER TABLE sweeper.tickets DROP COLUMN ack_lapses;
