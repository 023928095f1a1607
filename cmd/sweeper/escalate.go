package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/sweeper/sweeper/app"
)

func newEscalateCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "escalate --once",
		Short: "look up and escalate every ticket past its deadline, then exit",
		Long: "escalate --once looks up every ticket past its deadline once more — proof resolves it as done,\n" +
			"anything else takes the next step of the escalation policy — and looks up again every ticket\n" +
			"whose re-lookup is due, then exits: 1 when the pass had errors.",
		Args: noArgs,
	}
	once := cmd.Flags().Bool("once", false, "look up and escalate every ticket past its deadline, and look up again every ticket whose re-lookup is due, then exit (required)")
	asJSON := jsonFlag(cmd, "print the summary as JSON")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if !*once {
			return usagef("--once is required (the daemon, 'sweeper run', escalates on its schedule)")
		}
		ctx := cmd.Context()
		s, closeDB, err := open(ctx, e, uses{lookups: true, slack: true})
		if err != nil {
			return err
		}
		defer closeDB()
		// Re-lookups prove: see sweep --once.
		if err := s.WriteNamespaces(ctx); err != nil {
			return fmt.Errorf("record the providers' record namespaces: %w", err)
		}
		sum, err := s.EscalateOnce(ctx)
		relooked, relookErr := s.RelookupOnce(ctx)
		if deliverErr := deliverAfterPass(ctx, e, s); deliverErr != nil {
			// The rows stay in the outbox for the daemon or `notify --once`.
			fmt.Fprintf(e.stderr, "sweeper escalate: delivering to Slack: %s\n", inertLines(deliverErr.Error()))
		}
		if *asJSON {
			if jsonErr := printJSON(e, struct {
				app.EscalationSummary
				Relookups app.RelookupSummary `json:"relookups"`
			}{sum, relooked}); jsonErr != nil {
				return jsonErr
			}
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
		problems = append(problems, notReadyProblems(s)...)
		if len(problems) > 0 {
			return passFailed(problems)
		}
		return nil
	})
	return cmd
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
	if sum.AckTimedOut > 0 {
		fmt.Fprintf(w, "acknowledgements timed out %d: re-alerted, escalation resumed\n", sum.AckTimedOut)
	}
}
