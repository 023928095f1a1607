-- +goose Up
-- The review page's queue, so that each page is an index range however
-- many tickets there are: open tickets by deadline — those still
-- escalating through the escalation scan's tickets_open_deadline_idx, the
-- exhausted ones through their own, merged — by age, by priority, and by
-- provider and by owner ("mine") in deadline order. No other index serves
-- the open tickets in deadline order, for the planner would weigh it
-- against the escalation scan's own (PostgreSQL may skip-scan an index
-- over its leading column): each is partial on a predicate only the
-- queue's queries imply (owner <> '', priority <> '', a provider named —
-- always true).
CREATE INDEX tickets_open_exhausted_idx ON sweeper.tickets (deadline, id) WHERE state = 'open' AND escalation_exhausted;
CREATE INDEX tickets_open_created_idx ON sweeper.tickets (created_at, id) WHERE state = 'open';
CREATE INDEX tickets_open_provider_idx ON sweeper.tickets ((evidence->>'provider'), deadline, id)
    WHERE state = 'open' AND (evidence->>'provider') IS NOT NULL;
CREATE INDEX tickets_open_owner_idx ON sweeper.tickets (owner, deadline, id) WHERE state = 'open' AND owner <> '';
-- By priority, the highest first, then by deadline: review.Reader.Queue's
-- order key, written exactly as it is there.
CREATE INDEX tickets_open_priority_idx ON sweeper.tickets
    ((-(CASE priority WHEN 'urgent' THEN 3 WHEN 'high' THEN 2 WHEN 'normal' THEN 1 ELSE 0 END)), deadline, id)
    WHERE state = 'open' AND priority <> '';

-- +goose Down
DROP INDEX sweeper.tickets_open_priority_idx;
DROP INDEX sweeper.tickets_open_owner_idx;
DROP INDEX sweeper.tickets_open_provider_idx;
DROP INDEX sweeper.tickets_open_created_idx;
DROP INDEX sweeper.tickets_open_exhausted_idx;
