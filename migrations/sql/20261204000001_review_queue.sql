-- +goose Up
-- The review page's queue: open tickets by deadline (the escalation scan's
-- index leaves exhausted tickets out) and by age, and by provider in
-- deadline order, so that each page is an index range however many
-- tickets there are. An owner's tickets ("mine") are read through the
-- deadline order: an index on (owner, deadline) was preferred by the
-- planner (as a skip scan) over the escalation scan's own index.
CREATE INDEX tickets_open_queue_idx ON sweeper.tickets (deadline, id) WHERE state = 'open';
CREATE INDEX tickets_open_created_idx ON sweeper.tickets (created_at, id) WHERE state = 'open';
CREATE INDEX tickets_open_provider_idx ON sweeper.tickets ((evidence->>'provider'), deadline, id) WHERE state = 'open';

-- +goose Down
DROP INDEX sweeper.tickets_open_provider_idx;
DROP INDEX sweeper.tickets_open_created_idx;
DROP INDEX sweeper.tickets_open_queue_idx;
