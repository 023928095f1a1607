-- +goose Up
-- A lookup job holds operations of one provider (kind 'lookup_batch', args
-- {"provider": …, "ops": [{"id": …}, …]}) and claims each in
-- sweeper.lookup_claims. The job of one operation that older versions
-- queued (kind 'lookup', args {"operation_id": …}) has no worker any more:
-- each one still unfinished becomes a lookup_batch job of its one
-- operation, in place — same id, queue, state and schedule — so that its
-- lookup goes on where it stands rather than start over:
--
--   - what it had spent moves into the operation's entry in the args, as a
--     lookup_batch job carries it: the failed runs River recorded become
--     its attempts, and the latest 20 of them its errors (the list a
--     lookup_failed ticket shows); the start of its lookup budget, kept in
--     the job's metadata (sweeper_first_asked), becomes its first_asked.
--     The job's own River attempts start over: they count only the job's
--     own failures now, its operation's travel in the args.
--   - its operation is claimed for it, taking over a claim whose job has
--     ended (the next sweep would have released it).
--
-- An operation no longer pending, or whose row is gone, is rewritten too:
-- the lookup_batch job finds nothing to ask, releases the claim and
-- completes, as the old job would have done nothing. Deleting the jobs
-- instead, for the next sweep to find their operations again, would lose
-- the attempts and restart the budget.
--
-- The one exception is an operation a lookup_batch job already holds (a
-- sweep of a version that ran both kinds claimed it): that job looks it
-- up, so the old one is cancelled, saying why. So is any second old job of
-- one operation, should River's uniqueness have let one through.

CREATE TEMPORARY TABLE old_lookups ON COMMIT DROP AS
SELECT j.id, (j.args->>'operation_id')::bigint AS operation_id,
       -- The first job of each operation, unless a lookup_batch job holds it.
       j.id = min(j.id) OVER (PARTITION BY j.args->>'operation_id')
       AND NOT EXISTS (
           SELECT 1 FROM sweeper.lookup_claims c JOIN sweeper.river_job h ON h.id = c.job_id
           WHERE c.operation_id = (j.args->>'operation_id')::bigint
             AND h.state IN ('available', 'pending', 'retryable', 'running', 'scheduled')) AS rewrite
FROM sweeper.river_job j
WHERE j.kind = 'lookup' AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled');

UPDATE sweeper.river_job j
SET kind = 'lookup_batch',
    args = jsonb_build_object('provider', coalesce(o.provider, ''), 'ops', jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
        'id', l.operation_id,
        'attempts', nullif(coalesce(cardinality(j.errors), 0), 0),
        'first_asked', j.metadata->'sweeper_first_asked',
        'errors', (SELECT jsonb_agg(jsonb_build_object('at', e.err->'at', 'attempt', e.err->'attempt',
                                                       'class', 'transient', 'error', e.err->'error') ORDER BY e.n)
                   FROM unnest(j.errors[greatest(1, cardinality(j.errors) - 19):]) WITH ORDINALITY AS e(err, n))
    )))),
    attempt = 0,
    max_attempts = 25,
    errors = NULL,
    metadata = j.metadata - 'sweeper_first_asked',
    unique_key = NULL,
    unique_states = NULL
FROM old_lookups l LEFT JOIN ledger.operations o ON o.id = l.operation_id
WHERE j.id = l.id AND l.rewrite;

INSERT INTO sweeper.lookup_claims (operation_id, job_id)
SELECT operation_id, id FROM old_lookups WHERE rewrite
ON CONFLICT (operation_id) DO UPDATE SET job_id = EXCLUDED.job_id, claimed_at = now();

UPDATE sweeper.river_job j
SET state = 'cancelled',
    finalized_at = now(),
    errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt,
        'error', 'cancelled on upgrade: a lookup_batch job holds its operation', 'trace', ''))
FROM old_lookups l
WHERE j.id = l.id AND NOT l.rewrite;

-- +goose Down
-- Nothing to undo: the versions before this one run lookup_batch jobs too.
SELECT 1;
