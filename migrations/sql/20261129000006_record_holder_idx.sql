-- +goose Up
-- One record proves one operation: before an operation is moved to done,
-- sweeper checks that no other operation of the provider already holds the
-- record. Without this index that check reads the whole ledger, once per
-- operation settled. The record id leads: with statistics taken while few
-- rows held a record (a ledger being settled), PostgreSQL applies the
-- provider as a filter, and an index led by the provider would be read
-- whole. (Not CONCURRENTLY: replicas waiting for the migration lock hold
-- snapshots a concurrent build would wait for.)
CREATE INDEX operations_provider_record_idx
    ON ledger.operations (provider_record_id, provider)
    WHERE provider_record_id IS NOT NULL;

-- +goose Down
DROP INDEX ledger.operations_provider_record_idx;
