package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/tools/demo"
)

// newDemoCmd parses `sweeper demo`'s flags and runs tools/demo.
func newDemoCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo [--ops N] [--timeout D] [--keep]",
		Short: "see it work: a seeded ledger, the daemon, simulated providers and a fake Slack, no setup",
		Long: "demo seeds a ledger with stale pending operations over simulated providers, runs the daemon\n" +
			"on fast schedules with a fake Slack, and prints each thing that happens: operations proven\n" +
			"done, tickets opened and escalated, Slack messages as text. One provider answers only errors\n" +
			"at first: it goes down for the cluster (one incident message, its lookups wait) and comes\n" +
			"back; a few records turn up late, and their tickets settle by themselves at a re-lookup.\n" +
			"It stops once every operation is settled and a ticket has escalated, prints a summary\n" +
			"(incidents, tickets settled by themselves, root Slack messages against tickets opened)\n" +
			"and removes what it created; with --keep, the daemon and the review page stay up after the\n" +
			"summary until Ctrl-C, then it removes what it created.\n\n" +
			"It uses the server in $SWEEPER_DATABASE_URL (in a database of its own, dropped afterwards),\n" +
			"else starts a throwaway cluster with the machine's initdb and pg_ctl.\n" +
			"Exit codes: 0 done, 1 timed out, interrupted or a runtime failure, 2 usage or no PostgreSQL.",
		Args: noArgs,
	}
	ops := cmd.Flags().Int("ops", demo.DefaultOps, fmt.Sprintf("stale operations to seed (%d to %d)", demo.MinOps, demo.MaxOps))
	timeout := cmd.Flags().Duration("timeout", 3*time.Minute, "give up after this long: print what is unfinished and exit 1")
	keep := cmd.Flags().Bool("keep", false, "after the summary, keep the daemon and the review page running until Ctrl-C, to look around")
	adopt := cmd.Flags().Bool("adopt", false, "run on a log table of the workflows' own (public.outbound_log, mapped in [ledger]) instead of ledger.operations")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return exited(demo.Run(cmd.Context(), demo.Options{Ops: *ops, Timeout: *timeout, Keep: *keep, Adopt: *adopt,
			Stdout: e.stdout, Stderr: e.stderr, Getenv: e.getenv}))
	}
	noConfig(cmd)
	return cmd
}
