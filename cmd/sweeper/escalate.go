package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/sweeper/sweeper/internal/app"
)

func runEscalate(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "escalate", "escalate --once [--config FILE] [--json]")
	configPath := configFlag(fs)
	once := fs.Bool("once", false, "look up and escalate every ticket past its deadline, and look up again every ticket whose re-lookup is due, then exit (required)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	if !*once {
		fmt.Fprintln(e.stderr, "sweeper escalate: --once is required (the daemon, 'sweeper run', escalates on its schedule)")
		return exitUsage
	}
	s, closeDB, code := open(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	sum, err := s.EscalateOnce(ctx)
	relooked, relookErr := s.RelookupOnce(ctx)
	if deliverErr := deliverAfterPass(ctx, e, s); deliverErr != nil {
		// The rows stay in the outbox for the daemon or `notify --once`.
		fmt.Fprintf(e.stderr, "sweeper escalate: delivering to Slack: %v\n", deliverErr)
	}
	if *asJSON {
		printJSON(e, struct {
			app.EscalationSummary
			Relookups app.RelookupSummary `json:"relookups"`
		}{sum, relooked})
	} else {
		printEscalationSummary(e.stdout, sum)
		fmt.Fprintf(e.stdout, "re-lookups due %d: resolved %d, looked up again %d, already handled %d, errors %d\n",
			relooked.Due, relooked.Resolved, relooked.Relooked, relooked.AlreadyHandled, relooked.Errors)
	}
	var problems []string
	if n := sum.Errors + relooked.Errors; n > 0 {
		problems = append(problems, fmt.Sprintf("%d ticket(s) could not be handled; they stay due for the next pass", n))
	}
	for _, err := range []error{err, relookErr} {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return passFailed(e, "escalate", problems)
	}
	return exitOK
}

func printEscalationSummary(w io.Writer, sum app.EscalationSummary) {
	escalated := 0
	levels := make([]int, 0, len(sum.Escalated))
	for level, n := range sum.Escalated {
		escalated += n
		levels = append(levels, level)
	}
	slices.Sort(levels)
	fmt.Fprintf(w, "examined %d, escalated %d, repeats %d, exhausted %d, held (acknowledged) %d, "+
		"resolved by re-lookup %d, already handled %d, errors %d\n",
		sum.Examined, escalated, sum.Repeats, sum.Exhausted, sum.Held, sum.ResolvedByRelookup, sum.AlreadyHandled, sum.Errors)
	for _, level := range levels {
		fmt.Fprintf(w, "  to level %d: %d\n", level, sum.Escalated[level])
	}
}
