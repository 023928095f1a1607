-- +goose Up
-- The outbox leaves no row stuck for good.
--
-- An attempt whose result is unknown may have posted its message between
-- the moment it was claimed and the end of its lease, and nowhere else: it
-- records that window, with where it posted, in search_windows, and the next
-- attempt searches those windows alone (conversations.history with oldest
-- and latest), which later chatter in the channel cannot make longer. A
-- search that still cannot finish parks the row.
--
-- A parked row carries the code of its error (Slack's, or sweeper's:
-- expired, search_inconclusive, no_channel), to replay rows by cause. A row
-- that can never succeed is dismissed by a person: state dismissed, with who
-- and why in its history. A root message removed from Slack is marked
-- removed_at, and the ticket's next message becomes its new root.
ALTER TABLE sweeper.outbox
    -- When the current or last claim was made: the start of its attempt.
    ADD COLUMN claimed_at     timestamptz,
    -- [{"channel", "thread_ts", "from", "until"}]: where and when attempts
    -- whose result is unknown may have posted the message.
    ADD COLUMN search_windows jsonb       NOT NULL DEFAULT '[]',
    ADD COLUMN error_code     text,
    ADD COLUMN replayed_at    timestamptz,
    ADD COLUMN removed_at     timestamptz,
    ADD CONSTRAINT outbox_search_windows_check CHECK (jsonb_typeof(search_windows) = 'array');

ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked', 'dismissed'));

-- Rows left uncertain by an earlier version searched from their first
-- attempt on: that is their window, up to now.
UPDATE sweeper.outbox
SET search_windows = jsonb_build_array(jsonb_build_object(
        'channel', channel, 'thread_ts', coalesce(thread_ts, ''),
        'from', first_attempt_at, 'until', greatest(lease_until, now())))
WHERE state IN ('pending', 'parked') AND uncertain AND ts IS NULL
  AND channel IS NOT NULL AND first_attempt_at IS NOT NULL;

-- Parked rows' codes, from their error text ("chat.postMessage: not_in_channel").
UPDATE sweeper.outbox
SET error_code = CASE WHEN last_error LIKE 'expired:%' THEN 'expired'
                      ELSE substring(last_error FROM ': ([a-z_]+)$') END
WHERE state = 'parked';

-- The pending rows by age, for the metrics.
CREATE INDEX outbox_pending_idx ON sweeper.outbox (created_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX sweeper.outbox_pending_idx;
-- An earlier version knows no dismissed rows: they are parked again, with
-- the history that says who dismissed them.
UPDATE sweeper.outbox SET state = 'parked' WHERE state = 'dismissed';
ALTER TABLE sweeper.outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE sweeper.outbox ADD CONSTRAINT outbox_state_check
    CHECK (state IN ('pending', 'sent', 'parked'));
ALTER TABLE sweeper.outbox
    DROP CONSTRAINT outbox_search_windows_check,
    DROP COLUMN removed_at,
    DROP COLUMN replayed_at,
    DROP COLUMN error_code,
    DROP COLUMN search_windows,
    DROP COLUMN claimed_at;
