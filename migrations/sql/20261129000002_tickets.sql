-- +goose Up
-- Review tickets: one per operation sweeper could not settle, with one
-- owner, a deadline and an immutable evidence snapshot (I4).
CREATE TABLE sweeper.tickets (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id     bigint      NOT NULL,
    op_key           text        NOT NULL,
    reason           text        NOT NULL,
    owner            text        NOT NULL,
    priority         text        NOT NULL,
    escalation_level integer     NOT NULL DEFAULT 0,
    state            text        NOT NULL DEFAULT 'open',
    deadline         timestamptz NOT NULL,
    evidence         jsonb       NOT NULL,
    version          integer     NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resolved_at      timestamptz,
    resolution       text,
    resolved_by      text,

    CONSTRAINT tickets_operation_id_key UNIQUE (operation_id),
    CONSTRAINT tickets_reason_check CHECK (reason IN ('not_found', 'multiple_matches', 'payload_mismatch',
        'lookup_failed', 'lookup_unsupported', 'invalid_operation')),
    CONSTRAINT tickets_owner_check CHECK (owner <> ''),
    CONSTRAINT tickets_priority_check CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    CONSTRAINT tickets_escalation_level_check CHECK (escalation_level >= 0),
    CONSTRAINT tickets_state_check CHECK (state IN ('open', 'resolved')),
    CONSTRAINT tickets_resolution_check CHECK (
        (state = 'open' AND resolution IS NULL)
        OR (state = 'resolved' AND resolution IN ('done', 'not_sent', 'duplicate') AND resolved_at IS NOT NULL))
);

-- The escalation scan: open tickets past their deadline.
CREATE INDEX tickets_open_deadline_idx ON sweeper.tickets (deadline, id) WHERE state = 'open';

-- +goose StatementBegin
CREATE FUNCTION sweeper.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%.%: % is not allowed; the history is append-only',
        TG_TABLE_SCHEMA, TG_TABLE_NAME, lower(TG_OP)
        USING ERRCODE = 'check_violation', CONSTRAINT = TG_TABLE_NAME || '_append_only';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION sweeper.tickets_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.evidence IS DISTINCT FROM OLD.evidence THEN
        RAISE EXCEPTION 'sweeper.tickets %: the evidence snapshot is immutable; append an event instead', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_evidence_immutable';
    END IF;
    IF OLD.state = 'resolved' THEN
        RAISE EXCEPTION 'sweeper.tickets %: a resolved ticket is final', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_resolved_final';
    END IF;
    IF NEW.operation_id IS DISTINCT FROM OLD.operation_id OR NEW.op_key IS DISTINCT FROM OLD.op_key THEN
        RAISE EXCEPTION 'sweeper.tickets %: the operation cannot change', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_operation_final';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER tickets_guard BEFORE UPDATE ON sweeper.tickets
    FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_guard();

CREATE TRIGGER tickets_no_delete BEFORE DELETE ON sweeper.tickets
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();

-- The audit trail: append-only, whoever writes.
CREATE TABLE sweeper.ticket_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ticket_id  bigint      NOT NULL REFERENCES sweeper.tickets (id),
    kind       text        NOT NULL,
    actor      text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    details    jsonb       NOT NULL DEFAULT '{}',
    -- One event per ticket change: "ticket:42:opened", "ticket:42:escalated:1".
    dedupe_key text        NOT NULL,

    CONSTRAINT ticket_events_dedupe_key_key UNIQUE (dedupe_key),
    CONSTRAINT ticket_events_actor_check CHECK (actor <> '')
);

CREATE INDEX ticket_events_ticket_id_idx ON sweeper.ticket_events (ticket_id, id);

CREATE TRIGGER ticket_events_append_only BEFORE UPDATE OR DELETE ON sweeper.ticket_events
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();

-- +goose Down
DROP TABLE sweeper.ticket_events;
DROP TABLE sweeper.tickets;
DROP FUNCTION sweeper.tickets_guard();
DROP FUNCTION sweeper.reject_change();
