-- +goose Up
-- A bounded number of messages per alert group. Within a group, at most
-- slack.group_detail_limit tickets get their own alert in the thread
-- (alert_groups.detailed records which, taken with a compare-and-set); the
-- "opened" row of every other ticket is folded into the group: state
-- folded, group_id set, never posted, counted by the group's message. A
-- folded ticket's later events are folded the same way, except the ones a
-- person must hear of (an escalation to a new owner, a contradiction),
-- which get a message of their own, at most group_detail_limit per owner
-- of a group per slack.group_interval (alert_group_owner_messages). The
-- group's message is edited at most once per slack.group_interval, by
-- whichever dispatcher moves edited_at first.
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked', 'dismissed', 'skipped', 'folded'));
ALTER TABLE sweeper.outbox
    DROP CONSTRAINT outbox_group_member_check,
    -- Of a ticket's rows, its "opened" row joins a group, and any row
    -- folded into one names it.
    ADD CONSTRAINT outbox_group_member_check CHECK (group_id IS NULL OR ticket_id IS NULL OR kind = 'opened' OR state = 'folded'),
    ADD CONSTRAINT outbox_folded_check CHECK (state <> 'folded' OR (group_id IS NOT NULL AND ticket_id IS NOT NULL));

ALTER TABLE sweeper.alert_groups
    ADD COLUMN detailed  bigint[]    NOT NULL DEFAULT '{}',
    ADD COLUMN edited_at timestamptz;

CREATE TABLE sweeper.alert_group_owner_messages (
    group_id     bigint      NOT NULL REFERENCES sweeper.alert_groups (id),
    owner        text        NOT NULL,
    window_start timestamptz NOT NULL,
    messages     integer     NOT NULL,
    PRIMARY KEY (group_id, owner)
);

-- A folded row is final, as a skipped one: it goes with its ticket when
-- pruned or archived (the rule of 20261204000001_ticket_archives.sql).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.outbox_prune_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR OLD.ticket_id IS NULL
       OR OLD.state NOT IN ('sent', 'skipped', 'dismissed', 'folded')
       OR (OLD.group_id IS NOT NULL AND NOT sweeper.ticket_archived(OLD.ticket_id))
       OR NOT EXISTS (SELECT 1 FROM sweeper.tickets t WHERE t.id = OLD.ticket_id AND t.state = 'resolved') THEN
        RAISE EXCEPTION 'sweeper.outbox: delete is not allowed; only sweeper prunes the final rows of resolved tickets (retention.outbox)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'outbox_append_only';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.outbox_prune_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR OLD.ticket_id IS NULL
       OR OLD.state NOT IN ('sent', 'skipped', 'dismissed')
       OR (OLD.group_id IS NOT NULL AND NOT sweeper.ticket_archived(OLD.ticket_id))
       OR NOT EXISTS (SELECT 1 FROM sweeper.tickets t WHERE t.id = OLD.ticket_id AND t.state = 'resolved') THEN
        RAISE EXCEPTION 'sweeper.outbox: delete is not allowed; only sweeper prunes the final rows of resolved tickets (retention.outbox)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'outbox_append_only';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd
DROP TABLE sweeper.alert_group_owner_messages;
ALTER TABLE sweeper.alert_groups DROP COLUMN edited_at, DROP COLUMN detailed;
-- An earlier version knows no folded rows: they are skipped, with the
-- history that says why, and leave their group.
UPDATE sweeper.outbox SET state = 'skipped', error_code = 'folded', group_id = CASE WHEN kind = 'opened' THEN group_id END
    WHERE state = 'folded';
ALTER TABLE sweeper.outbox
    DROP CONSTRAINT outbox_folded_check,
    DROP CONSTRAINT outbox_group_member_check,
    ADD CONSTRAINT outbox_group_member_check CHECK (group_id IS NULL OR ticket_id IS NULL OR kind = 'opened');
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked', 'dismissed', 'skipped'));
