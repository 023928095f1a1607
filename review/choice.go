package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sweeper/sweeper/proof"
)

// ErrNeedsConfirmation: a resolution names a record the ticket's evidence
// marks as differing from the ledger row, or any record of a
// payload_mismatch or multiple_matches ticket, and the person did not
// confirm it explicitly ([Resolution.ConfirmDiffers]). Nothing was written.
// Use errors.As with *DiffersError for what differs.
var ErrNeedsConfirmation = errors.New("the choice needs an explicit confirmation")

// Choice is a decision a person is about to make, weighed against the
// ticket's evidence by [WeighChoice]: whether it needs an explicit
// confirmation, what differs, and what it will change.
type Choice struct {
	TicketID int64
	OpKey    string
	Reason   proof.Reason
	// Outcome is one of [Resolutions]; RecordID the record chosen (none
	// for not_sent).
	Outcome  string
	RecordID string
	// InEvidence says whether RecordID is one of the evidence's records.
	InEvidence bool
	// Differs says that the choice needs an explicit confirmation: the
	// evidence marks the record as differing from the ledger row, or the
	// ticket's reason (payload_mismatch, multiple_matches) puts every
	// record in doubt.
	Differs bool
	// Differing names what the evidence marks as differing for the
	// record ([proof.Evidence.Differing]); empty when the doubt is the
	// ticket's reason alone.
	Differing []string
	// Others are the evidence's other records, for a multiple_matches.
	Others []string
}

// WeighChoice is the one rule, for every surface a person decides from
// (the review page, Slack, the CLI) and for [Store.Resolve] itself, of
// when a resolution of ticket t as outcome with recordID needs an explicit
// confirmation: when the record is one the evidence marks as differing
// from the ledger row (its recipient, payload hash, time, state or a field
// of its payload), and for any record of a payload_mismatch or
// multiple_matches ticket. It is pure: it reads t's evidence snapshot
// only. not_sent names no record and never [Choice.Differs]; it is
// irreversible all the same, which [Choice.Changes] says.
func WeighChoice(t Ticket, outcome, recordID string) Choice {
	c := Choice{TicketID: t.ID, OpKey: t.OpKey, Reason: t.Reason, Outcome: outcome, RecordID: recordID}
	if outcome == ResolutionNotSent || recordID == "" {
		return c
	}
	var ev proof.Evidence
	if err := json.Unmarshal(t.Evidence, &ev); err != nil {
		// Evidence that cannot be read proves nothing either way: ask.
		c.Differs = true
		c.Differing = []string{"the evidence (it cannot be read)"}
		return c
	}
	if c.Reason == "" {
		c.Reason = ev.Reason
	}
	if rec, ok := ev.FindRecord(recordID); ok {
		c.InEvidence = true
		c.Differing = ev.Differing(rec)
	}
	if c.Reason == proof.ReasonMultipleMatches {
		for _, r := range ev.Records {
			if r.ID != recordID {
				c.Others = append(c.Others, r.ID)
			}
		}
	}
	c.Differs = len(c.Differing) > 0 || c.Reason == proof.ReasonPayloadMismatch || c.Reason == proof.ReasonMultipleMatches
	return c
}

// Warning says why the choice needs a confirmation, naming the record and
// what differs; "" when it needs none.
func (c Choice) Warning() string {
	if !c.Differs {
		return ""
	}
	var parts []string
	if len(c.Differing) > 0 {
		parts = append(parts, fmt.Sprintf("record %s differs from the ledger row in: %s", c.RecordID, strings.Join(c.Differing, ", ")))
	}
	switch c.Reason {
	case proof.ReasonPayloadMismatch:
		if len(c.Differing) == 0 {
			what := "record " + c.RecordID + " is not one of its evidence's records"
			if c.InEvidence {
				what = "record " + c.RecordID + " is the record in doubt"
			}
			parts = append(parts, fmt.Sprintf("ticket %d is a payload_mismatch: %s; %s", c.TicketID, c.Reason.Describe(), what))
		}
	case proof.ReasonMultipleMatches:
		others := "none other in its evidence"
		if len(c.Others) > 0 {
			others = strings.Join(c.Others, ", ")
		}
		parts = append(parts, fmt.Sprintf("ticket %d is a multiple_matches: the provider holds several records for this operation (besides %s: %s) and nothing in the evidence tells which one is its effect",
			c.TicketID, c.RecordID, others))
	}
	return strings.Join(parts, "; ")
}

// Changes restates what the decision will change, for the confirmation a
// person is asked for: the ticket, the outcome, the ledger row's new
// status and the record. Every resolution is final.
func (c Choice) Changes() string {
	switch c.Outcome {
	case ResolutionNotSent:
		return fmt.Sprintf("Ticket %d is resolved as not sent: operation %s becomes failed. sweeper never resends; only the workflow may try again, under a new key. This cannot be undone.",
			c.TicketID, c.OpKey)
	case ResolutionDuplicate:
		return fmt.Sprintf("Ticket %d is resolved as duplicate: operation %s becomes done, proven by record %s, and the evidence's other records are listed as its duplicates. This cannot be undone.",
			c.TicketID, c.OpKey, c.RecordID)
	}
	return fmt.Sprintf("Ticket %d is resolved as done: operation %s becomes done, proven by record %s. This cannot be undone.", c.TicketID, c.OpKey, c.RecordID)
}

// DiffersError refuses a resolution whose choice needs an explicit
// confirmation it did not carry. It matches [ErrNeedsConfirmation] and
// [ErrInvalidRequest].
type DiffersError struct {
	Choice Choice
}

func (e *DiffersError) Error() string {
	return ErrInvalidRequest.Error() + ": provider_record_id: " + e.Choice.Warning() + "; resolving with it needs an explicit confirmation"
}

// Is makes errors.Is hold for ErrNeedsConfirmation and ErrInvalidRequest.
func (e *DiffersError) Is(target error) bool {
	return target == ErrNeedsConfirmation || target == ErrInvalidRequest
}

// Doubts weighs, by [WeighChoice], resolving t as done with each record
// of its evidence, and returns the choices that need a confirmation, in
// evidence order: what a surface offering a record, or a field to type
// one in, must warn of before a person picks.
func Doubts(t Ticket) []Choice {
	var out []Choice
	for _, id := range recordIDs(t.Evidence) {
		if c := WeighChoice(t, ResolutionDone, id); c.Differs {
			out = append(out, c)
		}
	}
	return out
}
