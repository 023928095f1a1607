-- +goose Up
-- The database guards what sweeper promises, whoever writes: a workflow, a
-- person with psql, or sweeper itself.
--
-- Two states and a few ticket columns are sweeper's to write. A transaction
-- that is sweeper writing says so with the custom setting sweeper.writer:
--     SET LOCAL sweeper.writer = 'sweeper';
-- It is a declaration, not a permission: it keeps a workflow or a hand-made
-- fix from doing by mistake what only sweeper's own transactions do (move a
-- row to review together with its ticket, escalate a ticket), it does not
-- stand in for database roles.

-- One record proves at most one operation. The index is made unique; its
-- columns, their order and its predicate stay those of
-- 20261129000006_record_holder_idx.sql (the done write's check depends on
-- them). Existing duplicates stop the migration, listed, instead of a bare
-- unique violation: a person must decide which operation each record proves.
-- +goose StatementBegin
DO $$
DECLARE
    records bigint;
    operations bigint;
BEGIN
    SELECT count(*), coalesce(sum(n), 0) INTO records, operations
    FROM (SELECT count(*) AS n FROM ledger.operations
          WHERE provider_record_id IS NOT NULL
          GROUP BY provider_record_id, provider HAVING count(*) > 1) AS d;
    IF records > 0 THEN
        RAISE EXCEPTION 'ledger.operations: % provider records are each named by more than one operation (% operations in all); one record proves at most one operation', records, operations
            USING ERRCODE = 'unique_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_provider_record_idx',
                  HINT = 'List them with: SELECT provider, provider_record_id, array_agg(op_key ORDER BY id) AS op_keys '
                      || 'FROM ledger.operations WHERE provider_record_id IS NOT NULL '
                      || 'GROUP BY provider, provider_record_id HAVING count(*) > 1; '
                      || 'decide which operation each record proves, then migrate again.';
    END IF;
END
$$;
-- +goose StatementEnd

DROP INDEX ledger.operations_provider_record_idx;
CREATE UNIQUE INDEX operations_provider_record_idx
    ON ledger.operations (provider_record_id, provider)
    WHERE provider_record_id IS NOT NULL;

-- done means proven, and the proof is the record. A constraint rather than a
-- trigger, added NOT VALID: every row inserted or updated from now on is
-- checked, while a ledger holding old done rows without a record still
-- migrates (validating it would fail on them).
ALTER TABLE ledger.operations
    ADD CONSTRAINT operations_done_record_id_check
    CHECK (status <> 'done' OR provider_record_id IS NOT NULL) NOT VALID;

-- What a row says happened cannot be rewritten after the fact. A lookup's
-- answer applies to the row it was made for only if the row still describes
-- the same effect; first_attempt_at may move while the row is pending
-- (workflows retry), never once it has left pending. review is sweeper's
-- state: it enters it together with the ticket that explains it. And
-- first_attempt_at is a time something was attempted: finite, and not more
-- than 5 minutes after the database's now() (an allowance for the workflow's
-- clock being ahead). Rows already holding such values are left as they are:
-- the check applies when the value is written.
-- +goose StatementBegin
CREATE FUNCTION ledger.operations_contract() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed text[] := '{}';
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.workflow IS DISTINCT FROM OLD.workflow THEN changed := changed || 'workflow'::text; END IF;
        IF NEW.provider IS DISTINCT FROM OLD.provider THEN changed := changed || 'provider'::text; END IF;
        IF NEW.action IS DISTINCT FROM OLD.action THEN changed := changed || 'action'::text; END IF;
        IF NEW.recipient IS DISTINCT FROM OLD.recipient THEN changed := changed || 'recipient'::text; END IF;
        IF NEW.payload_hash IS DISTINCT FROM OLD.payload_hash THEN changed := changed || 'payload_hash'::text; END IF;
        IF NEW.payload IS DISTINCT FROM OLD.payload THEN changed := changed || 'payload'::text; END IF;
        IF cardinality(changed) > 0 THEN
            RAISE EXCEPTION 'ledger.operations %: % cannot change once inserted; to attempt another effect, write a new operation',
                OLD.op_key, array_to_string(changed, ', ')
                USING ERRCODE = 'check_violation',
                      SCHEMA = 'ledger', TABLE = 'operations',
                      CONSTRAINT = 'operations_identity_final';
        END IF;
        IF NEW.first_attempt_at IS DISTINCT FROM OLD.first_attempt_at
           AND NOT (OLD.status = 'pending' AND NEW.status = 'pending') THEN
            RAISE EXCEPTION 'ledger.operations %: first_attempt_at cannot change once the row has left pending (it is %)',
                OLD.op_key, OLD.status
                USING ERRCODE = 'check_violation',
                      SCHEMA = 'ledger', TABLE = 'operations',
                      CONSTRAINT = 'operations_first_attempt_at_final';
        END IF;
    END IF;

    IF NEW.status = 'review' AND (TG_OP = 'INSERT' OR OLD.status = 'pending')
       AND current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper' THEN
        RAISE EXCEPTION 'ledger.operations %: only sweeper moves a row to review; leave the row pending: sweeper moves it to review and opens its ticket in the same transaction',
            NEW.op_key
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_review_by_sweeper';
    END IF;

    IF (TG_OP = 'INSERT' OR NEW.first_attempt_at IS DISTINCT FROM OLD.first_attempt_at)
       AND (NOT isfinite(NEW.first_attempt_at) OR NEW.first_attempt_at > now() + interval '5 minutes') THEN
        RAISE EXCEPTION 'ledger.operations %: first_attempt_at % is not when an attempt was made: it must be finite and at most 5 minutes (clock skew) after the database''s now(), %',
            NEW.op_key, NEW.first_attempt_at, now()
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_first_attempt_at_check';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER operations_contract
    BEFORE INSERT OR UPDATE ON ledger.operations
    FOR EACH ROW EXECUTE FUNCTION ledger.operations_contract();

-- A row with an open ticket is a question a person has not answered yet;
-- deleting it would leave the ticket pointing at nothing. Rows without an
-- open ticket may be deleted (retention is the workflow owner's business).
-- +goose StatementBegin
CREATE FUNCTION ledger.operations_keep_open_tickets() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ticket bigint;
    open_tickets bigint;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        SELECT count(*) INTO open_tickets FROM sweeper.tickets WHERE state = 'open';
        IF open_tickets > 0 THEN
            RAISE EXCEPTION 'ledger.operations: truncate refused while % tickets are open; resolve them first', open_tickets
                USING ERRCODE = 'restrict_violation',
                      SCHEMA = 'ledger', TABLE = 'operations',
                      CONSTRAINT = 'operations_open_ticket';
        END IF;
        RETURN NULL;
    END IF;
    SELECT id INTO ticket FROM sweeper.tickets WHERE operation_id = OLD.id AND state = 'open';
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.operations %: ticket % is open for this operation; resolve the ticket first', OLD.op_key, ticket
            USING ERRCODE = 'restrict_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_open_ticket';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER operations_keep_open_tickets
    BEFORE DELETE ON ledger.operations
    FOR EACH ROW EXECUTE FUNCTION ledger.operations_keep_open_tickets();
CREATE TRIGGER operations_no_truncate
    BEFORE TRUNCATE ON ledger.operations
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.operations_keep_open_tickets();

-- sweeper's tables are never emptied wholesale: row triggers already refuse
-- their deletes, and TRUNCATE (with or without CASCADE) skips row triggers.
CREATE TRIGGER tickets_no_truncate BEFORE TRUNCATE ON sweeper.tickets
    FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER ticket_events_no_truncate BEFORE TRUNCATE ON sweeper.ticket_events
    FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER outbox_no_truncate BEFORE TRUNCATE ON sweeper.outbox
    FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

-- A ticket's reason and creation time are part of what it records, as its
-- evidence and operation are (tickets_guard). Who owns it, how urgent it is
-- and when it next escalates are sweeper's escalation policy: a person takes
-- a ticket by acknowledging it and settles it by resolving it, not by
-- editing those columns.
-- +goose StatementBegin
CREATE FUNCTION sweeper.tickets_writer_guard() RETURNS trigger
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

CREATE TRIGGER tickets_writer_guard BEFORE UPDATE ON sweeper.tickets
    FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_writer_guard();

-- +goose Down
DROP TRIGGER tickets_writer_guard ON sweeper.tickets;
DROP FUNCTION sweeper.tickets_writer_guard();
DROP TRIGGER outbox_no_truncate ON sweeper.outbox;
DROP TRIGGER ticket_events_no_truncate ON sweeper.ticket_events;
DROP TRIGGER tickets_no_truncate ON sweeper.tickets;
DROP TRIGGER operations_no_truncate ON ledger.operations;
DROP TRIGGER operations_keep_open_tickets ON ledger.operations;
DROP FUNCTION ledger.operations_keep_open_tickets();
DROP TRIGGER operations_contract ON ledger.operations;
DROP FUNCTION ledger.operations_contract();
ALTER TABLE ledger.operations DROP CONSTRAINT operations_done_record_id_check;
DROP INDEX ledger.operations_provider_record_idx;
CREATE INDEX operations_provider_record_idx
    ON ledger.operations (provider_record_id, provider)
    WHERE provider_record_id IS NOT NULL;
