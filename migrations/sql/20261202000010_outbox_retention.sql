-- +goose Up
-- Outbox rows may be pruned, by sweeper only, once nothing reads them: a
-- row deleted is a final row (sent, skipped or dismissed) of a resolved
-- ticket, in a transaction that says it is sweeper's (SET LOCAL
-- sweeper.writer = 'sweeper'). Any other delete is refused as before:
-- pending and parked rows, rows of open tickets, of alert groups and of
-- incidents, and every delete by anyone else. Tickets and their events stay
-- append-only; TRUNCATE stays refused.
-- +goose StatementBegin
CREATE FUNCTION sweeper.outbox_prune_guard() RETURNS trigger
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

DROP TRIGGER outbox_no_delete ON sweeper.outbox;
CREATE TRIGGER outbox_no_delete BEFORE DELETE ON sweeper.outbox
    FOR EACH ROW EXECUTE FUNCTION sweeper.outbox_prune_guard();

-- The prune's scan: a resolved ticket's rows by ticket.
CREATE INDEX tickets_resolved_at_idx ON sweeper.tickets (resolved_at, id) WHERE state = 'resolved';

-- +goose Down
DROP INDEX sweeper.tickets_resolved_at_idx;
DROP TRIGGER outbox_no_delete ON sweeper.outbox;
CREATE TRIGGER outbox_no_delete BEFORE DELETE ON sweeper.outbox
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
DROP FUNCTION sweeper.outbox_prune_guard();
