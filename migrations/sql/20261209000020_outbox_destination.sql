-- +goose Up
-- Receiver-neutral columns of an outbox row: where its message goes
-- (destination: Slack's channel, "pagerduty", "webhook") and how the
-- receiver names what it delivered (reference: Slack's ts, PagerDuty's
-- dedup key, the webhook's event id). They were Slack's channel and ts
-- columns, which PagerDuty and the webhook borrowed. The old columns stay
-- one release, kept equal to the new ones by a trigger (either written
-- sets both), for readers of the table outside sweeper; the next release
-- drops them.
ALTER TABLE sweeper.outbox ADD COLUMN destination text, ADD COLUMN reference text;
UPDATE sweeper.outbox SET destination = channel, reference = ts WHERE channel IS NOT NULL OR ts IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION sweeper.outbox_legacy_columns() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.destination := coalesce(NEW.destination, NEW.channel);
        NEW.channel := NEW.destination;
        NEW.reference := coalesce(NEW.reference, NEW.ts);
        NEW.ts := NEW.reference;
        RETURN NEW;
    END IF;
    IF NEW.destination IS DISTINCT FROM OLD.destination THEN
        NEW.channel := NEW.destination;
    ELSIF NEW.channel IS DISTINCT FROM OLD.channel THEN
        NEW.destination := NEW.channel;
    END IF;
    IF NEW.reference IS DISTINCT FROM OLD.reference THEN
        NEW.ts := NEW.reference;
    ELSIF NEW.ts IS DISTINCT FROM OLD.ts THEN
        NEW.reference := NEW.ts;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_legacy_columns BEFORE INSERT OR UPDATE ON sweeper.outbox
    FOR EACH ROW EXECUTE FUNCTION sweeper.outbox_legacy_columns();

ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_sent_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_sent_check CHECK ((state = 'sent') = (sent_at IS NOT NULL)
    AND (state <> 'sent' OR receiver <> 'slack' OR destination IS NOT NULL AND reference IS NOT NULL));

-- +goose Down
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_sent_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_sent_check CHECK ((state = 'sent') = (sent_at IS NOT NULL)
    AND (state <> 'sent' OR receiver <> 'slack' OR channel IS NOT NULL AND ts IS NOT NULL));
DROP TRIGGER outbox_legacy_columns ON sweeper.outbox;
DROP FUNCTION sweeper.outbox_legacy_columns();
UPDATE sweeper.outbox SET channel = destination, ts = reference
    WHERE channel IS DISTINCT FROM destination OR ts IS DISTINCT FROM reference;
ALTER TABLE sweeper.outbox DROP COLUMN reference, DROP COLUMN destination;
