package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/notify/outbox"
)

func newOutboxListCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--state pending,parked|sent|dismissed|skipped|folded|silenced|all] [--receiver slack|pagerduty|webhook] [--since D|T] [--limit N]",
		Short: "print the outbox: each row's receiver, ticket, event, state, attempts, ts and last error",
		Args:  noArgs,
	}
	state := cmd.Flags().String("state", "pending,parked", "pending, sent, parked, dismissed, skipped, folded, silenced, several of them joined by commas, or all")
	receiver := cmd.Flags().String("receiver", "", "only the rows of one receiver: slack, pagerduty or webhook")
	list := addListFlags(cmd, "rows")
	asJSON := jsonFlag(cmd, "print JSON")
	enumFlag(cmd, "receiver", outbox.Receivers...)
	enumFlag(cmd, "state", outbox.StatePending, outbox.StateSent, outbox.StateParked, outbox.StateDismissed, outbox.StateSkipped, outbox.StateFolded, outbox.StateSilenced, "all")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		since, err := list.sinceTime(time.Now())
		if err != nil {
			return err
		}
		// One more than asked: whether more exist.
		filter := outbox.Filter{Since: since, Limit: list.limit + 1, Receiver: *receiver}
		if *receiver != "" && !slices.Contains(outbox.Receivers, *receiver) {
			return usagef("--receiver must be one of %s, not %q", strings.Join(outbox.Receivers, ", "), *receiver)
		}
		if *state != "all" {
			for _, st := range strings.Split(*state, ",") {
				switch st {
				case outbox.StatePending, outbox.StateSent, outbox.StateParked, outbox.StateDismissed, outbox.StateSkipped, outbox.StateFolded, outbox.StateSilenced:
					filter.States = append(filter.States, st)
				default:
					return usagef("--state must be pending, sent, parked, dismissed, skipped, folded, silenced or all (or states joined by commas), not %q", *state)
				}
			}
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		rows, err := outbox.NewStore(s.Pool).List(cmd.Context(), filter)
		if err != nil {
			return err
		}
		more := len(rows) > list.limit
		if more {
			rows = rows[:list.limit]
		}
		if *asJSON {
			if rows == nil {
				rows = []outbox.Notification{}
			}
			if err := printJSON(e, rows); err != nil || !more {
				return err
			}
			// With --json only when more exist: stdout is one JSON document.
			fmt.Fprintln(e.stderr, list.trailer(len(rows), "row(s)", more))
			return nil
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tRECEIVER\tTICKET\tKIND\tSTATE\tATTEMPTS\tTS\tCODE\tLAST ERROR")
		for _, n := range rows {
			ticket := strconv.FormatInt(n.TicketID, 10)
			switch {
			case n.IncidentID != 0:
				ticket = fmt.Sprintf("incident %d", n.IncidentID)
			case n.TicketID == 0 && n.GroupID != 0:
				ticket = fmt.Sprintf("group %d", n.GroupID)
			}
			code, lastErr := n.ErrorCode, n.LastError
			if n.State == outbox.StateSent {
				// A row sent before sending cleared its error: that error
				// is history (--json and the row's history keep it).
				code, lastErr = "", ""
			}
			if n.State == outbox.StateFolded {
				// Counted in its alert group's message: which one.
				code = fmt.Sprintf("%s (group %d)", code, n.GroupID)
			}
			if n.State == outbox.StateSilenced {
				// Held by a silence: which one (sweeper silences list).
				code = fmt.Sprintf("silence %d", n.SilenceID)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.ID, n.Receiver, ticket, inert(n.Kind), n.State, n.Attempts, inert(n.Reference), inert(code), inert(lastErr))
		}
		tw.Flush()
		fmt.Fprintln(e.stderr, list.trailer(len(rows), "row(s)", more))
		return nil
	})
	return cmd
}
