-- +goose Up
-- The guards of ledger.operations, for a table a shop's workflows already
-- write and sweeper adopts ([ledger] table and its mapping). The table's
-- names are not known here: each function reads the columns and status
-- words it needs from its trigger's arguments, which `sweeper adopt
-- --apply --guards` (ledger.InstallGuards) writes from the mapping, and
-- reads a row through to_jsonb(NEW) ->> column. They raise with the
-- constraint names ledger.operations' guards use, so that sweeper's ledger
-- package tells their refusals apart the same way on either table.
-- Nothing here is created on a table: installing the triggers is the
-- shop's decision, made with `sweeper adopt`.

-- What sweeper's states mean, on the table's words.
--   TG_ARGV: 0 op_key, 1 status, 2 provider_record_id (columns);
--            3 pending, 4 done, 5 review, 6 failed ('' when none) (words).
-- A status moves forward only: pending -> done | review | failed, review ->
-- done | failed. A row in a word the mapping does not name, or moving to
-- one, is the workflow's own business and left alone. done needs its
-- record; a record, once set, and the op_key never change; only sweeper
-- moves a row to review (it opens the ticket in the same transaction).
-- +goose StatementBegin
CREATE FUNCTION sweeper.adopted_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    new_row jsonb := to_jsonb(NEW);
    old_row jsonb;
    key text := new_row ->> TG_ARGV[0];
    new_status text := new_row ->> TG_ARGV[1];
    old_status text;
    new_record text := new_row ->> TG_ARGV[2];
    old_record text;
    pending text := TG_ARGV[3];
    done text := TG_ARGV[4];
    review text := TG_ARGV[5];
    failed text := nullif(TG_ARGV[6], '');
    known text[] := array_remove(ARRAY[TG_ARGV[3], TG_ARGV[4], TG_ARGV[5], nullif(TG_ARGV[6], '')], NULL);
BEGIN
    IF TG_OP = 'UPDATE' THEN
        old_row := to_jsonb(OLD);
        old_status := old_row ->> TG_ARGV[1];
        old_record := old_row ->> TG_ARGV[2];
        IF new_status IS DISTINCT FROM old_status
           AND old_status = ANY(known) AND new_status = ANY(known)
           AND NOT ((old_status = pending AND new_status IN (done, review, failed))
                 OR (old_status = review AND new_status IN (done, failed))) THEN
            RAISE EXCEPTION '% %: illegal status transition % -> %',
                TG_RELID::regclass, old_row ->> TG_ARGV[0], old_status, new_status
                USING ERRCODE = 'check_violation',
                      SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                      CONSTRAINT = 'operations_status_transition';
        END IF;
        IF old_record IS NOT NULL AND new_record IS DISTINCT FROM old_record THEN
            RAISE EXCEPTION '% %: % cannot change once set (% -> %)',
                TG_RELID::regclass, old_row ->> TG_ARGV[0], TG_ARGV[2], old_record, coalesce(new_record, 'NULL')
                USING ERRCODE = 'check_violation',
                      SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                      CONSTRAINT = 'operations_provider_record_id_final';
        END IF;
        IF key IS DISTINCT FROM old_row ->> TG_ARGV[0] THEN
            RAISE EXCEPTION '% %: % cannot change (-> %)',
                TG_RELID::regclass, old_row ->> TG_ARGV[0], TG_ARGV[0], key
                USING ERRCODE = 'check_violation',
                      SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                      CONSTRAINT = 'operations_op_key_final';
        END IF;
    END IF;
    IF new_status = done AND new_record IS NULL THEN
        RAISE EXCEPTION '% %: % (done) needs the provider''s record in %',
            TG_RELID::regclass, key, done, TG_ARGV[2]
            USING ERRCODE = 'check_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_done_record_id_check';
    END IF;
    IF new_status = review AND (TG_OP = 'INSERT' OR old_status = pending)
       AND current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper' THEN
        RAISE EXCEPTION '% %: only sweeper moves a row to % (review); leave the row %: sweeper moves it to review and opens its ticket in the same transaction',
            TG_RELID::regclass, key, review, pending
            USING ERRCODE = 'check_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_review_by_sweeper';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- One record proves one operation across its record namespace (every block
-- reaching the provider's account), as ledger.operations_record_once holds
-- it: a row taking a record takes the record's advisory lock — the key
-- sweeper's own writes lock (ledger.RecordLockKey) — and then looks for
-- another row of the namespace's blocks holding it. An adopted table may
-- have no unique (record, provider) index, so the same block's holders are
-- looked for too.
--   TG_ARGV: 0 id, 1 op_key, 2 provider, 3 provider_record_id (columns).
-- +goose StatementBegin
CREATE FUNCTION sweeper.adopted_record_once() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    new_row jsonb := to_jsonb(NEW);
    record_id text := new_row ->> TG_ARGV[3];
    block text := new_row ->> TG_ARGV[2];
    ns text;
    holder_key text;
    holder_block text;
BEGIN
    IF record_id IS NULL
       OR (TG_OP = 'UPDATE' AND record_id IS NOT DISTINCT FROM to_jsonb(OLD) ->> TG_ARGV[3]) THEN
        RETURN NEW;
    END IF;
    ns := sweeper.record_namespace(block);
    PERFORM pg_advisory_xact_lock(hashtextextended(ns || ':' || record_id, 7));
    EXECUTE format('SELECT %2$I::text, %3$I::text FROM %5$s WHERE %4$I = $1 AND %3$I = ANY($2) AND %1$I::text IS DISTINCT FROM $3 LIMIT 1',
                   TG_ARGV[0], TG_ARGV[1], TG_ARGV[2], TG_ARGV[3], TG_RELID::regclass)
        INTO holder_key, holder_block
        USING record_id, sweeper.record_namespace_blocks(block), new_row ->> TG_ARGV[0];
    IF holder_key IS NOT NULL THEN
        RAISE EXCEPTION '% %: provider record % already proves operation % (provider %, the same record namespace %): one record proves one operation',
            TG_RELID::regclass, new_row ->> TG_ARGV[1], record_id, holder_key, holder_block, ns
            USING ERRCODE = 'unique_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_record_namespace',
                  DETAIL = format('Record %s of namespace %s is held by operation %s.', record_id, ns, holder_key);
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- A row with an open ticket is a question a person has not answered yet:
-- it is not deleted, and the table is not truncated while any ticket is
-- open, as on ledger.operations.
--   TG_ARGV: 0 id, 1 op_key (columns).
-- +goose StatementBegin
CREATE FUNCTION sweeper.adopted_keep_open_tickets() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_row jsonb;
    ticket bigint;
    open_tickets bigint;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        SELECT count(*) INTO open_tickets FROM sweeper.tickets WHERE state = 'open';
        IF open_tickets > 0 THEN
            RAISE EXCEPTION '%: truncate refused while % tickets are open; resolve them first', TG_RELID::regclass, open_tickets
                USING ERRCODE = 'restrict_violation',
                      SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                      CONSTRAINT = 'operations_open_ticket';
        END IF;
        RETURN NULL;
    END IF;
    old_row := to_jsonb(OLD);
    SELECT id INTO ticket FROM sweeper.tickets
    WHERE operation_id = (old_row ->> TG_ARGV[0])::bigint AND state = 'open';
    IF FOUND THEN
        RAISE EXCEPTION '% %: ticket % is open for this operation; resolve the ticket first',
            TG_RELID::regclass, old_row ->> TG_ARGV[1], ticket
            USING ERRCODE = 'restrict_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_open_ticket';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- CASCADE drops the triggers `sweeper adopt --guards` made on the adopted
-- table with the functions they call.
DROP FUNCTION sweeper.adopted_keep_open_tickets() CASCADE;
DROP FUNCTION sweeper.adopted_record_once() CASCADE;
DROP FUNCTION sweeper.adopted_guard() CASCADE;
