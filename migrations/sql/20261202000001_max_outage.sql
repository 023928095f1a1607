-- +goose Up
-- A provider down for longer than its max_outage gives its waiting
-- operations to people: they move to review as lookup_failed tickets in one
-- step, and the incident's messages say how many, and after how long.
ALTER TABLE sweeper.incidents
    ADD COLUMN moved_to_review integer  NOT NULL DEFAULT 0,
    -- The max_outage they were moved after (the last, when several steps).
    ADD COLUMN moved_after     interval,
    ADD CONSTRAINT incidents_moved_to_review_check CHECK (moved_to_review >= 0);

-- +goose Down
ALTER TABLE sweeper.incidents
    DROP CONSTRAINT incidents_moved_to_review_check,
    DROP COLUMN moved_to_review,
    DROP COLUMN moved_after;
