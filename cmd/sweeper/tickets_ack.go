package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newTicketsAckCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ack ID --by NAME",
		Short: "take a ticket at its escalation level: stops that level's repeat alerts, not the deadline",
		Args:  oneTicketID,
	}
	by := cmd.Flags().String("by", "", "who takes the ticket (required)")
	asJSON := jsonFlag(cmd, "print the acknowledged ticket as JSON")
	textFlags(cmd, "by")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		id, err := idArg("ticket", args[0])
		if err != nil {
			return err
		}
		if strings.TrimSpace(*by) == "" {
			return usagef("--by is required (who takes the ticket)")
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		t, err := s.Reviews().Acknowledge(cmd.Context(), id, *by, 0)
		if err := decisionError(id, err); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e, t)
		}
		fmt.Fprintf(e.stdout, "acknowledged ticket %d at escalation level %d; the deadline stays %s\n\n",
			t.ID, t.EscalationLevel, t.Deadline.UTC().Format(time.RFC3339))
		printTicket(e, t)
		return nil
	})
	return cmd
}
