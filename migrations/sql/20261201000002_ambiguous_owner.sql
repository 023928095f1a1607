-- +goose Up
-- A record found by resemblance (recipient, payload, time: no op_key) is
-- proof for an operation only when no other unsettled operation of the
-- provider with the same payload could own it; otherwise a person decides,
-- with every candidate in the evidence: reason ambiguous_owner.
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_reason_check;
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_reason_check CHECK (reason IN ('not_found',
    'multiple_matches', 'payload_mismatch', 'ambiguous_owner', 'lookup_failed', 'lookup_unsupported',
    'invalid_operation'));

-- The candidates are found by payload hash and provider among the pending
-- and review rows: few, on a ledger where nearly every row is settled. The
-- hash leads, and the predicate names it, so that the stale scan (by
-- provider, any hash) cannot take this index for its own.
CREATE INDEX operations_lookalike_idx ON ledger.operations (payload_hash, provider)
    WHERE status IN ('pending', 'review') AND payload_hash IS NOT NULL;

-- +goose Down
-- Tickets are never deleted or rewritten, so ambiguous_owner tickets may
-- remain: the narrower check binds new rows only (NOT VALID).
DROP INDEX ledger.operations_lookalike_idx;
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_reason_check;
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_reason_check CHECK (reason IN ('not_found',
    'multiple_matches', 'payload_mismatch', 'lookup_failed', 'lookup_unsupported', 'invalid_operation')) NOT VALID;
