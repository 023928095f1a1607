-- +goose Up
-- Escalation: how many re-alerts a ticket has had at its top level, and
-- whether the final "escalation exhausted" step has been taken. An exhausted
-- ticket stays open, at the top level, with the deadline that last passed.
ALTER TABLE sweeper.tickets
    ADD COLUMN repeat_count         integer NOT NULL DEFAULT 0,
    ADD COLUMN escalation_exhausted boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT tickets_repeat_count_check CHECK (repeat_count >= 0);

-- The escalation scan reads open tickets past their deadline that may still
-- take a step; exhausted tickets would otherwise sit at the front of every
-- scan for as long as they stay open.
DROP INDEX sweeper.tickets_open_deadline_idx;
CREATE INDEX tickets_open_deadline_idx ON sweeper.tickets (deadline, id)
    WHERE state = 'open' AND NOT escalation_exhausted;

-- Escalation only moves forward, whoever writes the row: the level never
-- goes down, repeats at one level never go back, and an exhausted ticket
-- stays exhausted. With the version compare-and-set and the events' dedupe
-- keys, a step cannot happen twice.
-- +goose StatementBegin
CREATE FUNCTION sweeper.tickets_escalation_forward() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.escalation_level < OLD.escalation_level
       OR (NEW.escalation_level = OLD.escalation_level AND NEW.repeat_count < OLD.repeat_count)
       OR (OLD.escalation_exhausted AND NOT NEW.escalation_exhausted) THEN
        RAISE EXCEPTION 'sweeper.tickets %: escalation only moves forward (level % -> %, repeats % -> %, exhausted % -> %)',
            OLD.id, OLD.escalation_level, NEW.escalation_level, OLD.repeat_count, NEW.repeat_count,
            OLD.escalation_exhausted, NEW.escalation_exhausted
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_escalation_forward';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER tickets_escalation_forward BEFORE UPDATE ON sweeper.tickets
    FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_escalation_forward();

-- +goose Down
DROP TRIGGER tickets_escalation_forward ON sweeper.tickets;
DROP FUNCTION sweeper.tickets_escalation_forward();
DROP INDEX sweeper.tickets_open_deadline_idx;
CREATE INDEX tickets_open_deadline_idx ON sweeper.tickets (deadline, id) WHERE state = 'open';
ALTER TABLE sweeper.tickets
    DROP CONSTRAINT tickets_repeat_count_check,
    DROP COLUMN escalation_exhausted,
    DROP COLUMN repeat_count;
