-- +goose Up
-- Resolved tickets may be deleted, by sweeper only, when a retention for
-- them is set (retention.resolved_tickets) and only once each has been
-- written to an archive file: sweeper.ticket_archives says which file holds
-- each ticket deleted, and stays. Without that row, and without a
-- transaction that says it is sweeper's (SET LOCAL sweeper.writer =
-- 'sweeper'), a delete of a ticket or of an audit event is refused as
-- before; open tickets are never deleted, and events are never updated.
CREATE TABLE sweeper.ticket_archives (
    ticket_id   bigint PRIMARY KEY,
    op_key      text NOT NULL,
    file        text NOT NULL CHECK (file <> ''),
    archived_at timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER ticket_archives_append_only BEFORE UPDATE OR DELETE ON sweeper.ticket_archives
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER ticket_archives_no_truncate BEFORE TRUNCATE ON sweeper.ticket_archives
    FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

-- +goose StatementBegin
CREATE FUNCTION sweeper.ticket_archived(id bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM sweeper.ticket_archives a WHERE a.ticket_id = id)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION sweeper.tickets_prune_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR OLD.state <> 'resolved' OR NOT sweeper.ticket_archived(OLD.id) THEN
        RAISE EXCEPTION 'sweeper.tickets: delete is not allowed; only sweeper deletes resolved tickets it has archived (retention.resolved_tickets)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_append_only';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION sweeper.ticket_events_prune_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR NOT sweeper.ticket_archived(OLD.ticket_id) THEN
        RAISE EXCEPTION 'sweeper.ticket_events: delete is not allowed; only sweeper deletes the events of tickets it has archived (retention.resolved_tickets)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'ticket_events_append_only';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

DROP TRIGGER tickets_no_delete ON sweeper.tickets;
CREATE TRIGGER tickets_no_delete BEFORE DELETE ON sweeper.tickets
    FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_prune_guard();
DROP TRIGGER ticket_events_append_only ON sweeper.ticket_events;
CREATE TRIGGER ticket_events_append_only BEFORE UPDATE ON sweeper.ticket_events
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER ticket_events_no_delete BEFORE DELETE ON sweeper.ticket_events
    FOR EACH ROW EXECUTE FUNCTION sweeper.ticket_events_prune_guard();

-- An archived ticket's outbox rows go with it when final, its alert in an
-- alert group's thread included; the rest of the rule is that of
-- 20261202000010_outbox_retention.sql.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.outbox_prune_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR OLD.ticket_id IS NULL
       OR OLD.state NOT IN ('sent', 'skipped', 'dismissed')
       OR (OLD.group_id IS NOT NULL AND NOT sweeper.ticket_archived(OLD.ticket_id))
       OR NOT EXISTS (SELECT 1 FROM sweeper.tickets t WHERE t.id = OLD.ticket_id AND t.state = 'resolved') THEN
        RAISE EXCEPTION 'sweeper.outbox: delete is not allowed; only sweeper prunes the final rows of resolved tickets (retention.outbox)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'outbox_append_only';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.outbox_prune_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR OLD.ticket_id IS NULL OR OLD.group_id IS NOT NULL
       OR OLD.state NOT IN ('sent', 'skipped', 'dismissed')
       OR NOT EXISTS (SELECT 1 FROM sweeper.tickets t WHERE t.id = OLD.ticket_id AND t.state = 'resolved') THEN
        RAISE EXCEPTION 'sweeper.outbox: delete is not allowed; only sweeper prunes the final rows of resolved tickets (retention.outbox)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'outbox_append_only';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd
DROP TRIGGER ticket_events_no_delete ON sweeper.ticket_events;
DROP TRIGGER ticket_events_append_only ON sweeper.ticket_events;
CREATE TRIGGER ticket_events_append_only BEFORE UPDATE OR DELETE ON sweeper.ticket_events
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
DROP TRIGGER tickets_no_delete ON sweeper.tickets;
CREATE TRIGGER tickets_no_delete BEFORE DELETE ON sweeper.tickets
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
DROP FUNCTION sweeper.ticket_events_prune_guard();
DROP FUNCTION sweeper.tickets_prune_guard();
DROP FUNCTION sweeper.ticket_archived(bigint);
DROP TABLE sweeper.ticket_archives;
