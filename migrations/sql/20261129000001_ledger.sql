-- +goose Up
-- The ledger contract: the table workflows write before and after calling a
-- provider. Its column names are public and stable; see README "The ledger
-- contract".
CREATE SCHEMA IF NOT EXISTS ledger;

CREATE TABLE ledger.operations (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    op_key             text        NOT NULL,
    workflow           text        NOT NULL,
    provider           text        NOT NULL,
    action             text        NOT NULL,
    source_id          text,
    recipient          text,
    payload_hash       text,
    payload            jsonb,
    status             text        NOT NULL DEFAULT 'pending',
    attempts           integer     NOT NULL DEFAULT 1,
    first_attempt_at   timestamptz NOT NULL DEFAULT now(),
    last_attempt_at    timestamptz,
    provider_record_id text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT operations_op_key_key UNIQUE (op_key),
    CONSTRAINT operations_op_key_check CHECK (op_key <> '' AND char_length(op_key) <= 255),
    CONSTRAINT operations_workflow_check CHECK (workflow <> ''),
    CONSTRAINT operations_provider_check CHECK (provider <> ''),
    CONSTRAINT operations_action_check CHECK (action <> ''),
    CONSTRAINT operations_payload_hash_check CHECK (payload_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT operations_status_check CHECK (status IN ('pending', 'done', 'review', 'failed')),
    CONSTRAINT operations_attempts_check CHECK (attempts >= 0),
    CONSTRAINT operations_provider_record_id_check CHECK (provider_record_id <> '')
);

COMMENT ON TABLE ledger.operations IS
    'One row per outside side effect a workflow attempts. Written pending before the provider call, done when confirmed.';
COMMENT ON COLUMN ledger.operations.payload_hash IS
    'SHA-256 (lowercase hex) of the canonical JSON of the normalized payload fields; see README "Payload hash".';

-- The stale scan reads pending rows of one provider older than a cutoff, in
-- (first_attempt_at, id) keyset order. A partial index keeps it small and the
-- scan an index scan on a ledger where nearly every row is done.
CREATE INDEX operations_pending_stale_idx
    ON ledger.operations (provider, first_attempt_at, id)
    WHERE status = 'pending';

-- I2: states only move forward. Enforced here so that it holds whoever writes
-- the row: sweeper, a workflow, or a person with psql.
-- +goose StatementBegin
CREATE FUNCTION ledger.operations_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
           (OLD.status = 'pending' AND NEW.status IN ('done', 'review', 'failed'))
        OR (OLD.status = 'review'  AND NEW.status IN ('done', 'failed'))
    ) THEN
        RAISE EXCEPTION 'ledger.operations %: illegal status transition % -> %',
            OLD.op_key, OLD.status, NEW.status
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_status_transition';
    END IF;
    IF OLD.provider_record_id IS NOT NULL
       AND NEW.provider_record_id IS DISTINCT FROM OLD.provider_record_id THEN
        RAISE EXCEPTION 'ledger.operations %: provider_record_id cannot change once set (% -> %)',
            OLD.op_key, OLD.provider_record_id, coalesce(NEW.provider_record_id, 'NULL')
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_provider_record_id_final';
    END IF;
    IF NEW.op_key IS DISTINCT FROM OLD.op_key THEN
        RAISE EXCEPTION 'ledger.operations %: op_key cannot change (-> %)', OLD.op_key, NEW.op_key
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_op_key_final';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER operations_guard
    BEFORE UPDATE ON ledger.operations
    FOR EACH ROW EXECUTE FUNCTION ledger.operations_guard();

-- sweeper's own tables (tickets, audit events, outbox) live here; River's
-- tables are migrated into this schema too, so a River install of the
-- application itself never shares a leader or a queue with sweeper.
CREATE SCHEMA IF NOT EXISTS sweeper;

-- +goose Down
DROP TABLE ledger.operations;
DROP FUNCTION ledger.operations_guard();
DROP SCHEMA ledger;
