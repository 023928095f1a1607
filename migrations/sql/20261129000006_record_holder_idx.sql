-- +goose Up
-- One record proves one operation: before an operation is moved to done,
-- sweeper checks that no other operation of the provider already holds the
-- record. Without this index that check reads the whole ledger, once per
-- operation settled. (Not CONCURRENTLY: replicas waiting for the migration
-- lock hold snapshots a concurrent build would wait for.)
CREATE INDEX operations_provider_record_idx
    ON ledger.operations (provider, provider_record_id)
    WHERE provider_record_id IS NOT NULL;

-- +goose Down
DROP INDEX ledger.operations_provider_record_idx;
