package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/review"
)

func runSweep(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "sweep", "sweep --once [--config FILE] [--json] [--dry-run]")
	configPath := configFlag(fs)
	once := fs.Bool("once", false, "run one full pass — the scan, every lookup, every decision — then exit (required)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	dryRun := fs.Bool("dry-run", false, "look up and decide, print each decision, write nothing")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	if !*once {
		fmt.Fprintln(e.stderr, "sweeper sweep: --once is required (the daemon, 'sweeper run', sweeps on its schedule)")
		return exitUsage
	}
	s, closeDB, code := open(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	sum, err := s.SweepOnce(ctx, jobs.OnceOptions{DryRun: *dryRun})
	if !*dryRun {
		if deliverErr := deliverAfterPass(ctx, e, s); deliverErr != nil {
			// The rows stay in the outbox for the daemon or `notify --once`.
			fmt.Fprintf(e.stderr, "sweeper sweep: delivering to Slack: %v\n", deliverErr)
		}
	}
	if *asJSON {
		printJSON(e, sum)
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
	if len(problems) > 0 {
		return passFailed(e, "sweep", problems)
	}
	return exitOK
}

func printSummary(w io.Writer, sum jobs.Summary) {
	if sum.DryRun {
		fmt.Fprintln(w, "dry run: nothing was written")
		for _, d := range sum.Decisions {
			if d.Decision.Done {
				fmt.Fprintf(w, "  %s (%s): done, record %s\n", d.OpKey, d.Provider, d.Decision.ProviderRecordID)
			} else {
				fmt.Fprintf(w, "  %s (%s): review, %s: %s\n", d.OpKey, d.Provider, d.Decision.Reason, d.Decision.Detail)
			}
		}
	}
	tickets := 0
	for _, n := range sum.Tickets {
		tickets += n
	}
	fmt.Fprintf(w, "scanned %d, done %d, tickets %d, already settled %d, errors %d\n",
		sum.Scanned, sum.Done, tickets, sum.AlreadySettled, sum.Errors)
	for _, r := range review.Reasons {
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
