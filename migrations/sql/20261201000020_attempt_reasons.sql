-- +goose Up
-- A record of an attempt is not the effect: a record still in flight at
-- the provider (scheduled, authorised, processing) that outlasts the
-- provider's in_flight_for, a record the provider reports failed, and a
-- record of an effect since undone (refunded, disputed) each open a ticket
-- of their own reason.
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_reason_check;
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_reason_check CHECK (reason IN ('not_found',
    'multiple_matches', 'payload_mismatch', 'ambiguous_owner', 'lookup_failed', 'lookup_unsupported',
    'invalid_operation', 'in_flight', 'provider_failed', 'provider_reversed'));

-- +goose Down
-- Tickets are never deleted or rewritten, so tickets of these reasons may
-- remain: the narrower check binds new rows only (NOT VALID).
ALTER TABLE sweeper.tickets DROP CONSTRAINT tickets_reason_check;
ALTER TABLE sweeper.tickets ADD CONSTRAINT tickets_reason_check CHECK (reason IN ('not_found',
    'multiple_matches', 'payload_mismatch', 'ambiguous_owner', 'lookup_failed', 'lookup_unsupported',
    'invalid_operation')) NOT VALID;
