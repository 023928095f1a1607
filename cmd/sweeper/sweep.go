package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/proof"
)

func newSweepCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep --once [--dry-run] [-v]",
		Short: "one full pass of scan, lookups and decisions, then exit",
		Long: "sweep --once runs one full pass in the foreground — the scan, every lookup, every decision —\n" +
			"and prints a summary. It exits 1 when the pass had errors, with one line on stderr saying which:\n" +
			"a provider that could not be asked which account it reaches is named there by its key\n" +
			"(providers.NAME), its operations left pending, while every other provider's are settled.",
		Args: noArgs,
	}
	once := cmd.Flags().Bool("once", false, "run one full pass — the scan, every lookup, every decision — then exit (required)")
	asJSON := jsonFlag(cmd, "print the summary as JSON")
	dryRun := cmd.Flags().Bool("dry-run", false, "look up and decide, print each decision, write nothing")
	verbose := cmd.Flags().BoolP("verbose", "v", false, "print each decision the pass applied, as --dry-run prints them")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if !*once {
			return usagef("--once is required (the daemon, 'sweeper run', sweeps on its schedule)")
		}
		ctx := cmd.Context()
		s, closeDB, err := open(ctx, e, uses{lookups: true, slack: true})
		if err != nil {
			return err
		}
		defer closeDB()
		if !*dryRun {
			// A pass that settles proves: every replica must hold what it
			// proves to one operation per account. A dry run writes nothing.
			if err := s.WriteNamespaces(ctx); err != nil {
				return fmt.Errorf("record the providers' record namespaces: %w", err)
			}
		}
		sum, err := s.SweepOnce(ctx, app.OnceOptions{DryRun: *dryRun, Decisions: *verbose})
		if !*dryRun {
			if deliverErr := deliverAfterPass(ctx, e, s); deliverErr != nil {
				// The rows stay in the outbox for the daemon or `notify --once`.
				fmt.Fprintf(e.stderr, "sweeper sweep: delivering to Slack: %s\n", inertLines(deliverErr.Error()))
			}
		}
		if *asJSON {
			if jsonErr := printJSON(e, sum); jsonErr != nil {
				return jsonErr
			}
		} else {
			printSummary(e.stdout, sum)
		}
		var problems []string
		if sum.Errors > 0 {
			problems = append(problems, fmt.Sprintf("%d operation(s) could not be settled; they stay pending for the next sweep", sum.Errors))
		}
		if err != nil {
			problems = append(problems, err.Error())
		}
		problems = append(problems, notReadyProblems(s)...)
		if len(problems) > 0 {
			return passFailed(problems)
		}
		return nil
	})
	return cmd
}

func printSummary(w io.Writer, sum app.PassCounts) {
	if sum.DryRun {
		fmt.Fprintln(w, "dry run: nothing was written")
	}
	for _, d := range sum.Decisions {
		if d.Decision.Done {
			fmt.Fprintf(w, "  %s (%s): done, record %s\n", inert(d.OpKey), d.Provider, inert(d.Decision.ProviderRecordID))
		} else {
			fmt.Fprintf(w, "  %s (%s): review, %s: %s\n", inert(d.OpKey), d.Provider, d.Decision.Reason, inert(d.Decision.Detail))
		}
	}
	tickets := 0
	for _, n := range sum.Tickets {
		tickets += n
	}
	fmt.Fprintf(w, "scanned %d, done %d, tickets %d, already settled %d, errors %d\n",
		sum.Scanned, sum.Done, tickets, sum.AlreadySettled, sum.Errors)
	for _, r := range proof.Reasons {
		if n := sum.Tickets[r]; n > 0 {
			fmt.Fprintf(w, "  %-20s %d\n", r, n)
		}
	}
	if sum.LeftPending > 0 {
		fmt.Fprintf(w, "left pending %d: their provider is down, or its search may still lag (settle_window); the daemon or a later pass settles them\n", sum.LeftPending)
	}
	if sum.HeldByDaemon > 0 {
		fmt.Fprintf(w, "held by a daemon %d: a running daemon's lookup job holds them and settles them\n", sum.HeldByDaemon)
	}
}
