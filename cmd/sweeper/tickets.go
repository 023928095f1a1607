package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

func newTicketsCmd(e *env) *cobra.Command {
	return group("tickets", "review tickets and people's decisions: list, show, resolve, ack, reassign, note, export",
		newTicketsListCmd(e), newTicketsShowCmd(e), newTicketsResolveCmd(e), newTicketsAckCmd(e),
		newTicketsReassignCmd(e), newTicketsNoteCmd(e), newTicketsExportCmd(e))
}

// decisionError says why a resolution or acknowledgement was refused: a
// usage error for a request the rules refuse, a failure otherwise; nil
// when err is nil.
func decisionError(id int64, err error) error {
	var handled *review.HandledError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, review.ErrNeedsConfirmation):
		// Well formed, refused by what the evidence says: a failure that
		// names what differs and how to take the record all the same.
		var de *review.DiffersError
		if errors.As(err, &de) {
			return fmt.Errorf("ticket %d stays open: %s; nothing changed. Check the evidence (sweeper tickets show %d); "+
				"to resolve with record %s all the same, run again with --confirm-differs", id, inert(de.Choice.Warning()), id, inert(de.Choice.RecordID))
		}
		return fmt.Errorf("ticket %d stays open: %w; nothing changed", id, err)
	case errors.Is(err, ledger.ErrRecordHeld):
		// Well formed, refused by what the ledger holds: a failure.
		return fmt.Errorf("ticket %d stays open: %s; nothing changed", id,
			strings.TrimPrefix(err.Error(), review.ErrInvalidRequest.Error()+": "))
	case errors.Is(err, review.ErrInvalidRequest):
		return &exitError{exitUsage, err} // the flags parsed: no usage
	case errors.Is(err, review.ErrTicketNotFound):
		return fmt.Errorf("no ticket %d", id)
	case errors.As(err, &handled):
		return fmt.Errorf("ticket %d was already handled (%s); nothing changed", id, handled.Why)
	case errors.Is(err, review.ErrNotInReview):
		return fmt.Errorf("ticket %d stays open: %w; nothing changed", id, err)
	}
	return err
}

// printTicket prints a ticket's state, without its evidence and events.
func printTicket(e *env, t review.Ticket) {
	// Every text a workflow, a provider or a person wrote is made inert:
	// the ticket is printed on an operator's terminal.
	fmt.Fprintf(e.stdout, "ticket %d  %s  %s\n", t.ID, t.State, inert(t.OpKey))
	fmt.Fprintf(e.stdout, "reason:    %s — %s\n", t.Reason, t.Reason.Describe())
	fmt.Fprintf(e.stdout, "owner:     %s\npriority:  %s (escalation level %d)\ndeadline:  %s\nversion:   %d\n",
		inert(t.Owner), t.Priority, t.EscalationLevel, t.Deadline.UTC().Format(time.RFC3339), t.Version)
	if t.AcknowledgedLevel != nil && t.AcknowledgedAt != nil {
		fmt.Fprintf(e.stdout, "acked:     by %s at level %d, %s\n",
			inert(t.AcknowledgedBy), *t.AcknowledgedLevel, t.AcknowledgedAt.UTC().Format(time.RFC3339))
	}
	if t.State == review.StateResolved {
		fmt.Fprintf(e.stdout, "resolved:  %s by %s", inert(t.Resolution), inert(t.ResolvedBy))
		if t.ResolvedAt != nil {
			fmt.Fprintf(e.stdout, ", %s", t.ResolvedAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(e.stdout)
		if t.ResolutionRecordID != "" {
			fmt.Fprintf(e.stdout, "record:    %s\n", inert(t.ResolutionRecordID))
		}
		if t.ResolutionNote != "" {
			fmt.Fprintf(e.stdout, "note:      %s\n", inert(t.ResolutionNote))
		}
	}
}
