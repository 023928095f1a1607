package proof_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// claim records a pending operation the way a workflow does.
func claim(t *testing.T, db ledger.DB, key, workflow, provider string) ledger.Operation {
	t.Helper()
	c, err := ledger.NewStore(db, ledger.Native()).Claim(context.Background(), ledger.Attempt{
		OpKey: key, Workflow: workflow, Provider: provider, Action: "send_email",
		Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"template":"welcome","to":"jane.doe@example.com"}`),
	})
	if err != nil {
		t.Fatalf("claim %s: %v", key, err)
	}
	if !c.Owned {
		t.Fatalf("claim %s: not owned", key)
	}
	return c.Operation
}

// TestProveBatchIsProve: for every branch the database takes part in — a
// record no one holds, one another operation holds, one the operation
// itself already names, two operations of the batch answered with one
// record, a resemblance match with and without a look-alike, and answers
// Decide alone refuses — ProveBatch decides what Prove decides alone.
func TestProveBatchIsProve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	store := ledger.NewStore(tx, ledger.Native())
	// claim gives every operation one recipient and payload: what makes
	// two of a resemblance provider look alike.
	claimAt := func(key, provider string) ledger.Operation {
		t.Helper()
		return claim(t, tx, key, "onboarding", provider)
	}
	holder := claimAt("pb-holder", "mailer")
	if _, err := store.Confirm(ctx, holder.OpKey, "rec_taken"); err != nil {
		t.Fatal(err)
	}
	free := claimAt("pb-free", "mailer")
	taken := claimAt("pb-taken", "mailer")
	own := claimAt("pb-own", "mailer")
	if _, err := tx.Exec(ctx, `UPDATE ledger.operations SET provider_record_id = 'rec_own' WHERE id = $1`, own.ID); err != nil {
		t.Fatal(err)
	}
	own.ProviderRecordID = "rec_own"
	twinA := claimAt("pb-twin-a", "mailer")
	twinB := claimAt("pb-twin-b", "mailer")
	missing := claimAt("pb-missing", "mailer")
	mismatch := claimAt("pb-mismatch", "mailer")
	alone := claimAt("pb-sms-alone", "sms")
	lookalike := claimAt("pb-sms-twin", "sms2")
	claimAt("pb-sms-other", "sms2") // same recipient and payload: could own lookalike's record

	now := time.Now().Add(time.Minute) // the records are dated a second after the claims
	keyed := providers.Matching{ByKey: true}
	resemblance := providers.Matching{Margin: providers.DefaultMargin}
	record := func(op ledger.Operation, m providers.Matching, id string) proof.Outcome {
		q := proof.SearchFor(op, m, now)
		return proof.Answered(q, []providers.Record{{
			ID: id, CreatedAt: op.FirstAttemptAt.Add(time.Second), Recipient: op.Recipient, PayloadHash: op.PayloadHash,
		}})
	}
	proofs := []proof.Case{
		{Op: free, Outcome: record(free, keyed, "rec_free")},
		{Op: taken, Outcome: record(taken, keyed, "rec_taken")},
		{Op: own, Outcome: record(own, keyed, "rec_own")},
		{Op: twinA, Outcome: record(twinA, keyed, "rec_twin")},
		{Op: twinB, Outcome: record(twinB, keyed, "rec_twin")},
		{Op: missing, Outcome: proof.Answered(proof.SearchFor(missing, keyed, now), nil)},
		{Op: mismatch, Outcome: proof.Answered(proof.SearchFor(mismatch, keyed, now), []providers.Record{{
			ID: "rec_other", CreatedAt: mismatch.FirstAttemptAt.Add(time.Second), PayloadHash: hashOfDoc(t, `{"template":"other"}`),
		}})},
		{Op: alone, Outcome: record(alone, resemblance, "rec_sms_alone")},
		{Op: lookalike, Outcome: record(lookalike, resemblance, "rec_sms_twin")},
		{Op: holder, Outcome: record(holder, keyed, "rec_taken")},
	}
	got, err := proof.ProveBatch(ctx, ledger.NewStore(tx, ledger.Native()), proofs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(proofs) {
		t.Fatalf("%d decisions for %d proofs", len(got), len(proofs))
	}
	for i, p := range proofs {
		want, err := proof.Prove(ctx, ledger.NewStore(tx, ledger.Native()), p.Op, p.Outcome)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("%s: ProveBatch differs from Prove (-Prove +ProveBatch):\n%s", p.Op.OpKey, diff)
		}
	}
	// The cases are the ones they are meant to be.
	wantDone := map[string]bool{"pb-free": true, "pb-own": true, "pb-twin-a": true, "pb-twin-b": true, "pb-sms-alone": true, "pb-holder": true}
	for i, p := range proofs {
		if got[i].Done != wantDone[p.Op.OpKey] {
			t.Errorf("%s: done %v (%s %s)", p.Op.OpKey, got[i].Done, got[i].Reason, got[i].Detail)
		}
	}
	if got[1].Reason != proof.ReasonMultipleMatches || got[8].Reason != proof.ReasonAmbiguousOwner {
		t.Errorf("held record: %s; look-alike: %s", got[1].Reason, got[8].Reason)
	}
}

func hashOfDoc(t *testing.T, doc string) string {
	t.Helper()
	h, err := ledger.PayloadHash(json.RawMessage(doc))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestLookalikeCheckReadsTheEffectsDate: found by resemblance, the record
// that would prove an operation is checked against the other operations'
// windows by its own date — the effect's — not by the date of a failed
// attempt listed before it in the same answer, which no look-alike's window
// contains.
func TestLookalikeCheckReadsTheEffectsDate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	op := claim(t, tx, "la-effect-date", "onboarding", "sms3")
	twin := claim(t, tx, "la-effect-twin", "onboarding", "sms3") // same recipient and payload
	resemblance := providers.Matching{Margin: providers.DefaultMargin}
	q := proof.SearchFor(op, resemblance, time.Now().Add(time.Minute))
	out := proof.Answered(q, []providers.Record{
		{ID: "SM_failed", CreatedAt: op.FirstAttemptAt.Add(-time.Hour), Recipient: op.Recipient, PayloadHash: op.PayloadHash,
			State: providers.StateFailed, Status: "undelivered"},
		{ID: "SM_sent", CreatedAt: op.FirstAttemptAt.Add(time.Second), Recipient: op.Recipient, PayloadHash: op.PayloadHash},
	})
	d, err := proof.Prove(ctx, ledger.NewStore(tx, ledger.Native()), op, out)
	if err != nil {
		t.Fatal(err)
	}
	if d.Done || d.Reason != proof.ReasonAmbiguousOwner || !cmp.Equal(d.Candidates, []string{twin.OpKey}) {
		t.Errorf("decision %+v; want ambiguous_owner naming %s, whose window holds SM_sent's date", d, twin.OpKey)
	}
}
