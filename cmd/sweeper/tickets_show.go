package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/review"
)

func newTicketsShowCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "print one ticket whole: its state, evidence and every event",
		Args:  oneTicketID,
	}
	asJSON := jsonFlag(cmd, "print JSON")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		id, err := idArg("ticket", args[0])
		if err != nil {
			return err
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		store := s.Reviews()
		t, err := store.Get(cmd.Context(), id)
		if errors.Is(err, review.ErrTicketNotFound) {
			file, archErr := review.NewTickets(s.Pool).ArchivedIn(cmd.Context(), id)
			if archErr == nil && file != "" {
				return fmt.Errorf("ticket %d was archived to %s and deleted (retention.resolved_tickets)", id, inert(file))
			}
			return fmt.Errorf("no ticket %d", id)
		}
		if err != nil {
			return err
		}
		events, err := store.Events(cmd.Context(), id)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e, struct {
				review.Ticket
				Events []review.Event `json:"events"`
			}{t, events})
		}
		printTicket(e, t)
		var evidence any
		_ = json.Unmarshal(t.Evidence, &evidence)
		fmt.Fprint(e.stdout, "evidence:\n  ")
		_ = writeJSON(e.stdout, "  ", evidence)
		fmt.Fprint(e.stdout, "events:\n")
		for _, ev := range events {
			fmt.Fprintf(e.stdout, "  %s  %-10s by %s  %s\n", ev.At.UTC().Format(time.RFC3339), inert(ev.Kind), inert(ev.Actor), safetext.InertJSON(ev.Details))
		}
		return nil
	})
	return cmd
}
