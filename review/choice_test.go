package review_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// TestWeighChoice is the one rule of when a person's choice needs an
// explicit confirmation, on evidence as tickets hold it (JSON).
func TestWeighChoice(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	yes, no := true, false
	query := &proof.EvidenceQuery{Since: now.Add(-time.Hour), Until: now}
	agreeing := func(id string) proof.EvidenceRecord {
		return proof.EvidenceRecord{ID: id, CreatedAt: now.Add(-time.Minute), RecipientAgrees: &yes, PayloadHash: "h-ledger",
			Fields: map[string]any{"template": proof.FieldText{Digest: "d1", Length: 7, Agrees: &yes}}}
	}
	mismatched := proof.EvidenceRecord{ID: "rec_m", CreatedAt: now.Add(-time.Minute), RecipientAgrees: &yes, PayloadHash: "h-other",
		Fields: map[string]any{"template": proof.FieldText{Digest: "d2", Length: 9, Agrees: &no}, "to": proof.FieldText{Digest: "d3", Length: 20, Agrees: &yes, Masked: "j***@***.org"}}}
	elsewhere := agreeing("rec_w")
	elsewhere.RecipientAgrees = &no
	failed := agreeing("rec_f")
	failed.State = providers.StateFailed
	late := agreeing("rec_late")
	late.CreatedAt = now.Add(time.Hour)

	ticket := func(reason proof.Reason, differing []string, records ...proof.EvidenceRecord) review.Ticket {
		ev := proof.Evidence{OpKey: "op-1", PayloadHash: "h-ledger", RecipientMasked: "j***@***.org", Query: query,
			Records: records, Reason: reason, DifferingFields: differing}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return review.Ticket{ID: 7, OpKey: "op-1", Reason: reason, Evidence: raw}
	}
	tests := []struct {
		desc          string
		ticket        review.Ticket
		outcome       string
		record        string
		wantDiffers   bool
		wantDiffering []string
		wantOthers    []string
		// wantWarning are parts the warning must say.
		wantWarning []string
	}{
		{desc: "an agreeing record of a not_found ticket", ticket: ticket(proof.ReasonNotFound, nil, agreeing("rec_a")),
			outcome: review.ResolutionDone, record: "rec_a"},
		{desc: "a record found elsewhere, for a not_found ticket", ticket: ticket(proof.ReasonNotFound, nil),
			outcome: review.ResolutionDone, record: "msg_dashboard"},
		{desc: "not sent names no record", ticket: ticket(proof.ReasonPayloadMismatch, []string{"payload_hash"}, mismatched),
			outcome: review.ResolutionNotSent},
		{desc: "the one record of a payload mismatch", ticket: ticket(proof.ReasonPayloadMismatch, []string{"payload.subject", "payload.template", "payload_hash", "provider_record_id"}, mismatched),
			outcome: review.ResolutionDone, record: "rec_m", wantDiffers: true,
			wantDiffering: []string{"payload hash", "field template", "payload.subject", "provider_record_id"},
			wantWarning:   []string{"record rec_m differs from the ledger row in: payload hash, field template"}},
		{desc: "a record outside the evidence of a payload mismatch", ticket: ticket(proof.ReasonPayloadMismatch, []string{"payload_hash"}, mismatched),
			outcome: review.ResolutionDone, record: "rec_other", wantDiffers: true,
			wantWarning: []string{"ticket 7 is a payload_mismatch", "rec_other is not one of its evidence's records"}},
		{desc: "an agreeing record of a multiple_matches ticket", ticket: ticket(proof.ReasonMultipleMatches, nil, agreeing("rec_a"), agreeing("rec_b")),
			outcome: review.ResolutionDone, record: "rec_a", wantDiffers: true, wantOthers: []string{"rec_b"},
			wantWarning: []string{"multiple_matches", "besides rec_a: rec_b"}},
		{desc: "the duplicate kept of a multiple_matches ticket", ticket: ticket(proof.ReasonMultipleMatches, nil, agreeing("rec_a"), agreeing("rec_b"), agreeing("rec_c")),
			outcome: review.ResolutionDuplicate, record: "rec_c", wantDiffers: true, wantOthers: []string{"rec_a", "rec_b"}},
		{desc: "a record to another recipient", ticket: ticket(proof.ReasonAmbiguousOwner, nil, elsewhere),
			outcome: review.ResolutionDone, record: "rec_w", wantDiffers: true, wantDiffering: []string{"recipient (normalized)"}},
		{desc: "an agreeing record of an ambiguous owner", ticket: ticket(proof.ReasonAmbiguousOwner, nil, agreeing("rec_a")),
			outcome: review.ResolutionDone, record: "rec_a"},
		{desc: "a failed record", ticket: ticket(proof.ReasonProviderFailed, nil, failed),
			outcome: review.ResolutionDone, record: "rec_f", wantDiffers: true, wantDiffering: []string{"state"}},
		{desc: "a record dated outside the window", ticket: ticket(proof.ReasonNotFound, nil, late),
			outcome: review.ResolutionDone, record: "rec_late", wantDiffers: true, wantDiffering: []string{"time inside the lookup window"}},
		{desc: "an agreeing record beside a differing one", ticket: ticket(proof.ReasonProviderFailed, nil, agreeing("rec_a"), failed),
			outcome: review.ResolutionDone, record: "rec_a"},
		{desc: "evidence that cannot be read", ticket: review.Ticket{ID: 7, Reason: proof.ReasonNotFound, Evidence: json.RawMessage(`{"records":`)},
			outcome: review.ResolutionDone, record: "rec_a", wantDiffers: true, wantDiffering: []string{"the evidence (it cannot be read)"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			c := review.WeighChoice(tt.ticket, tt.outcome, tt.record)
			if c.Differs != tt.wantDiffers {
				t.Errorf("Differs = %v, want %v (%+v)", c.Differs, tt.wantDiffers, c)
			}
			if diff := cmp.Diff(tt.wantDiffering, c.Differing); diff != "" {
				t.Errorf("Differing (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOthers, c.Others); diff != "" {
				t.Errorf("Others (-want +got):\n%s", diff)
			}
			w := c.Warning()
			if (w != "") != tt.wantDiffers {
				t.Errorf("Warning() = %q; want one exactly when the choice differs", w)
			}
			for _, part := range tt.wantWarning {
				if !strings.Contains(w, part) {
					t.Errorf("Warning() = %q, want it to say %q", w, part)
				}
			}
			changes := c.Changes()
			if !strings.Contains(changes, "Ticket 7") || !strings.Contains(changes, "cannot be undone") ||
				(tt.record != "" && tt.outcome != review.ResolutionNotSent && !strings.Contains(changes, tt.record)) {
				t.Errorf("Changes() = %q: want the ticket, the record and that it is final", changes)
			}
		})
	}
}
