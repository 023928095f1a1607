-- +goose Up
-- Silences: a person holds back the notifications of the tickets (and
-- provider incidents) a silence matches, for a bounded time, during a
-- planned migration or a known incident. A silenced ticket is still opened,
-- escalated and counted; only its outbox rows are recorded silenced instead
-- of delivered, with the silence that held them. When the silence ends, each
-- of its tickets still open gets one event (silence_ended) whose message is
-- the ticket's current state; released_at records that this was done, once.
--
-- matchers is a non-empty array of {"name", "op", "value"}: name one of
-- provider, workflow, reason, owner, escalation_level; op "=" (equal) or
-- "=~" (a PostgreSQL regular expression matching the whole value). A label
-- a row does not have (an incident has only a provider) is "".
CREATE TABLE sweeper.silences (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    matchers    jsonb       NOT NULL,
    starts_at   timestamptz NOT NULL DEFAULT now(),
    -- When the silence ends: the planned end, or when a person expired it.
    ends_at     timestamptz NOT NULL,
    -- The end it was created with, kept when a person ends it early.
    planned_end timestamptz NOT NULL,
    created_by  text        NOT NULL,
    comment     text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expired_by  text,
    expired_at  timestamptz,
    -- When its still-open tickets were given their one current alert.
    released_at timestamptz,

    CONSTRAINT silences_matchers_check CHECK (jsonb_typeof(matchers) = 'array' AND jsonb_array_length(matchers) > 0),
    CONSTRAINT silences_end_check CHECK (ends_at > starts_at OR expired_at IS NOT NULL),
    CONSTRAINT silences_planned_end_check CHECK (planned_end > starts_at AND ends_at <= planned_end),
    CONSTRAINT silences_created_by_check CHECK (created_by ~ '^[UW][A-Z0-9]{2,}$'),
    CONSTRAINT silences_comment_check CHECK (btrim(comment) <> ''),
    CONSTRAINT silences_expired_check CHECK ((expired_by IS NULL) = (expired_at IS NULL)),
    CONSTRAINT silences_released_check CHECK (released_at IS NULL OR released_at >= ends_at)
);

-- The release's scan: ended silences not yet released.
CREATE INDEX silences_unreleased_idx ON sweeper.silences (ends_at) WHERE released_at IS NULL;

-- A silence's matchers, start, author and comment never change; its end only
-- moves earlier (expired by a person, who is recorded), and its release is
-- recorded once. A silence is never deleted: outbox rows name it.
-- +goose StatementBegin
CREATE FUNCTION sweeper.silences_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.matchers IS DISTINCT FROM OLD.matchers OR NEW.starts_at IS DISTINCT FROM OLD.starts_at
       OR NEW.planned_end IS DISTINCT FROM OLD.planned_end OR NEW.created_by IS DISTINCT FROM OLD.created_by
       OR NEW.comment IS DISTINCT FROM OLD.comment OR NEW.created_at IS DISTINCT FROM OLD.created_at
       OR NEW.ends_at > OLD.ends_at
       OR (OLD.expired_at IS NOT NULL AND (NEW.expired_at IS DISTINCT FROM OLD.expired_at
                                            OR NEW.expired_by IS DISTINCT FROM OLD.expired_by
                                            OR NEW.ends_at IS DISTINCT FROM OLD.ends_at))
       OR (OLD.released_at IS NOT NULL AND NEW.released_at IS DISTINCT FROM OLD.released_at) THEN
        RAISE EXCEPTION 'sweeper.silences: a silence''s matchers, start, author and comment are final; its end only moves earlier, once, and its release is recorded once'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'silences_final';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER silences_guard BEFORE UPDATE ON sweeper.silences
    FOR EACH ROW EXECUTE FUNCTION sweeper.silences_guard();
CREATE TRIGGER silences_no_delete BEFORE DELETE ON sweeper.silences
    FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER silences_no_truncate BEFORE TRUNCATE ON sweeper.silences
    FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

-- Whether a silence's matchers all match labels (a jsonb object of text
-- values; a label left out is ""). A pattern matches the whole value.
-- +goose StatementBegin
CREATE FUNCTION sweeper.silence_matches(matchers jsonb, labels jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(matchers) AS m
        WHERE NOT CASE m->>'op'
            WHEN '=' THEN coalesce(labels->>(m->>'name'), '') = m->>'value'
            WHEN '=~' THEN coalesce(labels->>(m->>'name'), '') ~ ('^(?:' || (m->>'value') || ')$')
            ELSE false END)
$$;
-- +goose StatementEnd

-- Why pattern is no regular expression a matcher can use, or NULL when it
-- is one: silences are checked with it before they are added.
-- +goose StatementBegin
CREATE FUNCTION sweeper.silence_pattern_error(pattern text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM '' ~ ('^(?:' || pattern || ')$');
    RETURN NULL;
EXCEPTION WHEN invalid_regular_expression OR program_limit_exceeded THEN
    RETURN SQLERRM;
END
$$;
-- +goose StatementEnd

-- A row whose message a silence held is final, never delivered, and names
-- the silence.
ALTER TABLE sweeper.outbox ADD COLUMN silence_id bigint REFERENCES sweeper.silences (id);
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked', 'dismissed', 'skipped', 'folded', 'silenced'));
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_silenced_check
    CHECK ((state = 'silenced') = (silence_id IS NOT NULL));
CREATE INDEX outbox_silence_idx ON sweeper.outbox (silence_id, ticket_id) WHERE silence_id IS NOT NULL;

-- A silenced row is final, as a skipped one: it goes with its ticket when
-- pruned or archived (the rule of 20261205000001_alert_group_bounds.sql).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sweeper.outbox_prune_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR OLD.ticket_id IS NULL
       OR OLD.state NOT IN ('sent', 'skipped', 'dismissed', 'folded', 'silenced')
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
-- An earlier version knows no silenced rows: they are skipped, with the
-- history that says why.
DROP INDEX sweeper.outbox_silence_idx;
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_silenced_check;
UPDATE sweeper.outbox SET state = 'skipped', error_code = 'silenced' WHERE state = 'silenced';
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked', 'dismissed', 'skipped', 'folded'));
ALTER TABLE sweeper.outbox DROP COLUMN silence_id;
DROP FUNCTION sweeper.silence_matches(jsonb, jsonb);
DROP FUNCTION sweeper.silence_pattern_error(text);
DROP TABLE sweeper.silences;
DROP FUNCTION sweeper.silences_guard();
