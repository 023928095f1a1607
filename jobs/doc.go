// Package jobs is sweeper's River side: the args of each job (sweep,
// lookup_batch, escalate, escalate_ticket, relookup_ticket, notify, prune),
// the workers that run them, the periodic runs, and the logger River's
// client gets. What to ask, when to ask again, when to give up and what an
// answer proves are package settle's (notify's, for delivery); a worker
// calls those steps and translates them into River's terms — job args and
// follow-up jobs, snoozes, retries, timeouts, and completion in the
// transaction of what the job wrote. Beside River's job table it keeps the
// lookup claims (sweeper.lookup_claims), so that the sweep hands an
// operation a lookup job holds on only once. [Pass] runs the sweep's and
// the lookup job's own steps in process, without River (`sweep --once`):
// one settle path, whichever runs it. The River client that runs the
// workers is wired in app.
package jobs
