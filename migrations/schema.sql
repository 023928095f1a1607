-- The schema sweeper's migrations build: the schemas sweeper and ledger
-- after every file in sql/, read from a migrated database's catalogs.
-- Generated: do not edit. Regenerate with
--   go test ./migrations/ -run TestSchemaFileIsCurrent -update
-- TestSchemaFileIsCurrent fails when this file and the migrations differ.
-- Left out: River's tables, types and functions (river_*, in schema
-- sweeper, created by rivermigrate) and goose's history table
-- (sweeper.schema_migrations). Not a migration: never run this file.

-- Schemas
CREATE SCHEMA ledger;
CREATE SCHEMA sweeper;

-- Types

-- Sequences (besides those of identity columns)

-- Tables

CREATE TABLE ledger.operations (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    op_key text NOT NULL,
    workflow text NOT NULL,
    provider text NOT NULL,
    action text NOT NULL,
    source_id text,
    recipient text,
    payload_hash text,
    payload jsonb,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 1 NOT NULL,
    first_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_attempt_at timestamp with time zone,
    provider_record_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT operations_action_check CHECK (action <> ''::text),
    CONSTRAINT operations_attempts_check CHECK (attempts >= 0),
    CONSTRAINT operations_done_record_id_check CHECK (status <> 'done'::text OR provider_record_id IS NOT NULL) NOT VALID,
    CONSTRAINT operations_op_key_check CHECK (op_key <> ''::text AND char_length(op_key) <= 255),
    CONSTRAINT operations_op_key_key UNIQUE (op_key),
    CONSTRAINT operations_payload_hash_check CHECK (payload_hash ~ '^[0-9a-f]{64}$'::text),
    CONSTRAINT operations_pkey PRIMARY KEY (id),
    CONSTRAINT operations_provider_check CHECK (provider <> ''::text),
    CONSTRAINT operations_provider_record_id_check CHECK (provider_record_id <> ''::text),
    CONSTRAINT operations_status_check CHECK (status = ANY (ARRAY['pending'::text, 'done'::text, 'review'::text, 'failed'::text])),
    CONSTRAINT operations_workflow_check CHECK (workflow <> ''::text)
);
CREATE INDEX operations_lookalike_idx ON ledger.operations USING btree (payload_hash, provider) WHERE ((status = ANY (ARRAY['pending'::text, 'review'::text])) AND (payload_hash IS NOT NULL));
CREATE INDEX operations_pending_stale_idx ON ledger.operations USING btree (provider, first_attempt_at, id) WHERE (status = 'pending'::text);
CREATE UNIQUE INDEX operations_provider_record_idx ON ledger.operations USING btree (provider_record_id, provider) WHERE (provider_record_id IS NOT NULL);
CREATE INDEX operations_review_idx ON ledger.operations USING btree (provider) WHERE (status = 'review'::text);
CREATE INDEX operations_settled_idx ON ledger.operations USING btree (provider, updated_at) WHERE (status = ANY (ARRAY['done'::text, 'failed'::text]));
CREATE TRIGGER operations_contract BEFORE INSERT OR UPDATE ON ledger.operations FOR EACH ROW EXECUTE FUNCTION ledger.operations_contract();
CREATE TRIGGER operations_guard BEFORE UPDATE ON ledger.operations FOR EACH ROW EXECUTE FUNCTION ledger.operations_guard();
CREATE TRIGGER operations_keep_open_tickets BEFORE DELETE ON ledger.operations FOR EACH ROW EXECUTE FUNCTION ledger.operations_keep_open_tickets();
CREATE TRIGGER operations_no_truncate BEFORE TRUNCATE ON ledger.operations FOR EACH STATEMENT EXECUTE FUNCTION ledger.operations_keep_open_tickets();
CREATE TRIGGER operations_record_once BEFORE INSERT OR UPDATE OF provider_record_id ON ledger.operations FOR EACH ROW EXECUTE FUNCTION ledger.operations_record_once();

CREATE TABLE sweeper.alert_group_owner_messages (
    group_id bigint NOT NULL,
    owner text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    messages integer NOT NULL,
    CONSTRAINT alert_group_owner_messages_group_id_fkey FOREIGN KEY (group_id) REFERENCES sweeper.alert_groups(id),
    CONSTRAINT alert_group_owner_messages_pkey PRIMARY KEY (group_id, owner)
);

CREATE TABLE sweeper.alert_groups (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    channel text NOT NULL,
    provider text NOT NULL,
    reason text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    detailed bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    edited_at timestamp with time zone,
    CONSTRAINT alert_groups_pkey PRIMARY KEY (id)
);
CREATE INDEX alert_groups_decision_idx ON sweeper.alert_groups USING btree (channel, provider, reason, id);
CREATE TRIGGER alert_groups_no_delete BEFORE DELETE ON sweeper.alert_groups FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER alert_groups_no_truncate BEFORE TRUNCATE ON sweeper.alert_groups FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

CREATE TABLE sweeper.audits (
    operation_id bigint NOT NULL,
    provider text NOT NULL,
    settled_at timestamp with time zone NOT NULL,
    state text DEFAULT 'claimed'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    claimed_at timestamp with time zone DEFAULT now() NOT NULL,
    retry_at timestamp with time zone DEFAULT now() NOT NULL,
    audited_at timestamp with time zone,
    records integer,
    ticket_id bigint,
    CONSTRAINT audits_attempts_check CHECK (attempts >= 0),
    CONSTRAINT audits_check CHECK ((state = 'claimed'::text) = (audited_at IS NULL)),
    CONSTRAINT audits_pkey PRIMARY KEY (operation_id),
    CONSTRAINT audits_records_check CHECK (records >= 0),
    CONSTRAINT audits_state_check CHECK (state = ANY (ARRAY['claimed'::text, 'clean'::text, 'duplicate_effect'::text, 'effect_after_failed'::text]))
);
CREATE INDEX audits_claimed_idx ON sweeper.audits USING btree (provider, retry_at) WHERE (state = 'claimed'::text);
CREATE INDEX audits_provider_settled_idx ON sweeper.audits USING btree (provider, settled_at, operation_id);

CREATE TABLE sweeper.incidents (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    provider text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    waiting integer NOT NULL,
    last_error text,
    refresh_owner text,
    refresh_until timestamp with time zone,
    shown_root text,
    shown_reply text,
    reply_removed_at timestamp with time zone,
    refresh_final_at timestamp with time zone,
    moved_to_review integer DEFAULT 0 NOT NULL,
    moved_after interval,
    CONSTRAINT incidents_ended_check CHECK (ended_at IS NULL OR ended_at >= started_at),
    CONSTRAINT incidents_moved_to_review_check CHECK (moved_to_review >= 0),
    CONSTRAINT incidents_pkey PRIMARY KEY (id)
);
CREATE UNIQUE INDEX incidents_open_idx ON sweeper.incidents USING btree (provider) WHERE (ended_at IS NULL);
CREATE TRIGGER incidents_no_delete BEFORE DELETE ON sweeper.incidents FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER incidents_no_truncate BEFORE TRUNCATE ON sweeper.incidents FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

CREATE TABLE sweeper.lookup_claims (
    operation_id bigint NOT NULL,
    job_id bigint,
    claimed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT lookup_claims_pkey PRIMARY KEY (operation_id)
);

CREATE TABLE sweeper.outbox (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    event_id bigint,
    ticket_id bigint,
    dedupe_key text NOT NULL,
    kind text NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    lease_until timestamp with time zone DEFAULT now() NOT NULL,
    leased_by text,
    channel text,
    ts text,
    thread_ts text,
    last_error text,
    uncertain boolean DEFAULT false NOT NULL,
    first_attempt_at timestamp with time zone,
    history jsonb DEFAULT '[]'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    claimed_at timestamp with time zone,
    search_windows jsonb DEFAULT '[]'::jsonb NOT NULL,
    error_code text,
    replayed_at timestamp with time zone,
    removed_at timestamp with time zone,
    incident_id bigint,
    group_id bigint,
    silence_id bigint,
    receiver text DEFAULT 'slack'::text NOT NULL,
    destination text,
    reference text,
    CONSTRAINT outbox_attempts_check CHECK (attempts >= 0),
    CONSTRAINT outbox_dedupe_key_key UNIQUE (receiver, dedupe_key),
    CONSTRAINT outbox_event_id_fkey FOREIGN KEY (event_id) REFERENCES sweeper.ticket_events(id),
    CONSTRAINT outbox_event_id_key UNIQUE (event_id, receiver),
    CONSTRAINT outbox_folded_check CHECK (state <> 'folded'::text OR group_id IS NOT NULL AND ticket_id IS NOT NULL),
    CONSTRAINT outbox_group_id_fkey FOREIGN KEY (group_id) REFERENCES sweeper.alert_groups(id),
    CONSTRAINT outbox_group_member_check CHECK (group_id IS NULL OR ticket_id IS NULL OR kind = 'opened'::text OR state = 'folded'::text),
    CONSTRAINT outbox_history_check CHECK (jsonb_typeof(history) = 'array'::text),
    CONSTRAINT outbox_incident_id_fkey FOREIGN KEY (incident_id) REFERENCES sweeper.incidents(id),
    CONSTRAINT outbox_owner_check CHECK (ticket_id IS NOT NULL AND event_id IS NOT NULL AND incident_id IS NULL OR ticket_id IS NULL AND event_id IS NULL AND (incident_id IS NULL) <> (group_id IS NULL)),
    CONSTRAINT outbox_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_receiver_check CHECK (receiver = ANY (ARRAY['slack'::text, 'pagerduty'::text, 'webhook'::text])),
    CONSTRAINT outbox_search_windows_check CHECK (jsonb_typeof(search_windows) = 'array'::text),
    CONSTRAINT outbox_sent_check CHECK ((state = 'sent'::text) = (sent_at IS NOT NULL) AND (state <> 'sent'::text OR receiver <> 'slack'::text OR destination IS NOT NULL AND reference IS NOT NULL)),
    CONSTRAINT outbox_silence_id_fkey FOREIGN KEY (silence_id) REFERENCES sweeper.silences(id),
    CONSTRAINT outbox_silenced_check CHECK ((state = 'silenced'::text) = (silence_id IS NOT NULL)),
    CONSTRAINT outbox_state_check CHECK (state = ANY (ARRAY['pending'::text, 'sent'::text, 'parked'::text, 'dismissed'::text, 'skipped'::text, 'folded'::text, 'silenced'::text])),
    CONSTRAINT outbox_ticket_id_fkey FOREIGN KEY (ticket_id) REFERENCES sweeper.tickets(id)
);
CREATE INDEX outbox_claim_idx ON sweeper.outbox USING btree (state, lease_until);
CREATE INDEX outbox_group_idx ON sweeper.outbox USING btree (group_id) WHERE (group_id IS NOT NULL);
CREATE INDEX outbox_group_member_idx ON sweeper.outbox USING btree (group_id, ticket_id) WHERE ((kind = 'opened'::text) AND (group_id IS NOT NULL) AND (ticket_id IS NOT NULL));
CREATE INDEX outbox_group_message_idx ON sweeper.outbox USING btree (group_id) WHERE ((ticket_id IS NULL) AND (group_id IS NOT NULL));
CREATE INDEX outbox_incident_idx ON sweeper.outbox USING btree (incident_id, id) WHERE (incident_id IS NOT NULL);
CREATE INDEX outbox_pending_idx ON sweeper.outbox USING btree (created_at) WHERE (state = 'pending'::text);
CREATE INDEX outbox_receiver_claim_idx ON sweeper.outbox USING btree (receiver, lease_until) WHERE (state = 'pending'::text);
CREATE INDEX outbox_silence_idx ON sweeper.outbox USING btree (silence_id, ticket_id) WHERE (silence_id IS NOT NULL);
CREATE INDEX outbox_ticket_idx ON sweeper.outbox USING btree (ticket_id, id);
CREATE TRIGGER outbox_legacy_columns BEFORE INSERT OR UPDATE ON sweeper.outbox FOR EACH ROW EXECUTE FUNCTION sweeper.outbox_legacy_columns();
CREATE TRIGGER outbox_no_delete BEFORE DELETE ON sweeper.outbox FOR EACH ROW EXECUTE FUNCTION sweeper.outbox_prune_guard();
CREATE TRIGGER outbox_no_truncate BEFORE TRUNCATE ON sweeper.outbox FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

CREATE TABLE sweeper.provider_health (
    provider text NOT NULL,
    state text NOT NULL,
    since timestamp with time zone NOT NULL,
    down_seconds double precision DEFAULT 0 NOT NULL,
    probe_at timestamp with time zone,
    probe_backoff interval DEFAULT '00:00:05'::interval NOT NULL,
    probe_lease_until timestamp with time zone,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT provider_health_down_seconds_check CHECK (down_seconds >= 0::double precision),
    CONSTRAINT provider_health_pkey PRIMARY KEY (provider),
    CONSTRAINT provider_health_state_check CHECK (state = ANY (ARRAY['up'::text, 'down'::text]))
);
CREATE TRIGGER provider_health_incident AFTER INSERT OR UPDATE OF state ON sweeper.provider_health FOR EACH ROW EXECUTE FUNCTION sweeper.provider_health_incident();

CREATE TABLE sweeper.provider_lone_failures (
    provider text NOT NULL,
    op_key text NOT NULL,
    failed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT provider_lone_failures_pkey PRIMARY KEY (provider, op_key)
);

CREATE TABLE sweeper.provider_rate (
    provider text NOT NULL,
    tokens double precision NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT provider_rate_pkey PRIMARY KEY (provider)
);

CREATE TABLE sweeper.provider_tokens (
    key text NOT NULL,
    seed_sha256 text NOT NULL,
    access_token text NOT NULL,
    refresh_token text NOT NULL,
    refreshed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT provider_tokens_key_check CHECK (length(key) >= 1 AND length(key) <= 200),
    CONSTRAINT provider_tokens_pkey PRIMARY KEY (key),
    CONSTRAINT provider_tokens_seed_sha256_check CHECK (seed_sha256 ~ '^[0-9a-f]{64}$'::text)
);

CREATE TABLE sweeper.record_namespaces (
    provider text NOT NULL,
    namespace text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT record_namespaces_namespace_check CHECK (POSITION((':'::text) IN (namespace)) > 1),
    CONSTRAINT record_namespaces_pkey PRIMARY KEY (provider)
);

CREATE TABLE sweeper.routes (
    "position" integer NOT NULL,
    receiver text NOT NULL,
    provider text,
    workflow text,
    reason text,
    level integer DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT routes_level_check CHECK (level >= 0),
    CONSTRAINT routes_pkey PRIMARY KEY ("position"),
    CONSTRAINT routes_position_check CHECK ("position" >= 0),
    CONSTRAINT routes_provider_check CHECK (provider <> ''::text),
    CONSTRAINT routes_reason_check CHECK (reason <> ''::text),
    CONSTRAINT routes_receiver_check CHECK (receiver = ANY (ARRAY['slack'::text, 'pagerduty'::text, 'webhook'::text])),
    CONSTRAINT routes_workflow_check CHECK (workflow <> ''::text)
);

CREATE TABLE sweeper.silences (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    matchers jsonb NOT NULL,
    starts_at timestamp with time zone DEFAULT now() NOT NULL,
    ends_at timestamp with time zone NOT NULL,
    planned_end timestamp with time zone NOT NULL,
    created_by text NOT NULL,
    comment text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expired_by text,
    expired_at timestamp with time zone,
    released_at timestamp with time zone,
    CONSTRAINT silences_comment_check CHECK (btrim(comment) <> ''::text),
    CONSTRAINT silences_created_by_check CHECK (created_by ~ '^[UW][A-Z0-9]{2,}$'::text),
    CONSTRAINT silences_end_check CHECK (ends_at > starts_at OR expired_at IS NOT NULL),
    CONSTRAINT silences_expired_check CHECK ((expired_by IS NULL) = (expired_at IS NULL)),
    CONSTRAINT silences_matchers_check CHECK (jsonb_typeof(matchers) = 'array'::text AND jsonb_array_length(matchers) > 0),
    CONSTRAINT silences_pkey PRIMARY KEY (id),
    CONSTRAINT silences_planned_end_check CHECK (planned_end > starts_at AND ends_at <= planned_end),
    CONSTRAINT silences_released_check CHECK (released_at IS NULL OR released_at >= ends_at)
);
CREATE INDEX silences_unreleased_idx ON sweeper.silences USING btree (ends_at) WHERE (released_at IS NULL);
CREATE TRIGGER silences_guard BEFORE UPDATE ON sweeper.silences FOR EACH ROW EXECUTE FUNCTION sweeper.silences_guard();
CREATE TRIGGER silences_no_delete BEFORE DELETE ON sweeper.silences FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER silences_no_truncate BEFORE TRUNCATE ON sweeper.silences FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

CREATE TABLE sweeper.ticket_archives (
    ticket_id bigint NOT NULL,
    op_key text NOT NULL,
    file text NOT NULL,
    archived_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ticket_archives_file_check CHECK (file <> ''::text),
    CONSTRAINT ticket_archives_pkey PRIMARY KEY (ticket_id)
);
CREATE TRIGGER ticket_archives_append_only BEFORE DELETE OR UPDATE ON sweeper.ticket_archives FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER ticket_archives_no_truncate BEFORE TRUNCATE ON sweeper.ticket_archives FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();

CREATE TABLE sweeper.ticket_events (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    ticket_id bigint NOT NULL,
    kind text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    dedupe_key text NOT NULL,
    CONSTRAINT ticket_events_actor_check CHECK (actor <> ''::text),
    CONSTRAINT ticket_events_dedupe_key_key UNIQUE (dedupe_key),
    CONSTRAINT ticket_events_pkey PRIMARY KEY (id),
    CONSTRAINT ticket_events_ticket_id_fkey FOREIGN KEY (ticket_id) REFERENCES sweeper.tickets(id)
);
CREATE INDEX ticket_events_ticket_id_idx ON sweeper.ticket_events USING btree (ticket_id, id);
CREATE TRIGGER ticket_events_append_only BEFORE UPDATE ON sweeper.ticket_events FOR EACH ROW EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER ticket_events_no_delete BEFORE DELETE ON sweeper.ticket_events FOR EACH ROW EXECUTE FUNCTION sweeper.ticket_events_prune_guard();
CREATE TRIGGER ticket_events_no_truncate BEFORE TRUNCATE ON sweeper.ticket_events FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER ticket_events_outbox AFTER INSERT ON sweeper.ticket_events FOR EACH ROW EXECUTE FUNCTION sweeper.outbox_enqueue();

CREATE TABLE sweeper.tickets (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    operation_id bigint NOT NULL,
    op_key text NOT NULL,
    reason text NOT NULL,
    owner text NOT NULL,
    priority text NOT NULL,
    escalation_level integer DEFAULT 0 NOT NULL,
    state text DEFAULT 'open'::text NOT NULL,
    deadline timestamp with time zone NOT NULL,
    evidence jsonb NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    resolved_at timestamp with time zone,
    resolution text,
    resolved_by text,
    acknowledged_by text,
    acknowledged_at timestamp with time zone,
    acknowledged_level integer,
    resolution_note text,
    resolution_record_id text,
    repeat_count integer DEFAULT 0 NOT NULL,
    escalation_exhausted boolean DEFAULT false NOT NULL,
    relookup_at timestamp with time zone,
    relookups integer DEFAULT 0 NOT NULL,
    ack_lapses integer DEFAULT 0 NOT NULL,
    audit boolean GENERATED ALWAYS AS (reason = ANY (ARRAY['duplicate_effect'::text, 'effect_after_failed'::text])) STORED NOT NULL,
    CONSTRAINT tickets_ack_lapses_check CHECK (ack_lapses >= 0),
    CONSTRAINT tickets_acknowledged_check CHECK (acknowledged_by IS NULL AND acknowledged_at IS NULL AND acknowledged_level IS NULL OR acknowledged_by IS NOT NULL AND acknowledged_at IS NOT NULL AND acknowledged_level IS NOT NULL AND acknowledged_by <> ''::text AND char_length(acknowledged_by) <= 200 AND acknowledged_level >= 0 AND acknowledged_level <= escalation_level),
    CONSTRAINT tickets_escalation_level_check CHECK (escalation_level >= 0),
    CONSTRAINT tickets_operation_id_audit_key UNIQUE (operation_id, audit),
    CONSTRAINT tickets_owner_check CHECK (owner <> ''::text),
    CONSTRAINT tickets_pkey PRIMARY KEY (id),
    CONSTRAINT tickets_priority_check CHECK (priority = ANY (ARRAY['low'::text, 'normal'::text, 'high'::text, 'urgent'::text])),
    CONSTRAINT tickets_reason_check CHECK (reason = ANY (ARRAY['not_found'::text, 'multiple_matches'::text, 'payload_mismatch'::text, 'ambiguous_owner'::text, 'lookup_failed'::text, 'lookup_unsupported'::text, 'invalid_operation'::text, 'in_flight'::text, 'provider_failed'::text, 'provider_reversed'::text, 'duplicate_effect'::text, 'effect_after_failed'::text])),
    CONSTRAINT tickets_relookups_check CHECK (relookups >= 0),
    CONSTRAINT tickets_repeat_count_check CHECK (repeat_count >= 0),
    CONSTRAINT tickets_resolution_check CHECK (state = 'open'::text AND resolution IS NULL OR state = 'resolved'::text AND (resolution = ANY (ARRAY['done'::text, 'not_sent'::text, 'duplicate'::text])) AND resolved_at IS NOT NULL),
    CONSTRAINT tickets_resolution_fields_check CHECK ((state = 'resolved'::text OR resolution_note IS NULL AND resolution_record_id IS NULL) AND char_length(resolution_note) <= 2000 AND resolution_record_id <> ''::text),
    CONSTRAINT tickets_state_check CHECK (state = ANY (ARRAY['open'::text, 'resolved'::text]))
);
CREATE INDEX tickets_created_idx ON sweeper.tickets USING btree (created_at);
CREATE INDEX tickets_op_key_prefix_idx ON sweeper.tickets USING btree (op_key text_pattern_ops);
CREATE INDEX tickets_open_ack_idx ON sweeper.tickets USING btree (acknowledged_at, id) WHERE ((state = 'open'::text) AND (NOT escalation_exhausted) AND (acknowledged_at IS NOT NULL));
CREATE INDEX tickets_open_created_idx ON sweeper.tickets USING btree (created_at, id) WHERE (state = 'open'::text);
CREATE INDEX tickets_open_deadline_idx ON sweeper.tickets USING btree (deadline, id) WHERE ((state = 'open'::text) AND (NOT escalation_exhausted));
CREATE INDEX tickets_open_exhausted_idx ON sweeper.tickets USING btree (deadline, id) WHERE ((state = 'open'::text) AND escalation_exhausted);
CREATE INDEX tickets_open_owner_idx ON sweeper.tickets USING btree (owner, deadline, id) WHERE ((state = 'open'::text) AND (owner <> ''::text));
CREATE INDEX tickets_open_priority_idx ON sweeper.tickets USING btree (((-
CASE priority
    WHEN 'urgent'::text THEN 3
    WHEN 'high'::text THEN 2
    WHEN 'normal'::text THEN 1
    ELSE 0
END)), deadline, id) WHERE ((state = 'open'::text) AND (priority <> ''::text));
CREATE INDEX tickets_open_provider_idx ON sweeper.tickets USING btree (((evidence ->> 'provider'::text)), deadline, id) WHERE ((state = 'open'::text) AND ((evidence ->> 'provider'::text) IS NOT NULL));
CREATE INDEX tickets_open_unacknowledged_idx ON sweeper.tickets USING btree ((
CASE
    WHEN (acknowledged_by IS NULL) THEN 0
    ELSE 1
END), deadline, id) WHERE ((state = 'open'::text) AND (version > 0));
CREATE INDEX tickets_records_idx ON sweeper.tickets USING gin (((evidence -> 'records'::text)) jsonb_path_ops);
CREATE INDEX tickets_relookup_idx ON sweeper.tickets USING btree (relookup_at, id) WHERE ((state = 'open'::text) AND (relookup_at IS NOT NULL));
CREATE INDEX tickets_resolved_at_idx ON sweeper.tickets USING btree (resolved_at, id) WHERE (state = 'resolved'::text);
CREATE INDEX tickets_resolved_by_idx ON sweeper.tickets USING btree (resolved_by) WHERE (state = 'resolved'::text);
CREATE TRIGGER tickets_escalation_forward BEFORE UPDATE ON sweeper.tickets FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_escalation_forward();
CREATE TRIGGER tickets_guard BEFORE UPDATE ON sweeper.tickets FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_guard();
CREATE TRIGGER tickets_no_delete BEFORE DELETE ON sweeper.tickets FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_prune_guard();
CREATE TRIGGER tickets_no_truncate BEFORE TRUNCATE ON sweeper.tickets FOR EACH STATEMENT EXECUTE FUNCTION sweeper.reject_change();
CREATE TRIGGER tickets_writer_guard BEFORE UPDATE ON sweeper.tickets FOR EACH ROW EXECUTE FUNCTION sweeper.tickets_writer_guard();

-- Views

-- Functions and procedures: each one's current definition

CREATE OR REPLACE FUNCTION ledger.operations_contract()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    changed text[] := '{}';
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.workflow IS DISTINCT FROM OLD.workflow THEN changed := changed || 'workflow'::text; END IF;
        IF NEW.provider IS DISTINCT FROM OLD.provider THEN changed := changed || 'provider'::text; END IF;
        IF NEW.action IS DISTINCT FROM OLD.action THEN changed := changed || 'action'::text; END IF;
        IF NEW.recipient IS DISTINCT FROM OLD.recipient THEN changed := changed || 'recipient'::text; END IF;
        IF NEW.payload_hash IS DISTINCT FROM OLD.payload_hash THEN changed := changed || 'payload_hash'::text; END IF;
        IF NEW.payload IS DISTINCT FROM OLD.payload THEN changed := changed || 'payload'::text; END IF;
        IF cardinality(changed) > 0 THEN
            RAISE EXCEPTION 'ledger.operations %: % cannot change once inserted; to attempt another effect, write a new operation',
                OLD.op_key, array_to_string(changed, ', ')
                USING ERRCODE = 'check_violation',
                      SCHEMA = 'ledger', TABLE = 'operations',
                      CONSTRAINT = 'operations_identity_final';
        END IF;
        IF NEW.first_attempt_at IS DISTINCT FROM OLD.first_attempt_at
           AND NOT (OLD.status = 'pending' AND NEW.status = 'pending') THEN
            RAISE EXCEPTION 'ledger.operations %: first_attempt_at cannot change once the row has left pending (it is %)',
                OLD.op_key, OLD.status
                USING ERRCODE = 'check_violation',
                      SCHEMA = 'ledger', TABLE = 'operations',
                      CONSTRAINT = 'operations_first_attempt_at_final';
        END IF;
    END IF;

    IF NEW.status = 'review' AND (TG_OP = 'INSERT' OR OLD.status = 'pending')
       AND current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper' THEN
        RAISE EXCEPTION 'ledger.operations %: only sweeper moves a row to review; leave the row pending: sweeper moves it to review and opens its ticket in the same transaction',
            NEW.op_key
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_review_by_sweeper';
    END IF;

    IF (TG_OP = 'INSERT' OR NEW.first_attempt_at IS DISTINCT FROM OLD.first_attempt_at)
       AND (NOT isfinite(NEW.first_attempt_at) OR NEW.first_attempt_at > now() + interval '5 minutes') THEN
        RAISE EXCEPTION 'ledger.operations %: first_attempt_at % is not when an attempt was made: it must be finite and at most 5 minutes (clock skew) after the database''s now(), %',
            NEW.op_key, NEW.first_attempt_at, now()
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_first_attempt_at_check';
    END IF;
    RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION ledger.operations_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
           (OLD.status = 'pending' AND NEW.status IN ('done', 'review', 'failed'))
        OR (OLD.status = 'review'  AND NEW.status IN ('done', 'failed'))
    ) THEN
        RAISE EXCEPTION 'ledger.operations %: illegal status transition % -> %',
            OLD.op_key, OLD.status, NEW.status
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_status_transition';
    END IF;
    IF OLD.provider_record_id IS NOT NULL
       AND NEW.provider_record_id IS DISTINCT FROM OLD.provider_record_id THEN
        RAISE EXCEPTION 'ledger.operations %: provider_record_id cannot change once set (% -> %)',
            OLD.op_key, OLD.provider_record_id, coalesce(NEW.provider_record_id, 'NULL')
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_provider_record_id_final';
    END IF;
    IF NEW.op_key IS DISTINCT FROM OLD.op_key THEN
        RAISE EXCEPTION 'ledger.operations %: op_key cannot change (-> %)', OLD.op_key, NEW.op_key
            USING ERRCODE = 'check_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_op_key_final';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION ledger.operations_keep_open_tickets()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    ticket bigint;
    open_tickets bigint;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        SELECT count(*) INTO open_tickets FROM sweeper.tickets WHERE state = 'open';
        IF open_tickets > 0 THEN
            RAISE EXCEPTION 'ledger.operations: truncate refused while % tickets are open; resolve them first', open_tickets
                USING ERRCODE = 'restrict_violation',
                      SCHEMA = 'ledger', TABLE = 'operations',
                      CONSTRAINT = 'operations_open_ticket';
        END IF;
        RETURN NULL;
    END IF;
    SELECT id INTO ticket FROM sweeper.tickets WHERE operation_id = OLD.id AND state = 'open';
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.operations %: ticket % is open for this operation; resolve the ticket first', OLD.op_key, ticket
            USING ERRCODE = 'restrict_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_open_ticket';
    END IF;
    RETURN OLD;
END
$function$;

CREATE OR REPLACE FUNCTION ledger.operations_record_once()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    ns text;
    holder record;
BEGIN
    IF NEW.provider_record_id IS NULL
       OR (TG_OP = 'UPDATE' AND NEW.provider_record_id IS NOT DISTINCT FROM OLD.provider_record_id) THEN
        RETURN NEW;
    END IF;
    ns := sweeper.record_namespace(NEW.provider);
    IF position(':' IN ns) = 0 THEN
        RETURN NEW; -- a namespace of one block: the unique index holds it
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(ns || ':' || NEW.provider_record_id, 7));
    SELECT h.op_key, h.provider INTO holder FROM ledger.operations h
    WHERE h.provider_record_id = NEW.provider_record_id
      AND h.provider <> NEW.provider -- the same block's holder: the unique index answers
      AND h.provider = ANY(sweeper.record_namespace_blocks(NEW.provider))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.operations %: provider record % already proves operation % (provider %, the same record namespace %): one record proves one operation',
            NEW.op_key, NEW.provider_record_id, holder.op_key, holder.provider, ns
            USING ERRCODE = 'unique_violation',
                  SCHEMA = 'ledger', TABLE = 'operations',
                  CONSTRAINT = 'operations_record_namespace',
                  DETAIL = format('Record %s of namespace %s is held by operation %s.', NEW.provider_record_id, ns, holder.op_key);
    END IF;
    RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.adopted_no_truncate()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    open_tickets bigint;
BEGIN
    SELECT count(*) INTO open_tickets FROM sweeper.tickets WHERE state = 'open';
    IF open_tickets > 0 THEN
        RAISE EXCEPTION '%: truncate refused while % tickets are open; resolve them first', TG_RELID::regclass, open_tickets
            USING ERRCODE = 'restrict_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_open_ticket';
    END IF;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.adopted_open_ticket(operation_id bigint)
 RETURNS bigint
 LANGUAGE sql
 STABLE
AS $function$
    SELECT t.id FROM sweeper.tickets t WHERE t.operation_id = $1 AND t.state = 'open' LIMIT 1
$function$;

CREATE OR REPLACE FUNCTION sweeper.outbox_enqueue()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION sweeper.outbox_legacy_columns()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION sweeper.outbox_prune_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION sweeper.provider_health_incident()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION sweeper.record_namespace(block text)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
    SELECT coalesce((SELECT n.namespace FROM sweeper.record_namespaces n WHERE n.provider = block), block)
$function$;

CREATE OR REPLACE FUNCTION sweeper.record_namespace_blocks(block text)
 RETURNS text[]
 LANGUAGE sql
 STABLE
AS $function$
    SELECT array_agg(DISTINCT b ORDER BY b) FROM (
        SELECT block AS b
        UNION ALL
        SELECT n.provider FROM sweeper.record_namespaces n
        WHERE n.namespace = sweeper.record_namespace(block)
    ) AS s
$function$;

CREATE OR REPLACE FUNCTION sweeper.reject_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION '%.%: % is not allowed; the history is append-only',
        TG_TABLE_SCHEMA, TG_TABLE_NAME, lower(TG_OP)
        USING ERRCODE = 'check_violation', CONSTRAINT = TG_TABLE_NAME || '_append_only';
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.silence_matches(matchers jsonb, labels jsonb)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(matchers) AS m
        WHERE NOT CASE m->>'op'
            WHEN '=' THEN coalesce(labels->>(m->>'name'), '') = m->>'value'
            WHEN '=~' THEN coalesce(labels->>(m->>'name'), '') ~ ('^(?:' || (m->>'value') || ')$')
            ELSE false END)
$function$;

CREATE OR REPLACE FUNCTION sweeper.silence_pattern_error(pattern text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
BEGIN
    PERFORM '' ~ ('^(?:' || pattern || ')$');
    RETURN NULL;
EXCEPTION WHEN invalid_regular_expression OR program_limit_exceeded THEN
    RETURN SQLERRM;
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.silences_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION sweeper.ticket_archived(id bigint)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT EXISTS (SELECT 1 FROM sweeper.ticket_archives a WHERE a.ticket_id = id)
$function$;

CREATE OR REPLACE FUNCTION sweeper.ticket_events_prune_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR NOT sweeper.ticket_archived(OLD.ticket_id) THEN
        RAISE EXCEPTION 'sweeper.ticket_events: delete is not allowed; only sweeper deletes the events of tickets it has archived (retention.resolved_tickets)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'ticket_events_append_only';
    END IF;
    RETURN OLD;
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.tickets_escalation_forward()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.escalation_level < OLD.escalation_level
       OR (NEW.escalation_level = OLD.escalation_level AND NEW.repeat_count < OLD.repeat_count)
       OR (OLD.escalation_exhausted AND NOT NEW.escalation_exhausted) THEN
        RAISE EXCEPTION 'sweeper.tickets %: escalation only moves forward (level % -> %, repeats % -> %, exhausted % -> %)',
            OLD.id, OLD.escalation_level, NEW.escalation_level, OLD.repeat_count, NEW.repeat_count,
            OLD.escalation_exhausted, NEW.escalation_exhausted
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_escalation_forward';
    END IF;
    RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.tickets_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.evidence IS DISTINCT FROM OLD.evidence THEN
        RAISE EXCEPTION 'sweeper.tickets %: the evidence snapshot is immutable; append an event instead', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_evidence_immutable';
    END IF;
    IF OLD.state = 'resolved' THEN
        RAISE EXCEPTION 'sweeper.tickets %: a resolved ticket is final', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_resolved_final';
    END IF;
    IF NEW.operation_id IS DISTINCT FROM OLD.operation_id OR NEW.op_key IS DISTINCT FROM OLD.op_key THEN
        RAISE EXCEPTION 'sweeper.tickets %: the operation cannot change', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_operation_final';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.tickets_prune_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper'
       OR OLD.state <> 'resolved' OR NOT sweeper.ticket_archived(OLD.id) THEN
        RAISE EXCEPTION 'sweeper.tickets: delete is not allowed; only sweeper deletes resolved tickets it has archived (retention.resolved_tickets)'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_append_only';
    END IF;
    RETURN OLD;
END
$function$;

CREATE OR REPLACE FUNCTION sweeper.tickets_writer_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    changed text[] := '{}';
BEGIN
    IF NEW.reason IS DISTINCT FROM OLD.reason THEN changed := changed || 'reason'::text; END IF;
    IF NEW.created_at IS DISTINCT FROM OLD.created_at THEN changed := changed || 'created_at'::text; END IF;
    IF cardinality(changed) > 0 THEN
        RAISE EXCEPTION 'sweeper.tickets %: % cannot change', OLD.id, array_to_string(changed, ', ')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_record_final';
    END IF;
    IF current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper' THEN
        IF NEW.owner IS DISTINCT FROM OLD.owner THEN changed := changed || 'owner'::text; END IF;
        IF NEW.priority IS DISTINCT FROM OLD.priority THEN changed := changed || 'priority'::text; END IF;
        IF NEW.escalation_level IS DISTINCT FROM OLD.escalation_level THEN changed := changed || 'escalation_level'::text; END IF;
        IF NEW.deadline IS DISTINCT FROM OLD.deadline THEN changed := changed || 'deadline'::text; END IF;
        IF NEW.repeat_count IS DISTINCT FROM OLD.repeat_count THEN changed := changed || 'repeat_count'::text; END IF;
        IF NEW.escalation_exhausted IS DISTINCT FROM OLD.escalation_exhausted THEN changed := changed || 'escalation_exhausted'::text; END IF;
        IF NEW.ack_lapses IS DISTINCT FROM OLD.ack_lapses THEN changed := changed || 'ack_lapses'::text; END IF;
        IF cardinality(changed) > 0 THEN
            RAISE EXCEPTION 'sweeper.tickets %: % change only by sweeper''s escalation; to take the ticket, acknowledge it; to settle it, resolve it',
                OLD.id, array_to_string(changed, ', ')
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tickets_escalation_by_sweeper';
        END IF;
    END IF;
    RETURN NEW;
END
$function$;
