package main

import (
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// opKeyWidth is how much of an op_key `tickets list` shows: keys are often
// a workflow's prefix and an id, and the id, at the end, is what differs.
const opKeyWidth = 40

func newTicketsListCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--state open|resolved|all] [--provider P] [--reason R] [--group N] [--since D|T] [--limit N]",
		Short: "print review tickets, long op_keys shortened (--json and tickets show have them whole)",
		Args:  noArgs,
	}
	state := cmd.Flags().String("state", "open", "open, resolved or all")
	provider := cmd.Flags().String("provider", "", "only the tickets of this provider")
	reason := cmd.Flags().String("reason", "", "only the tickets of this reason (not_found, lookup_failed, …)")
	group := cmd.Flags().Int64("group", 0, "only the tickets of this alert group (its Slack message says its number), those folded into its counts included")
	asJSON := jsonFlag(cmd, "print JSON")
	list := addListFlags(cmd, "tickets")
	enumFlag(cmd, "state", review.StateOpen, review.StateResolved, "all")
	reasons := make([]string, len(proof.Reasons))
	for i, r := range proof.Reasons {
		reasons[i] = string(r)
	}
	enumFlag(cmd, "reason", reasons...)
	textFlags(cmd, "provider", "group")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if *reason != "" && !slices.Contains(proof.Reasons, proof.Reason(*reason)) {
			return usagef("--reason %q is not a reason: %v", *reason, proof.Reasons)
		}
		since, err := list.sinceTime(time.Now())
		if err != nil {
			return err
		}
		// One more than asked: whether more exist.
		filter := review.ListFilter{State: *state, Provider: *provider, Reason: *reason, Since: since, Limit: list.limit + 1}
		switch *state {
		case review.StateOpen, review.StateResolved:
		case "all":
			filter.State = ""
		default:
			return usagef("--state must be open, resolved or all, not %q", *state)
		}
		if *group < 0 {
			return usagef("--group must be an alert group's number, not %d", *group)
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		if *group != 0 {
			// The outbox holds which tickets an alert group has; review
			// lists them.
			g, err := outbox.NewGroups(s.Pool).Group(cmd.Context(), *group)
			if err != nil {
				return err
			}
			filter.IDs = append([]int64{}, g.Tickets...)
		}
		tickets, err := s.Reviews().List(cmd.Context(), filter)
		if err != nil {
			return err
		}
		more := len(tickets) > list.limit
		if more {
			tickets = tickets[:list.limit]
		}
		if *asJSON {
			if tickets == nil {
				tickets = []review.Ticket{}
			}
			if err := printJSON(e, tickets); err != nil || !more {
				return err
			}
		} else {
			printTicketTable(e, tickets, *state != review.StateOpen)
		}
		// With --json only when more exist: stdout is one JSON document.
		fmt.Fprintln(e.stderr, list.trailer(len(tickets), "ticket(s)", more))
		return nil
	})
	return cmd
}

// printTicketTable prints tickets one a line; with resolved, the
// resolution and who resolved it too ("-" for a ticket still open).
func printTicketTable(e *env, tickets []review.Ticket, resolved bool) {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	header := "ID\tOP_KEY\tREASON\tOWNER\tPRIORITY\tLEVEL\tSTATE\tDEADLINE"
	if resolved {
		header += "\tRESOLUTION\tRESOLVED BY"
	}
	fmt.Fprintln(tw, header)
	for _, t := range tickets {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s", t.ID, shortKey(inert(t.OpKey), opKeyWidth), t.Reason, inert(t.Owner), t.Priority,
			t.EscalationLevel, t.State, t.Deadline.UTC().Format(time.RFC3339))
		if resolved {
			resolution, by := "-", "-"
			if t.State == review.StateResolved {
				resolution, by = inert(t.Resolution), inert(t.ResolvedBy)
			}
			fmt.Fprintf(tw, "\t%s\t%s", resolution, by)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// shortKey shortens key to width characters by an ellipsis in its middle,
// keeping its start and, longer, its end: op_keys share prefixes and differ
// at the end.
func shortKey(key string, width int) string {
	runes := []rune(key)
	if len(runes) <= width || width < 5 {
		return key
	}
	head := (width - 1) / 3
	tail := width - 1 - head
	return string(runes[:head]) + "…" + string(runes[len(runes)-tail:])
}
