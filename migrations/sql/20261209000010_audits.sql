-- +goose Up
-- The audit sweep: settled operations (done, failed) looked up once more,
-- after a delay, for a second effect or for the effect of a row marked
-- failed. Each operation is audited once, whichever replica comes first:
-- its row here is its claim (state 'claimed', due again at retry_at when
-- the lookup could not ask the provider or the process died), then its
-- outcome, written in the transaction of the ticket it opened, if any.
-- The ledger row is never written.
CREATE TABLE sweeper.audits (
    operation_id bigint      PRIMARY KEY,
    provider     text        NOT NULL,
    -- settled_at is the operation's updated_at when it was claimed: the
    -- audit of a provider goes on from the latest one claimed.
    settled_at   timestamptz NOT NULL,
    state        text        NOT NULL DEFAULT 'claimed'
                 CHECK (state IN ('claimed', 'clean', 'duplicate_effect', 'effect_after_failed')),
    attempts     integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    claimed_at   timestamptz NOT NULL DEFAULT now(),
    retry_at     timestamptz NOT NULL DEFAULT now(),
    audited_at   timestamptz,
    records      integer     CHECK (records >= 0),
    -- ticket_id is the ticket a finding opened; no foreign key, so that
    -- archiving resolved tickets (retention.resolved_tickets) is not held.
    ticket_id    bigint,
    CHECK ((state = 'claimed') = (audited_at IS NULL))
);
CREATE INDEX audits_provider_settled_idx ON sweeper.audits (provider, settled_at, operation_id);
CREATE INDEX audits_claimed_idx ON sweeper.audits (provider, retry_at) WHERE state = 'claimed';

-- An audit's finding is a ticket of its own kind: a settled operation may
-- already have had a ticket (resolved before it settled), so the one
-- ticket per operation holds per kind — one for settling, one for the
-- audit — and an audit ticket's resolution never touches the ledger row.
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_reason_check;
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_reason_check CHECK (reason IN ('not_found',
    'multiple_matches', 'payload_mismatch', 'ambiguous_owner', 'lookup_failed', 'lookup_unsupported',
    'invalid_operation', 'in_flight', 'provider_failed', 'provider_reversed',
    'duplicate_effect', 'effect_after_failed'));
ALTER TABLE sweeper.tickets ADD COLUMN audit boolean
    GENERATED ALWAYS AS (reason IN ('duplicate_effect', 'effect_after_failed')) STORED NOT NULL;
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_operation_id_key;
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_operation_id_audit_key UNIQUE (operation_id, audit);

-- +goose Down
DROP TABLE sweeper.audits;
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_operation_id_audit_key;
-- Audit tickets, if any, refuse this constraint: roll back only without them.
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_operation_id_key UNIQUE (operation_id);
ALTER TABLE sweeper.tickets DROP COLUMN audit;
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_reason_check;
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_reason_check CHECK (reason IN ('not_found',
    'multiple_matches', 'payload_mismatch', 'ambiguous_owner', 'lookup_failed', 'lookup_unsupported',
    'invalid_operation', 'in_flight', 'provider_failed', 'provider_reversed'));
