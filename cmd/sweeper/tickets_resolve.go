package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

func newTicketsResolveCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resolve ID --outcome done|not_sent|duplicate [--provider-record-id X [--confirm-differs]] --by NAME [--note TEXT]",
		Short: "record a person's decision on an open ticket, with the ledger row and an audit event",
		Long: "record a person's decision on an open ticket, with the ledger row and an audit event.\n\n" +
			"A record the ticket's evidence marks as differing from the ledger row, or any record of a payload_mismatch " +
			"or multiple_matches ticket, is refused unless --confirm-differs is given; the refusal says what differs.",
		Args: oneTicketID,
	}
	outcome := cmd.Flags().String("outcome", "", "done (the effect happened), not_sent (it did not: the ledger row fails), "+
		"or duplicate (several records exist: name the one that stands)")
	recordID := cmd.Flags().String("provider-record-id", "", "the provider's record: required for done and duplicate")
	confirmDiffers := cmd.Flags().Bool("confirm-differs", false, "take the record although the evidence marks it as differing "+
		"(or the ticket is a payload_mismatch or multiple_matches): run without it first to see what differs")
	by := cmd.Flags().String("by", "", "who decides (required)")
	note := cmd.Flags().String("note", "", "why, for the audit trail")
	asJSON := jsonFlag(cmd, "print the resolved ticket as JSON")
	enumFlag(cmd, "outcome", review.ResolutionDone, review.ResolutionNotSent, review.ResolutionDuplicate)
	textFlags(cmd, "provider-record-id", "by", "note")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		id, err := idArg("ticket", args[0])
		if err != nil {
			return err
		}
		r := review.Resolution{TicketID: id, Outcome: *outcome, ProviderRecordID: *recordID, By: *by, Note: *note,
			ConfirmDiffers: *confirmDiffers}
		if err := r.Validate(); err != nil {
			return usageError{err.Error()}
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		t, err := s.Reviews().Resolve(cmd.Context(), r)
		if err := decisionError(id, err); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e, t)
		}
		status := ledger.StatusDone
		if t.Resolution == review.ResolutionNotSent {
			status = ledger.StatusFailed
		}
		fmt.Fprintf(e.stdout, "resolved ticket %d as %s; operation %s is now %s\n\n", t.ID, t.Resolution, t.OpKey, status)
		printTicket(e, t)
		return nil
	})
	return cmd
}
