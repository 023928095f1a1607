-- +goose Up
-- A ledger is mostly done and failed history under a thin layer of pending
-- and review rows. What sweeper reads on every refresh or report must cost
-- what that layer costs, not what the history does: two partial indexes.
-- (Not CONCURRENTLY: replicas waiting for the migration lock hold
-- snapshots a concurrent build would wait for. On a large ledger, build
-- them by hand with CREATE INDEX CONCURRENTLY under these names first:
-- IF NOT EXISTS then finds them.)

-- The state gauges count the unsettled operations by provider and status:
-- the pending ones from operations_pending_stale_idx, the review ones from
-- this index, each an index-only scan however long the history. (One
-- index over both states would be taken by the stale scan for its own and
-- sorted, instead of walking operations_pending_stale_idx in order.)
CREATE INDEX IF NOT EXISTS operations_review_idx ON ledger.operations (provider)
    WHERE status = 'review';

-- An incident's report counts what of a provider's backlog was settled
-- since the outage began: a range of this index, the rows settled inside
-- the incident's window, never the provider's whole history.
CREATE INDEX IF NOT EXISTS operations_settled_idx ON ledger.operations (provider, updated_at)
    WHERE status IN ('done', 'failed');

-- +goose Down
DROP INDEX ledger.operations_settled_idx;
DROP INDEX ledger.operations_review_idx;
