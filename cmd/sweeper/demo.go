package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sweeper/sweeper/internal/demo"
)

// runDemo parses `sweeper demo`'s flags and runs internal/demo.
func runDemo(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "demo", "demo [--ops N] [--timeout D]")
	ops := fs.Int("ops", demo.DefaultOps, fmt.Sprintf("stale operations to seed (%d to %d)", demo.MinOps, demo.MaxOps))
	timeout := fs.Duration("timeout", 3*time.Minute, "give up after this long: print what is unfinished and exit 1")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: sweeper demo [--ops N] [--timeout D]\n\n"+
			"Seeds a ledger with stale pending operations over simulated providers, runs the daemon\n"+
			"on fast schedules with a fake Slack, and prints each thing that happens: operations proven\n"+
			"done, tickets opened and escalated, Slack messages as text. One provider answers only errors\n"+
			"at first: it goes down for the cluster (one incident message, its lookups wait) and comes\n"+
			"back; a few records turn up late, and their tickets settle by themselves at a re-lookup.\n"+
			"It stops once every operation is settled and a ticket has escalated, prints a summary\n"+
			"(incidents, tickets settled by themselves, root Slack messages against tickets opened)\n"+
			"and removes what it created.\n\n"+
			"It uses the server in $SWEEPER_DATABASE_URL (in a database of its own, dropped afterwards),\n"+
			"else starts a throwaway cluster with the machine's initdb and pg_ctl.\n"+
			"Exit codes: 0 done, 1 timed out, interrupted or a runtime failure, 2 usage or no PostgreSQL.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	return demo.Run(ctx, demo.Options{Ops: *ops, Timeout: *timeout, Stdout: e.stdout, Stderr: e.stderr, Getenv: e.getenv})
}
