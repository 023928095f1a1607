package proof_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

// TestComparePutsThePayloadBesideTheRecord: a payload mismatch shows the
// fields behind the hash side by side — the ledger's payload as the
// record's fields are kept (a text by its length, an address masked) —
// and what differs is named by field, the same fresh from the lookup and
// read back from a ticket's JSON; a record with no fields to compare
// shows the hashes alone, with what they mean.
func TestComparePutsThePayloadBesideTheRecord(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	op := ledger.Operation{OpKey: "welcome:u-1", Workflow: "onboarding", Provider: "mailer", Action: "send_email",
		Recipient: "jane.doe@example.com", PayloadHash: strings.Repeat("a", 64), FirstAttemptAt: now.Add(-time.Hour),
		Payload: json.RawMessage(`{"template":"welcome","to":"jane.doe@example.com","amount":12}`), Status: ledger.StatusReview}
	q := providers.Query{OpKey: op.OpKey, Action: op.Action, Recipient: op.Recipient, PayloadHash: op.PayloadHash,
		Since: now.Add(-2 * time.Hour), Until: now, Match: providers.Matching{ByKey: true}}
	rec := providers.Record{ID: "rec_m", CreatedAt: now.Add(-time.Minute), Recipient: op.Recipient, PayloadHash: strings.Repeat("b", 64),
		Fields: map[string]any{"template": "goodbye", "amount": 12}}
	out := proof.Answered(q, []providers.Record{rec})
	d := proof.Decide(op, out)
	if d.Reason != proof.ReasonPayloadMismatch {
		t.Fatalf("decision %+v, want payload_mismatch", d)
	}
	fresh := proof.NewEvidence(op, proof.LookupReport{Query: &q, Outcome: out, At: now}, d)
	raw, err := json.Marshal(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "welcome\"") || strings.Contains(string(raw), "jane.doe") {
		t.Fatalf("evidence holds the payload's text:\n%s", raw)
	}
	var stored proof.Evidence
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	want := []proof.FieldComparison{
		{Field: "recipient (normalized)", Ledger: "j***@***.com", Record: "j***@***.com", Verdict: proof.VerdictAgree},
		{Field: "payload hash", Ledger: "aaaaaaaaaaaaaaaa…", Record: "bbbbbbbbbbbbbbbb…", Verdict: proof.VerdictDiffer},
		{Field: "time inside the lookup window", Ledger: "2026-11-29 08:00:00 – 2026-11-29 10:00:00", Record: "2026-11-29 09:59:00", Verdict: proof.VerdictAgree},
		{Field: "state", Ledger: "the effect (send_email)", Record: "effect", Verdict: proof.VerdictAgree},
		{Field: "field amount", Ledger: "12", Record: "12", Verdict: proof.VerdictAgree},
		{Field: "field template", Ledger: "text, 7 characters", Record: "text, 7 characters", Verdict: proof.VerdictDiffer},
		{Field: "field to", Ledger: "j***@***.com", Record: "— (none)", Verdict: proof.VerdictDiffer},
	}
	for name, ev := range map[string]proof.Evidence{"fresh": fresh, "stored": stored} {
		if diff := cmp.Diff(want, ev.Compare(ev.Records[0])); diff != "" {
			t.Errorf("%s: Compare (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff([]string{"payload hash", "field template", "field to"}, ev.Differing(ev.Records[0])); diff != "" {
			t.Errorf("%s: Differing (-want +got):\n%s", name, diff)
		}
	}

	// No fields: the hashes alone.
	bare := stored
	bare.Records = []proof.EvidenceRecord{{ID: "rec_h", CreatedAt: now.Add(-time.Minute), PayloadHash: strings.Repeat("b", 64)}}
	if got := bare.Compare(bare.Records[0]); len(got) != 4 {
		t.Errorf("a record without fields compares %d rows, want the 4 of the record itself: %+v", len(got), got)
	}
	if got := proof.DescribeHashes(bare.PayloadHash, bare.Records[0].PayloadHash); !strings.Contains(got, "other content than the workflow meant to send") {
		t.Errorf("DescribeHashes of two hashes = %q", got)
	}
	if got := proof.DescribeHashes(bare.PayloadHash, ""); !strings.Contains(got, "cannot be told") {
		t.Errorf("DescribeHashes without the record's = %q", got)
	}
}
