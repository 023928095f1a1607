-- +goose Up
-- The alert group decision (notify/slack) reads, for one channel, provider
-- and reason, the newest group holding an open ticket's alert, and each
-- group's own message. Without these it read every row of every group of
-- the past: its own message was found among all its tickets' rows, and
-- the groups of a channel, provider and reason in the whole table.
CREATE INDEX alert_groups_decision_idx ON sweeper.alert_groups (channel, provider, reason, id);
-- A group's alerts, found by group and ticket: whether a group holds one of
-- the open tickets' alerts is an index probe per open ticket.
CREATE INDEX outbox_group_member_idx ON sweeper.outbox (group_id, ticket_id)
    WHERE kind = 'opened' AND group_id IS NOT NULL AND ticket_id IS NOT NULL;
-- A group's own message: the one row of the group without a ticket.
CREATE INDEX outbox_group_message_idx ON sweeper.outbox (group_id)
    WHERE ticket_id IS NULL AND group_id IS NOT NULL;

-- +goose Down
DROP INDEX sweeper.outbox_group_message_idx;
DROP INDEX sweeper.outbox_group_member_idx;
DROP INDEX sweeper.alert_groups_decision_idx;
