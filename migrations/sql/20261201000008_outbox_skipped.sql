-- +goose Up
-- An alert for what settled itself is never posted: a ticket's first alert
-- waits slack.group_wait, and a ticket resolved by then (a scheduled
-- re-lookup found the record) has its rows marked skipped, with the reason
-- in error_code ('settled_before_alert'), instead of posted. Final, counted,
-- never deleted.
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked', 'dismissed', 'skipped'));

-- +goose Down
-- An earlier version knows no skipped rows: they are dismissed, with the
-- history that says why.
UPDATE sweeper.outbox SET state = 'dismissed' WHERE state = 'skipped';
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked', 'dismissed'));
