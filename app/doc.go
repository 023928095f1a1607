// Package app wires sweeper together, in one place: configuration into
// providers and policies, the database pool (Open: waiting for the
// database, checking its migrations, syncing its clock), the River client
// with its workers and periodic jobs (NewDaemon, StartDaemon), the
// once-runners the commands call (SweepOnce, EscalateOnce, RelookupOnce,
// Deliver), Slack's dispatcher and interactivity endpoint, the daemon's
// HTTP server (NewHTTPServer), and the collector of what the database
// holds. Everything it builds comes from [App]; the packages below it
// (jobs, settle, review, notify, providers, ledger) receive what
// they need through their constructors.
package app
