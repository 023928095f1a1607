-- +goose Up
-- The review page's views and search, so that each stays a few index
-- probes however many tickets are open: "needs me" orders the open
-- tickets nobody has acknowledged first (review.Reader.Queue's order key,
-- written exactly as it is there); a search finds a ticket by the start
-- of its op_key, by a provider record its evidence holds, or, resolved,
-- by who resolved it. The "needs me" index is partial on a predicate only
-- that query says (version > 0, always true), for the planner would
-- otherwise skip-scan it for the escalation scan's deadline range (see
-- 20261204000010_review_queue.sql).
CREATE INDEX tickets_open_unacknowledged_idx ON sweeper.tickets
    ((CASE WHEN acknowledged_by IS NULL THEN 0 ELSE 1 END), deadline, id) WHERE state = 'open' AND version > 0;
CREATE INDEX tickets_op_key_prefix_idx ON sweeper.tickets (op_key text_pattern_ops);
CREATE INDEX tickets_records_idx ON sweeper.tickets USING gin ((evidence->'records') jsonb_path_ops);
CREATE INDEX tickets_resolved_by_idx ON sweeper.tickets (resolved_by) WHERE state = 'resolved';

-- +goose Down
DROP INDEX sweeper.tickets_resolved_by_idx;
DROP INDEX sweeper.tickets_records_idx;
DROP INDEX sweeper.tickets_op_key_prefix_idx;
DROP INDEX sweeper.tickets_open_unacknowledged_idx;
