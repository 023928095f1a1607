package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newTicketsReassignCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reassign ID --to OWNER --by NAME",
		Short: "give an open ticket to another owner; its deadline and level stay",
		Args:  oneTicketID,
	}
	to := cmd.Flags().String("to", "", "the new owner, one person (required; a Slack user id when Slack is on)")
	by := cmd.Flags().String("by", "", "who reassigns (required)")
	asJSON := jsonFlag(cmd, "print the reassigned ticket as JSON")
	textFlags(cmd, "to", "by")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		id, err := idArg("ticket", args[0])
		if err != nil {
			return err
		}
		switch {
		case strings.TrimSpace(*to) == "":
			return usagef("--to is required (the new owner)")
		case strings.TrimSpace(*by) == "":
			return usagef("--by is required (who reassigns)")
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		t, err := s.Reviews().Reassign(cmd.Context(), id, *to, *by, 0)
		if err := decisionError(id, err); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e, t)
		}
		fmt.Fprintf(e.stdout, "reassigned ticket %d to %s\n\n", t.ID, inert(t.Owner))
		printTicket(e, t)
		return nil
	})
	return cmd
}

func newTicketsNoteCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "note ID --by NAME TEXT",
		Short: "add a note to a ticket's history (and its Slack thread, without the text)",
		Args:  cobra.ExactArgs(2),
	}
	by := cmd.Flags().String("by", "", "who writes the note (required)")
	asJSON := jsonFlag(cmd, "print the ticket as JSON")
	textFlags(cmd, "by")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		id, err := idArg("ticket", args[0])
		if err != nil {
			return err
		}
		switch {
		case strings.TrimSpace(*by) == "":
			return usagef("--by is required (who writes the note)")
		case strings.TrimSpace(args[1]) == "":
			return usagef("the note is empty")
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		t, err := s.Reviews().AddNote(cmd.Context(), id, *by, args[1])
		if err := decisionError(id, err); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e, t)
		}
		fmt.Fprintf(e.stdout, "noted on ticket %d\n", t.ID)
		return nil
	})
	return cmd
}
