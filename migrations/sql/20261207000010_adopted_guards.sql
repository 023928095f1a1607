-- +goose Up
-- The guards of ledger.operations, for a table a shop's workflows already
-- write and sweeper adopts ([ledger] table and its mapping). Its row
-- guards read the table's own columns and words, which are not known
-- here: `sweeper adopt --apply --guards` (ledger.InstallGuards) makes a
-- function for the table in this schema (sweeper.adopted_guard_…,
-- adopted_record_once_…, adopted_keep_open_tickets_…), its body rendered
-- from the mapping, and the triggers calling them. Here are what they
-- share that reads no column of the table: the truncate guard, and the
-- delete guard's look for an open ticket (sweeper.tickets is review's
-- table; ledger's code does not name it).
-- Nothing here is created on a table: installing the triggers is the
-- shop's decision, made with `sweeper adopt`.

-- The table is not truncated while any ticket is open: an open ticket is a
-- question a person has not answered yet, as on ledger.operations.
-- +goose StatementBegin
CREATE FUNCTION sweeper.adopted_no_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    open_tickets bigint;
BEGIN
    SELECT count(*) INTO open_tickets FROM sweeper.tickets WHERE state = 'open';
    IF open_tickets > 0 THEN
        RAISE EXCEPTION '%: truncate refused while % tickets are open; resolve them first', TG_RELID::regclass, open_tickets
            USING ERRCODE = 'restrict_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_open_ticket';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The open ticket of operation_id, if one is open: a row with an open
-- ticket is not deleted.
CREATE FUNCTION sweeper.adopted_open_ticket(operation_id bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT t.id FROM sweeper.tickets t WHERE t.operation_id = $1 AND t.state = 'open' LIMIT 1
$$;

-- +goose Down
-- The functions `sweeper adopt --guards` made for adopted tables go with
-- the triggers calling them (CASCADE), and so does the truncate guard's.
-- +goose StatementBegin
DO $$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'sweeper'::regnamespace
                AND p.proname ~ '^adopted_(guard|record_once|keep_open_tickets)_'
    LOOP
        EXECUTE format('DROP FUNCTION %s CASCADE', fn);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP FUNCTION sweeper.adopted_no_truncate() CASCADE;
DROP FUNCTION sweeper.adopted_open_ticket(bigint);
