-- +goose Up
-- One record proves one operation per provider ACCOUNT, not per block. Two
-- [providers.NAME] blocks may reach one account (one Twilio AccountSid under
-- two names, say): a message there is one record whichever block's rows look
-- for it. The ledger row names only its block (provider), so the blocks that
-- share an account are written down here by sweeper when it starts, as a
-- record namespace each ("twilio:AC…", "stripe:acct_…", "http:billing").
-- A block with no row is a namespace of its own, named by the block: block
-- names hold no ':', namespaces always do, so the two never meet.
CREATE TABLE sweeper.record_namespaces (
    provider   text        PRIMARY KEY,
    namespace  text        NOT NULL CHECK (position(':' IN namespace) > 1),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The record namespace of block: its row's, or the block's own name.
CREATE FUNCTION sweeper.record_namespace(block text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT n.namespace FROM sweeper.record_namespaces n WHERE n.provider = block), block)
$$;

-- Every block whose records are block's records: block itself, and every
-- block mapped to its namespace. "provider = ANY(...)" over it keeps the
-- ledger's (…, provider) indexes usable.
CREATE FUNCTION sweeper.record_namespace_blocks(block text) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT array_agg(DISTINCT b ORDER BY b) FROM (
        SELECT block AS b
        UNION ALL
        SELECT n.provider FROM sweeper.record_namespaces n
        WHERE n.namespace = sweeper.record_namespace(block)
    ) AS s
$$;

-- The unique index operations_provider_record_idx holds one record to one
-- operation per block, whoever writes. This holds it across the blocks of a
-- namespace, whoever writes too: a row taking a record first takes the
-- record's transaction-scoped advisory lock — the key sweeper's own writes
-- lock (ledger.RecordLockKey: namespace ':' record id) — and then looks for
-- another block's row holding it. Under the lock the look sees every
-- holder that committed (each statement of a volatile function reads a
-- fresh snapshot), and a holder still writing holds the lock. Rows that
-- already name one record twice across blocks are left as they are: the
-- check applies when a record is written.
-- +goose StatementBegin
CREATE FUNCTION ledger.operations_record_once() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ns text;
    holder record;
BEGIN
    IF NEW.provider_record_id IS NULL
       OR (TG_OP = 'UPDATE' AND NEW.provider_record_id IS NOT DISTINCT FROM OLD.provider_record_id) THEN
        RETURN NEW;
    END IF;
    ns := sweeper.record_namespace(NEW.provider);
    IF position(':' IN ns) = 0 THEN
        RETURN NEW; -- a namespace of one block: the unique index holds it
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(ns || ':' || NEW.provider_record_id, 7));
    SELECT h.op_key, h.provider INTO holder FROM ledger.operations h
    WHERE h.provider_record_id = NEW.provider_record_id
      AND h.provider <> NEW.provider -- the same block's holder: the unique index answers
      AND h.provider = ANY(sweeper.record_namespace_blocks(NEW.provider))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.operations %: provider record % already proves operation % (provider %, the same record namespace %): one record proves one operation',
            NEW.op_key, NEW.provider_record_id, holder.op_key, holder.provider, ns
            USING ERRCODE = 'unique_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_record_namespace',
                  DETAIL = format('Record %s of namespace %s is held by operation %s.', NEW.provider_record_id, ns, holder.op_key);
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER operations_record_once
    BEFORE INSERT OR UPDATE OF provider_record_id ON ledger.operations
    FOR EACH ROW EXECUTE FUNCTION ledger.operations_record_once();

-- +goose Down
DROP TRIGGER operations_record_once ON ledger.operations;
DROP FUNCTION ledger.operations_record_once();
DROP FUNCTION sweeper.record_namespace_blocks(text);
DROP FUNCTION sweeper.record_namespace(text);
DROP TABLE sweeper.record_namespaces;
