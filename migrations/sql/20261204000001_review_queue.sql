-- +goose Up
-- The review page's queue, so that each page is an index range however
-- many tickets there are: open tickets by deadline — those still
-- escalating through the escalation scan's tickets_open_deadline_idx, the
-- exhausted ones through their own, merged — by age, and by provider in
-- deadline order. No other index leads with the open tickets' deadline:
-- the planner weighs any such index against the escalation scan's own (an
-- owner's tickets, "mine", are read through the deadline order).
CREATE INDEX tickets_open_exhausted_idx ON sweeper.tickets (deadline, id) WHERE state = 'open' AND escalation_exhausted;
CREATE INDEX tickets_open_created_idx ON sweeper.tickets (created_at, id) WHERE state = 'open';
CREATE INDEX tickets_open_provider_idx ON sweeper.tickets ((evidence->>'provider'), deadline, id) WHERE state = 'open';

-- +goose Down
DROP INDEX sweeper.tickets_open_provider_idx;
DROP INDEX sweeper.tickets_open_created_idx;
DROP INDEX sweeper.tickets_open_exhausted_idx;
