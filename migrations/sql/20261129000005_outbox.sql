-- +goose Up
-- The Slack outbox: one row per ticket event, the Slack message that event
-- owes. A trigger on sweeper.ticket_events writes it, so the row commits in
-- the same transaction as the ticket change and its audit event, whoever
-- writes the event (I4), and there is exactly one per event: the event id
-- and its dedupe key are unique here as they are there.
--
-- A row is pending until its message is in Slack (sent, with channel and
-- ts), or parked with the error Slack gave when a person must fix something
-- first (a channel, a token, a scope); a parked row is replayed by hand. No
-- row is ever deleted.
CREATE TABLE sweeper.outbox (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id         bigint      NOT NULL REFERENCES sweeper.ticket_events (id),
    ticket_id        bigint      NOT NULL REFERENCES sweeper.tickets (id),
    -- The event's dedupe key; it travels in the message's metadata, so that
    -- after an attempt whose result is unknown the message can be found.
    dedupe_key       text        NOT NULL,
    -- The event's kind: "opened" posts the ticket's root message, every
    -- other kind a reply in its thread.
    kind             text        NOT NULL,
    state            text        NOT NULL DEFAULT 'pending',
    -- How many times a dispatcher claimed the row.
    attempts         integer     NOT NULL DEFAULT 0,
    -- A pending row may be claimed once lease_until has passed: it is the
    -- lease of the dispatcher holding it, or the time a retry is due.
    lease_until      timestamptz NOT NULL DEFAULT now(),
    -- Who holds the lease; NULL once an outcome is recorded. A row claimed
    -- while still leased lost its holder mid-attempt, so that attempt is
    -- uncertain.
    leased_by        text,
    -- Where the message goes (recorded before the first attempt) and, once
    -- posted, its ts; thread_ts is the root message's ts for a reply.
    channel          text,
    ts               text,
    thread_ts        text,
    last_error       text,
    -- An attempt whose result is unknown happened (a timeout, a dropped
    -- connection, a 5xx, internal_error): before posting again, Slack is
    -- searched for the message by its dedupe key. It never goes back.
    uncertain        boolean     NOT NULL DEFAULT false,
    first_attempt_at timestamptz,
    -- What happened to the row, oldest first, the last 50 entries.
    history          jsonb       NOT NULL DEFAULT '[]',
    created_at       timestamptz NOT NULL DEFAULT now(),
    sent_at          timestamptz,

    CONSTRAINT outbox_event_id_key UNIQUE (event_id),
    CONSTRAINT outbox_dedupe_key_key UNIQUE (dedupe_key),
    CONSTRAINT outbox_state_check CHECK (state IN ('pending', 'sent', 'parked')),
    CONSTRAINT outbox_attempts_check CHECK (attempts >= 0),
    CONSTRAINT outbox_sent_check CHECK (
        (state = 'sent') = (sent_at IS NOT NULL)
        AND (state <> 'sent' OR (channel IS NOT NULL AND ts IS NOT NULL))),
    CONSTRAINT outbox_history_check CHECK (jsonb_typeof(history) = 'array')
);

-- The claim: pending rows whose lease or retry time has passed.
CREATE INDEX outbox_claim_idx ON sweeper.outbox (state, lease_until);
-- A ticket's rows, in order: replies wait for the root and for earlier rows.
CREATE INDEX outbox_ticket_idx ON sweeper.outbox (ticket_id, id);

-- +goose StatementBegin
CREATE FUNCTION sweeper.outbox_enqueue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sweeper.outbox (event_id, ticket_id, dedupe_key, kind)
    VALUES (NEW.id, NEW.ticket_id, NEW.dedupe_key, NEW.kind);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER ticket_events_outbox AFTER INSERT ON sweeper.ticket_events
    FOR EACH ROW EXECUTE FUNCTION sweeper.outbox_enqueue();

-- Nothing is dropped: a row that cannot be sent is parked, never deleted.
CREATE TRIGGER outbox_no_delete BEFORE DELETE ON sweeper.outbox
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();

-- +goose Down
DROP TRIGGER ticket_events_outbox ON sweeper.ticket_events;
DROP FUNCTION sweeper.outbox_enqueue();
DROP TABLE sweeper.outbox;
