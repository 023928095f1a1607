-- +goose Up
-- Provider incidents: one per time a provider was down for the cluster,
-- from the moment it went down (provider_health.since) to the moment it came
-- back up. A trigger on sweeper.provider_health writes it in the transaction
-- that changes the provider's state, whoever writes it, so there is exactly
-- one incident per outage and exactly one outbox row for its start and one
-- for its end: one Slack message per incident, not one per operation.
CREATE TABLE sweeper.incidents (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider    text        NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    -- The provider's pending operations when it went down.
    waiting     integer     NOT NULL,
    -- The failure that took it down, as provider_health recorded it.
    last_error  text,

    CONSTRAINT incidents_ended_check CHECK (ended_at IS NULL OR ended_at >= started_at)
);

-- At most one open incident per provider.
CREATE UNIQUE INDEX incidents_open_idx ON sweeper.incidents (provider) WHERE ended_at IS NULL;

CREATE TRIGGER incidents_no_delete BEFORE DELETE ON sweeper.incidents
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER incidents_no_truncate BEFORE TRUNCATE ON sweeper.incidents
    FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

-- An outbox row is the message of one ticket event, or of one incident's
-- start or end: exactly one of the two.
ALTER TABLE sweeper.outbox
    ALTER COLUMN event_id DROP NOT NULL,
    ALTER COLUMN ticket_id DROP NOT NULL,
    ADD COLUMN incident_id bigint REFERENCES sweeper.incidents (id),
    ADD CONSTRAINT outbox_owner_check CHECK (
        (ticket_id IS NOT NULL AND event_id IS NOT NULL AND incident_id IS NULL)
        OR (ticket_id IS NULL AND event_id IS NULL AND incident_id IS NOT NULL));

-- An incident's rows, in order: the end waits for the start.
CREATE INDEX outbox_incident_idx ON sweeper.outbox (incident_id, id) WHERE incident_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION sweeper.provider_health_incident() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    incident bigint;
BEGIN
    IF NEW.state = 'down' AND (TG_OP = 'INSERT' OR OLD.state = 'up') THEN
        INSERT INTO sweeper.incidents (provider, started_at, waiting, last_error)
        VALUES (NEW.provider, NEW.since,
                (SELECT count(*) FROM ledger.operations WHERE provider = NEW.provider AND status = 'pending'),
                NEW.last_error)
        ON CONFLICT (provider) WHERE ended_at IS NULL DO NOTHING
        RETURNING id INTO incident;
        IF incident IS NOT NULL THEN
            INSERT INTO sweeper.outbox (incident_id, dedupe_key, kind)
            VALUES (incident, 'incident:' || incident || ':opened', 'incident_opened');
        END IF;
    ELSIF NEW.state = 'up' AND TG_OP = 'UPDATE' AND OLD.state = 'down' THEN
        UPDATE sweeper.incidents SET ended_at = greatest(NEW.since, started_at)
        WHERE provider = NEW.provider AND ended_at IS NULL
        RETURNING id INTO incident;
        IF incident IS NOT NULL THEN
            INSERT INTO sweeper.outbox (incident_id, dedupe_key, kind)
            VALUES (incident, 'incident:' || incident || ':closed', 'incident_closed');
        END IF;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER provider_health_incident AFTER INSERT OR UPDATE OF state ON sweeper.provider_health
    FOR EACH ROW EXECUTE FUNCTION sweeper.provider_health_incident();

-- +goose Down
DROP TRIGGER provider_health_incident ON sweeper.provider_health;
DROP FUNCTION sweeper.provider_health_incident();
DROP INDEX sweeper.outbox_incident_idx;
-- An earlier version knows only ticket messages: the incidents' rows go
-- with the incidents (the one delete the outbox allows, by a downgrade).
ALTER TABLE sweeper.outbox DISABLE TRIGGER outbox_no_delete;
DELETE FROM sweeper.outbox WHERE incident_id IS NOT NULL;
ALTER TABLE sweeper.outbox ENABLE TRIGGER outbox_no_delete;
ALTER TABLE sweeper.outbox
    DROP CONSTRAINT outbox_owner_check,
    DROP COLUMN incident_id,
    ALTER COLUMN ticket_id SET NOT NULL,
    ALTER COLUMN event_id SET NOT NULL;
DROP TABLE sweeper.incidents;
