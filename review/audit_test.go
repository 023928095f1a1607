package review_test

import (
	"errors"
	"testing"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// TestAuditTicketBesideTheSettlingOne: an operation that went to review,
// was resolved as done, and is then found twice by the audit gets an
// audit ticket of its own beside its resolved one — once, however often
// it is opened — and resolving it leaves the ledger row as it was.
func TestAuditTicketBesideTheSettlingOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := openTicket(t, b.store, b.tx, "audit-1", threeRecords)
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: first.ID, Outcome: review.ResolutionDuplicate,
		ProviderRecordID: "rec_a", By: "U0PERSON1", ConfirmDiffers: true}); err != nil {
		t.Fatal(err)
	}
	op, err := b.ledger.Get(b.ctx, "audit-1")
	if err != nil {
		t.Fatal(err)
	}
	q := proof.SearchFor(op, providers.Matching{ByKey: true}, b.now)
	records := []providers.Record{{ID: "rec_a"}, {ID: "rec_d", State: providers.StateReversed}}
	f := proof.Audit(op, q, records, nil)
	d := proof.Decision{Reason: f.Reason, Detail: f.Detail, RecordIDs: f.RecordIDs}
	ev := proof.NewEvidence(op, proof.LookupReport{Query: &q, Outcome: proof.Answered(q, records), At: b.now}, d)
	item := review.Item{Op: op, Decision: d, Evidence: ev, Now: b.now}
	ids, err := b.store.OpenAudit(b.ctx, []review.Item{item}, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.store.OpenAudit(b.ctx, []review.Item{item}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] == first.ID || again[0] != ids[0] {
		t.Fatalf("audit tickets %v then %v beside %d: want one of its own, once", ids, again, first.ID)
	}
	if n := len(events(t, b.store, ids[0])); n != 1 {
		t.Errorf("%d events on the audit ticket, want its one opened event", n)
	}
	_, err = b.store.Resolve(b.ctx, review.Resolution{TicketID: ids[0], Outcome: review.ResolutionDone,
		ProviderRecordID: "rec_zzz", By: "U0PERSON1"})
	if !errors.Is(err, review.ErrInvalidRequest) {
		t.Errorf("a record the audit did not find: %v, want ErrInvalidRequest", err)
	}
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: ids[0], Outcome: review.ResolutionDuplicate,
		ProviderRecordID: "rec_a", By: "U0PERSON1"}); err != nil {
		t.Fatal(err)
	}
	after, err := b.ledger.Get(b.ctx, "audit-1")
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != ledger.StatusDone || after.ProviderRecordID != "rec_a" || !after.UpdatedAt.Equal(op.UpdatedAt) {
		t.Errorf("ledger row after the audit ticket's resolution: %s %s, want done rec_a unwritten", after.Status, after.ProviderRecordID)
	}
	// A pending operation has no audit ticket.
	pending := claim(t, b.tx, "audit-2", "onboarding", "mailer")
	if _, err := b.store.OpenAudit(b.ctx, []review.Item{{Op: pending, Decision: d, Evidence: ev, Now: b.now}}, nil); err == nil {
		t.Error("an audit ticket for a pending operation")
	}
}
