package review_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// setNamespaces records which account each block reaches.
func setNamespaces(t *testing.T, db ledger.DB, namespaces map[string]string) {
	t.Helper()
	if _, err := ledger.NewStore(db, ledger.Native()).SetRecordNamespaces(context.Background(), namespaces); err != nil {
		t.Fatal(err)
	}
}

// proveOne is ProveBatch's decision for op on one record, id, that agrees
// with it in every field, found as m says.
func proveOne(t *testing.T, db ledger.DB, op ledger.Operation, m providers.Matching, id string) proof.Decision {
	t.Helper()
	q := proof.SearchFor(op, m, time.Now().Add(time.Minute))
	out := proof.Answered(q, []providers.Record{{
		ID: id, CreatedAt: op.FirstAttemptAt.Add(time.Second), Recipient: op.Recipient, PayloadHash: op.PayloadHash,
	}})
	ds, err := proof.ProveBatch(context.Background(), ledger.NewStore(db, ledger.Native()), []proof.Case{{Op: op, Outcome: out}})
	if err != nil {
		t.Fatal(err)
	}
	return ds[0]
}

// TestOneRecordProvesOneOperationPerAccount: two blocks reaching one
// Twilio account are one namespace of records. A message that proves an
// operation of block sms proves none of block sms_alerts (multiple_matches,
// naming the holder); a block of another account may be proven by the same
// id; and of two unsettled twins, one per block, a record found by
// resemblance could be either's (ambiguous_owner).
func TestOneRecordProvesOneOperationPerAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setNamespaces(t, b.tx, map[string]string{"sms": "twilio:AC1", "sms_alerts": "twilio:AC1", "sms_eu": "twilio:AC2"})
	keyed := providers.Matching{ByKey: true}
	resemblance := providers.Matching{Margin: providers.DefaultMargin}

	holder := claim(t, b.tx, "acct-holder", "alerts", "sms")
	if _, err := b.ledger.Confirm(b.ctx, holder.OpKey, "SM1"); err != nil {
		t.Fatal(err)
	}
	other := claim(t, b.tx, "acct-other", "alerts", "sms_alerts")
	d := proveOne(t, b.tx, other, keyed, "SM1")
	if d.Done || d.Reason != proof.ReasonMultipleMatches || !strings.Contains(d.Detail, holder.OpKey) {
		t.Errorf("sms_alerts on sms's record: %+v; want multiple_matches naming %s", d, holder.OpKey)
	}
	elsewhere := claim(t, b.tx, "acct-elsewhere", "alerts", "sms_eu")
	if d := proveOne(t, b.tx, elsewhere, keyed, "SM1"); !d.Done {
		t.Errorf("sms_eu (another account) on SM1: %+v; want done", d)
	}

	// Twins: the same recipient and body, one row per block, one message.
	twinA := claim(t, b.tx, "acct-twin-a", "alerts", "sms")
	twinB := claim(t, b.tx, "acct-twin-b", "alerts", "sms_alerts")
	for _, tc := range []struct {
		op, candidate ledger.Operation
	}{{twinA, twinB}, {twinB, twinA}} {
		d := proveOne(t, b.tx, tc.op, resemblance, "SM_TWIN")
		if d.Done || d.Reason != proof.ReasonAmbiguousOwner || !slices.Contains(d.Candidates, tc.candidate.OpKey) {
			t.Errorf("%s: %+v; want ambiguous_owner with candidate %s", tc.op.OpKey, d, tc.candidate.OpKey)
		}
	}
}

// TestHTTPBlocksNamespaces: two http blocks are two namespaces unless they
// name one record_namespace: the same record id proves one operation in
// each, or one in all.
func TestHTTPBlocksNamespaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc       string
		namespaces map[string]string
		wantDone   bool
	}{
		{desc: "no record_namespace", namespaces: map[string]string{"billing": "billing", "invoices": "invoices"}, wantDone: true},
		{desc: "a shared record_namespace", namespaces: map[string]string{"billing": "http:erp", "invoices": "http:erp"}, wantDone: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			setNamespaces(t, b.tx, tc.namespaces)
			first := claim(t, b.tx, "http-first", "billing", "billing")
			if _, err := b.ledger.Confirm(b.ctx, first.OpKey, "inv_1"); err != nil {
				t.Fatal(err)
			}
			second := claim(t, b.tx, "http-second", "billing", "invoices")
			d := proveOne(t, b.tx, second, providers.Matching{ByKey: true}, "inv_1")
			if d.Done != tc.wantDone {
				t.Errorf("invoices on billing's inv_1: %+v; want done %v", d, tc.wantDone)
			}
		})
	}
}

// TestResolveRefusesARecordOfTheAccount: a person resolving a ticket as
// done with a record that already proves an operation of another block of
// the same account is refused, and nothing is written.
func TestResolveRefusesARecordOfTheAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setNamespaces(t, b.tx, map[string]string{"mailer": "postmark:server:1", "mailer_bulk": "postmark:server:1"})
	tk := openTicket(t, b.store, b.tx, "acct-refused", threeRecords)
	other := claim(t, b.tx, "acct-bulk", "onboarding", "mailer_bulk")
	if _, err := b.ledger.Confirm(b.ctx, other.OpKey, "rec_held"); err != nil {
		t.Fatal(err)
	}
	_, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionDone, ProviderRecordID: "rec_held", By: "U0A", ConfirmDiffers: true})
	if !errors.Is(err, review.ErrInvalidRequest) || !strings.Contains(err.Error(), other.OpKey) {
		t.Fatalf("Resolve with mailer_bulk's record: %v; want ErrInvalidRequest naming %s", err, other.OpKey)
	}
	got, err := b.store.Get(b.ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if op := getOp(t, b.tx, tk.OperationID); got.State != review.StateOpen || op.Status != ledger.StatusReview {
		t.Errorf("after the refusal: ticket %s, row %s; want open and review", got.State, op.Status)
	}
}
