package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/notify"
)

func newOutboxListCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--state pending|sent|parked|dismissed|skipped|all]",
		Short: "print the Slack outbox: each row's ticket, event, state, attempts, ts and last error",
		Args:  noArgs,
	}
	state := cmd.Flags().String("state", "all", "pending, sent, parked, dismissed, skipped or all")
	asJSON := jsonFlag(cmd, "print JSON")
	enumFlag(cmd, "state", notify.OutboxPending, notify.OutboxSent, notify.OutboxParked, notify.OutboxDismissed, notify.OutboxSkipped, "all")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		filter := notify.OutboxFilter{State: *state}
		switch *state {
		case "all":
			filter.State = ""
		case notify.OutboxPending, notify.OutboxSent, notify.OutboxParked, notify.OutboxDismissed, notify.OutboxSkipped:
		default:
			return usagef("--state must be pending, sent, parked, dismissed, skipped or all, not %q", *state)
		}
		s, closeDB, err := open(cmd.Context(), e, newLogger(e.stderr), uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		rows, err := notify.NewOutbox(s.Pool).List(cmd.Context(), filter)
		if err != nil {
			return err
		}
		if *asJSON {
			if rows == nil {
				rows = []notify.Notification{}
			}
			return printJSON(e, rows)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTICKET\tKIND\tSTATE\tATTEMPTS\tTS\tCODE\tLAST ERROR")
		for _, n := range rows {
			ticket := strconv.FormatInt(n.TicketID, 10)
			switch {
			case n.IncidentID != 0:
				ticket = fmt.Sprintf("incident %d", n.IncidentID)
			case n.TicketID == 0 && n.GroupID != 0:
				ticket = fmt.Sprintf("group %d", n.GroupID)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.ID, ticket, inert(n.Kind), n.State, n.Attempts, inert(n.TS), inert(n.ErrorCode), inert(n.LastError))
		}
		tw.Flush()
		fmt.Fprintf(e.stderr, "%d row(s)\n", len(rows))
		return nil
	})
	return cmd
}
