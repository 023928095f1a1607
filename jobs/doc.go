// Package jobs holds sweeper's River jobs: the args of each (sweep, lookup,
// escalate, escalate_ticket, relookup_ticket, notify) and the worker that
// runs it, translating River's job state (attempts, metadata, snoozes) into
// calls of package settle and its results back into River's terms. The
// River client that runs them is wired in internal/app.
package jobs
