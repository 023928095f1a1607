-- +goose Up
-- Alert groups: the tickets opened within slack.group_wait for the same
-- provider and reason, bound for the same channel, are posted as one root
-- message once there are slack.group_threshold of them; each ticket's own
-- alert, with its buttons, is a reply in that message's thread. The group's
-- message is an outbox row of its own (group_id set, no ticket, no
-- incident); a member ticket's "opened" row carries its group_id.
CREATE TABLE sweeper.alert_groups (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel     text        NOT NULL,
    provider    text        NOT NULL,
    reason      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TRIGGER alert_groups_no_delete BEFORE DELETE ON sweeper.alert_groups
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER alert_groups_no_truncate BEFORE TRUNCATE ON sweeper.alert_groups
    FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

ALTER TABLE sweeper.outbox
    ADD COLUMN group_id bigint REFERENCES sweeper.alert_groups (id),
    DROP CONSTRAINT outbox_owner_check,
    -- A row is a ticket event's, an incident's, or a group's message.
    ADD CONSTRAINT outbox_owner_check CHECK (
        (ticket_id IS NOT NULL AND event_id IS NOT NULL AND incident_id IS NULL)
        OR (ticket_id IS NULL AND event_id IS NULL AND (incident_id IS NULL) <> (group_id IS NULL))),
    -- Of a ticket's rows, only its "opened" row joins a group.
    ADD CONSTRAINT outbox_group_member_check CHECK (group_id IS NULL OR ticket_id IS NULL OR kind = 'opened');

CREATE INDEX outbox_group_idx ON sweeper.outbox (group_id) WHERE group_id IS NOT NULL;

-- +goose Down
DROP INDEX sweeper.outbox_group_idx;
-- An earlier version knows no groups: the groups' own rows go with them
-- (the one delete the outbox allows, by a downgrade).
ALTER TABLE sweeper.outbox DISABLE TRIGGER outbox_no_delete;
DELETE FROM sweeper.outbox WHERE ticket_id IS NULL AND group_id IS NOT NULL;
ALTER TABLE sweeper.outbox ENABLE TRIGGER outbox_no_delete;
ALTER TABLE sweeper.outbox
    DROP CONSTRAINT outbox_group_member_check,
    DROP CONSTRAINT outbox_owner_check,
    DROP COLUMN group_id,
    ADD CONSTRAINT outbox_owner_check CHECK (
        (ticket_id IS NOT NULL AND event_id IS NOT NULL AND incident_id IS NULL)
        OR (ticket_id IS NULL AND event_id IS NULL AND incident_id IS NOT NULL));
DROP TABLE sweeper.alert_groups;
