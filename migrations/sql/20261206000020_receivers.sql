-- +goose Up
-- Receivers beyond Slack, and routes. The outbox holds one row per ticket
-- event PER RECEIVER the event is routed to ('slack', 'pagerduty',
-- 'webhook'); each receiver's dispatcher claims only its own rows, so a
-- receiver that is down holds back nobody else's messages. Rows written
-- before this migration, and the rows of alert groups and incidents, are
-- Slack's.
ALTER TABLE sweeper.outbox
    ADD COLUMN receiver text NOT NULL DEFAULT 'slack',
    ADD CONSTRAINT outbox_receiver_check CHECK (receiver IN ('slack', 'pagerduty', 'webhook')),
    DROP CONSTRAINT outbox_event_id_key,
    ADD CONSTRAINT outbox_event_id_key UNIQUE (event_id, receiver),
    DROP CONSTRAINT outbox_dedupe_key_key,
    ADD CONSTRAINT outbox_dedupe_key_key UNIQUE (receiver, dedupe_key),
    -- A Slack message is somewhere (channel and ts); another receiver's
    -- delivery is an HTTP request, which leaves nothing to point at.
    DROP CONSTRAINT outbox_sent_check,
    ADD CONSTRAINT outbox_sent_check CHECK (
        (state = 'sent') = (sent_at IS NOT NULL)
        AND (state <> 'sent' OR receiver <> 'slack' OR (channel IS NOT NULL AND ts IS NOT NULL)));

-- A receiver's claim: its pending rows whose lease or retry time passed.
CREATE INDEX outbox_receiver_claim_idx ON sweeper.outbox (receiver, lease_until) WHERE state = 'pending';

-- The routes, in the order the configuration lists them ([[routes]]). The
-- daemon writes them when it starts (notify/outbox Store.SetRoutes), as it
-- writes sweeper.record_namespaces, so that the enqueue trigger — which
-- runs in the transaction of each ticket event, whoever writes it — routes
-- by them. A NULL matcher matches anything; level is the least escalation
-- level of the ticket (0 when it opens, 1 after its first escalation, …).
CREATE TABLE sweeper.routes (
    position   integer     PRIMARY KEY CHECK (position >= 0),
    receiver   text        NOT NULL CHECK (receiver IN ('slack', 'pagerduty', 'webhook')),
    provider   text        CHECK (provider <> ''),
    workflow   text        CHECK (workflow <> ''),
    reason     text        CHECK (reason <> ''),
    level      integer     NOT NULL DEFAULT 0 CHECK (level >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Which receivers a ticket event goes to:
--   * with no route written (a database no daemon of this version started
--     on), Slack alone, as before routes existed;
--   * otherwise every receiver one of whose routes matches the ticket's
--     provider, workflow and reason, with the ticket at or past the route's
--     level when the event is written;
--   * and every receiver that has a row of the ticket already: a ticket
--     that reached a receiver stays there, so a PagerDuty incident hears
--     of its ticket's acknowledgement and resolution, and a webhook of
--     every later event, whatever the level or the routes then.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.outbox_enqueue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sweeper.routes) THEN
        INSERT INTO sweeper.outbox (event_id, ticket_id, dedupe_key, kind, receiver)
        VALUES (NEW.id, NEW.ticket_id, NEW.dedupe_key, NEW.kind, 'slack');
        RETURN NULL;
    END IF;
    INSERT INTO sweeper.outbox (event_id, ticket_id, dedupe_key, kind, receiver)
    SELECT NEW.id, NEW.ticket_id, NEW.dedupe_key, NEW.kind, r.receiver
    FROM (
        SELECT r.receiver
        FROM sweeper.routes r
        JOIN sweeper.tickets t ON t.id = NEW.ticket_id
        LEFT JOIN ledger.operations o ON o.id = t.operation_id
        WHERE (r.provider IS NULL OR r.provider = o.provider)
          AND (r.workflow IS NULL OR r.workflow = o.workflow)
          AND (r.reason IS NULL OR r.reason = t.reason)
          AND t.escalation_level >= r.level
        UNION
        SELECT e.receiver FROM sweeper.outbox e WHERE e.ticket_id = NEW.ticket_id
    ) AS r
    -- A Slack root message replaced is Slack's own business.
    WHERE r.receiver = 'slack' OR NEW.kind <> 'slack_root_removed'
    ORDER BY r.receiver;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.outbox_enqueue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sweeper.outbox (event_id, ticket_id, dedupe_key, kind)
    VALUES (NEW.id, NEW.ticket_id, NEW.dedupe_key, NEW.kind);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TABLE sweeper.routes;
DROP INDEX sweeper.outbox_receiver_claim_idx;
-- Other receivers' rows go with the column (the one delete the outbox
-- allows, by a downgrade).
ALTER TABLE sweeper.outbox DISABLE TRIGGER outbox_no_delete;
DELETE FROM sweeper.outbox WHERE receiver <> 'slack';
ALTER TABLE sweeper.outbox ENABLE TRIGGER outbox_no_delete;
ALTER TABLE sweeper.outbox
    DROP CONSTRAINT outbox_sent_check,
    ADD CONSTRAINT outbox_sent_check CHECK (
        (state = 'sent') = (sent_at IS NOT NULL)
        AND (state <> 'sent' OR (channel IS NOT NULL AND ts IS NOT NULL))),
    DROP CONSTRAINT outbox_dedupe_key_key,
    ADD CONSTRAINT outbox_dedupe_key_key UNIQUE (dedupe_key),
    DROP CONSTRAINT outbox_event_id_key,
    ADD CONSTRAINT outbox_event_id_key UNIQUE (event_id),
    DROP CONSTRAINT outbox_receiver_check,
    DROP COLUMN receiver;
