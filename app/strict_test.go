package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// reminder is a workflow's SMS attempt: the same text to the same number,
// as a daily reminder would be.
func reminder(key string) ledger.Attempt {
	return ledger.Attempt{OpKey: key, Workflow: "reminders", Provider: "sms", Action: "send_sms",
		Recipient: "+1 (555) 010-0002", Payload: json.RawMessage(`{"body":"Your appointment is tomorrow at 10:00"}`)}
}

// smsAnswer answers every lookup with one message to the same number and
// body, dated at: a provider searched by recipient and body, not by key.
func smsAnswer(at func() time.Time) *fakeLookup {
	return &fakeLookup{byResemblance: true, phone: true, answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			return []providers.Record{{ID: "SM_A", CreatedAt: at(), Recipient: "+15550100002", PayloadHash: q.PayloadHash}}, nil
		},
	}}
}

// TestResemblanceProvesOnlyItsOwnMessage: a record found by resemblance is
// proof only inside the operation's own window, and only when no other
// unsettled operation could own it; never two rows on one message.
func TestResemblanceProvesOnlyItsOwnMessage(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {

		t.Run("a message sent for a newer operation does not prove an older one", func(t *testing.T) {
			t.Parallel()
			sentAt := time.Now().Add(-20 * time.Second)
			b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"sms": fakeProvider("sms", smsAnswer(func() time.Time { return sentAt }), 5*time.Second)})
			old := b.claimAs(t, reminder("tw-b"), 20*time.Minute) // never sent
			b.claimAs(t, reminder("tw-a"), 30*time.Second)        // sent SM_A, confirmation not yet written
			sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{})
			if err != nil || sum.Errors != 0 {
				t.Fatalf("sweep: %+v, %v", sum, err)
			}
			if op := b.status(t, old.OpKey); op.Status != ledger.StatusReview {
				t.Fatalf("tw-b is %s %q, want review: SM_A was sent after its window", op.Status, op.ProviderRecordID)
			}
			if _, ev := b.ticketOf(t, old.OpKey); !strings.Contains(ev.Detail, "created_at") {
				t.Errorf("tw-b's ticket says %q, want the date named", ev.Detail)
			}
			if _, err := b.ledger.Confirm(context.Background(), "tw-a", "SM_A"); err != nil {
				t.Errorf("tw-a's own confirmation: %v", err)
			}
			if n := b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:provider_record_id} = 'SM_A'`)); n != 1 {
				t.Errorf("%d rows name SM_A, want 1", n)
			}
		})

		t.Run("two operations whose windows both hold the message: a person decides", func(t *testing.T) {
			t.Parallel()
			var sentAt time.Time
			b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"sms": fakeProvider("sms", smsAnswer(func() time.Time { return sentAt }), 5*time.Second)})
			first := b.claimAs(t, reminder("tw-1"), 12*time.Minute)
			second := b.claimAs(t, reminder("tw-2"), 11*time.Minute)
			sentAt = second.FirstAttemptAt.Add(5 * time.Second)
			if _, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, op := range []ledger.Operation{first, second} {
				got := b.status(t, op.OpKey)
				if got.Status != ledger.StatusReview {
					t.Errorf("%s is %s %q, want review", op.OpKey, got.Status, got.ProviderRecordID)
					continue
				}
				tk, ev := b.ticketOf(t, op.OpKey)
				other := map[string]string{"tw-1": "tw-2", "tw-2": "tw-1"}[op.OpKey]
				if tk.Reason != proof.ReasonAmbiguousOwner || !strings.Contains(ev.Detail, other) {
					t.Errorf("%s: ticket %s %q, want ambiguous_owner naming %s", op.OpKey, tk.Reason, ev.Detail, other)
				}
			}
		})

		t.Run("a crowd of the same message to other numbers hides no owner", func(t *testing.T) {
			t.Parallel()
			var sentAt time.Time
			b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"sms": fakeProvider("sms", smsAnswer(func() time.Time { return sentAt }), 5*time.Second)})
			// A bulk reminder: the same text to 150 other numbers, just before.
			for i := range 150 {
				a := reminder(fmt.Sprintf("bulk-%03d", i))
				a.Recipient = fmt.Sprintf("+1 555 02%02d %03d", i/100, i%1000)
				b.claimAs(t, a, 13*time.Minute)
			}
			b.claimAs(t, reminder("tw-x"), 12*time.Minute)
			second := b.claimAs(t, reminder("tw-y"), 11*time.Minute)
			sentAt = second.FirstAttemptAt.Add(5 * time.Second)
			if _, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"tw-x", "tw-y"} {
				if op := b.status(t, key); op.Status == ledger.StatusDone {
					t.Errorf("%s is done with %s: the other operation to the same number could own it", key, op.ProviderRecordID)
				}
			}
		})

		t.Run("the re-lookup searches the operation's own window, not up to now", func(t *testing.T) {
			t.Parallel()
			var queries []providers.Query
			var mu sync.Mutex
			today := &fakeLookup{byResemblance: true, phone: true, answers: []func(context.Context, providers.Query) ([]providers.Record, error){
				func(_ context.Context, q providers.Query) ([]providers.Record, error) {
					mu.Lock()
					queries = append(queries, q)
					mu.Unlock()
					// Another operation's identical reminder, sent a minute ago.
					return []providers.Record{{ID: "SM_today", CreatedAt: time.Now().Add(-time.Minute), Recipient: "+15550100002", PayloadHash: q.PayloadHash}}, nil
				},
			}}
			b := setupEscalationOn(t, lt, escalationConfig, map[string]*providers.Provider{"sms": fakeProvider("sms", today, 5*time.Second)})
			old := b.claimAs(t, reminder("tw-old"), 72*time.Hour)
			if _, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{}); err != nil {
				t.Fatal(err)
			}
			tk, _ := b.ticketOf(t, old.OpKey)
			b.passDue(t, tk.ID)
			b.escalateOnce(t)
			if op := b.status(t, old.OpKey); op.Status != ledger.StatusReview {
				t.Errorf("tw-old is %s %q after the re-lookup, want review", op.Status, op.ProviderRecordID)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(queries) < 2 {
				t.Fatalf("%d lookups, want the sweep's and the re-lookup's", len(queries))
			}
			for i, q := range queries {
				if limit := old.FirstAttemptAt.Add(providers.DefaultMargin); q.Until.After(limit) {
					t.Errorf("lookup %d searched until %s, past the operation's window (%s)", i, q.Until, limit)
				}
			}
		})
	})
}

// TestChangedRowIsLookedUpAgain: a workflow rewriting a pending row while
// its lookup runs never gets the row settled on the answer for what it
// was; the compare-and-set on the identity backs the check up.
func TestChangedRowIsLookedUpAgain(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		b := setupOn(t, lt, baseConfig, nil)
		ctx := context.Background()
		current := b.claim(t, "rewritten-1", "sim", stale)
		// The lookup was made for the row as it was, with another payload.
		was := current
		was.PayloadHash = strings.Repeat("e", 64)
		q := proof.SearchFor(was, providers.Matching{ByKey: true}, time.Now())
		rec := providers.Record{ID: "rec_old", CreatedAt: current.FirstAttemptAt.Add(time.Second), Recipient: was.Recipient, PayloadHash: was.PayloadHash}
		step := settle.Step{Final: true, Outcome: proof.Answered(q, []providers.Record{rec}), Query: &q, Adapter: "sim"}

		settler := b.sweeper.Settler()
		if _, err := settler.Finish(ctx, current, step, nil); !errors.Is(err, settle.ErrOperationChanged) {
			t.Errorf("Finish on the current row with the old answer: %v, want ErrOperationChanged", err)
		}
		// The same, had the job read the row before it changed: the write
		// refuses, and the row is read again.
		if _, err := settler.Finish(ctx, was, step, nil); !errors.Is(err, settle.ErrOperationChanged) {
			t.Errorf("Finish on the row as it was: %v, want ErrOperationChanged", err)
		}
		d := proof.Decision{Done: true, ProviderRecordID: "rec_old", RecordIDs: []string{"rec_old"}}
		applied, err := review.NewStore(b.pool, b.table, review.Policy{DefaultOwner: "U0DEFAULT1", Window: time.Hour, Priority: "normal"}).
			Apply(ctx, was, d, proof.Evidence{}, time.Now())
		if err != nil || applied.Settled {
			t.Errorf("Apply of a done for the old identity = %+v, %v; want nothing written", applied, err)
		}
		if op := b.status(t, current.OpKey); op.Status != ledger.StatusPending || op.ProviderRecordID != "" {
			t.Errorf("row is %s %q, want still pending", op.Status, op.ProviderRecordID)
		}
	})
}

// TestRelookupContradictingNotSentIsAlerted: a person resolves a ticket as
// not sent while the re-lookup before its escalation finds the record. The
// ledger stays failed (final), and the ticket gets one alerted event
// saying the provider holds a record after all.
func TestRelookupContradictingNotSentIsAlerted(t *testing.T) {
	t.Parallel()
	var b *escalationBundle
	var ticketID int64
	lookups := 0
	found := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(context.Context, providers.Query) ([]providers.Record, error) { return nil, nil },
		func(ctx context.Context, q providers.Query) ([]providers.Record, error) {
			lookups++
			// The person's click lands while the provider is being asked.
			if _, err := review.NewStore(b.pool, ledger.Native(), review.Policy{}).Resolve(ctx, review.Resolution{
				TicketID: ticketID, Outcome: review.ResolutionNotSent, By: "U0PERSON01"}); err != nil {
				return nil, err
			}
			return []providers.Record{{ID: "rec_found", CreatedAt: q.FirstAttemptAt.Add(time.Second), Recipient: q.Recipient, PayloadHash: q.PayloadHash}}, nil
		},
	}}
	b = setupEscalation(t, escalationConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", found, 5*time.Second)})
	const key = "contradicted-1"
	ticketID = b.openTickets(t, "fake", key)[key]
	b.passDue(t, ticketID)
	sum := b.escalateOnce(t)
	if lookups != 1 || sum.Errors != 0 {
		t.Fatalf("re-lookups %d, summary %+v", lookups, sum)
	}
	if op := b.status(t, key); op.Status != ledger.StatusFailed || op.ProviderRecordID != "" {
		t.Errorf("operation %s %q, want failed as the person decided", op.Status, op.ProviderRecordID)
	}
	want := []string{
		fmt.Sprintf("opened ticket:%d:opened", ticketID),
		fmt.Sprintf("resolved ticket:%d:resolved", ticketID),
		fmt.Sprintf("record_found_after_not_sent ticket:%d:contradicted", ticketID),
	}
	if diff := cmp.Diff(want, b.eventKeys(t, ticketID)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE dedupe_key = $1`, fmt.Sprintf("ticket:%d:contradicted", ticketID)); n != 1 {
		t.Errorf("%d outbox rows for the contradiction, want 1 (it is alerted)", n)
	}
	// Another pass adds nothing.
	b.escalateOnce(t)
	if n := len(b.eventKeys(t, ticketID)); n != len(want) {
		t.Errorf("%d events after another pass, want %d", n, len(want))
	}
}

// TestUnstorableAnswerEndsInATicket: an answer the database refuses to
// store (a field's name holding NUL, which jsonb rejects; a field's value
// is kept only as its hash) is not retried forever: the operation gets a
// lookup_failed ticket that says why, in one pass.
func TestUnstorableAnswerEndsInATicket(t *testing.T) {
	t.Parallel()
	nul := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			return []providers.Record{{ID: "rec_nul", CreatedAt: q.FirstAttemptAt.Add(time.Second), Recipient: q.Recipient,
				PayloadHash: strings.Repeat("f", 64), Fields: map[string]any{"no\x00te": "b"}}}, nil
		},
	}}
	b := setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", nul, 5*time.Second)})
	op := b.claim(t, "nul-1", "fake", stale)
	sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{})
	if err != nil || sum.Errors != 0 {
		t.Fatalf("sweep: %+v, %v", sum, err)
	}
	tk, ev := b.ticketOf(t, op.OpKey)
	if tk.Reason != proof.ReasonLookupFailed || !strings.Contains(ev.Detail, "could not be stored") || len(ev.Records) != 0 {
		t.Errorf("ticket %s %q with %d records; want lookup_failed saying the answer could not be stored", tk.Reason, ev.Detail, len(ev.Records))
	}
}

// TestReplicasWithSkewedClocksDecideAlike: one replica's clock runs seven
// minutes fast. Deciding by the database's clock, it finds an operation
// first attempted nine minutes ago not yet stale (stale_after 10m), as the
// other replica does; by its own clock it would have settled it early.
func TestReplicasWithSkewedClocksDecideAlike(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	b.claim(t, "found-skew-1", "sim", 9*time.Minute)
	fast := func() time.Time { return time.Now().Add(7 * time.Minute) }

	scanned := func(s *app.App) int {
		sum, err := s.SweepOnce(context.Background(), app.OnceOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		return sum.Scanned
	}
	replicas := map[string]*app.App{}
	for name, local := range map[string]func() time.Time{"on time": time.Now, "seven minutes fast": fast} {
		r := wire(t, b.url, baseConfig, nil).sweeper
		r.Clock = ledger.NewClock(r.Pool, local)
		if _, err := r.Clock.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		replicas[name] = r
	}
	for name, r := range replicas {
		if n := scanned(r); n != 0 {
			t.Errorf("replica %s found %d stale operation(s), want 0", name, n)
		}
	}
	// The same replica by its own clock: the skew the database's clock
	// corrects.
	own := wire(t, b.url, baseConfig, nil).sweeper
	own.Now = fast
	if n := scanned(own); n != 1 {
		t.Errorf("by its own fast clock the replica found %d, want 1 (the test would not catch a skew)", n)
	}
}

// TestFutureDatedRowsAreNotLeftPending: rows dated in the future or at
// +infinity (written before the ledger refused such dates) never age into
// the stale scan; the sweep finds them anyway and opens invalid_operation
// tickets, so nothing waits forever unseen.
func TestFutureDatedRowsAreNotLeftPending(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `
		ALTER TABLE ledger.operations DISABLE TRIGGER operations_contract;
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at) VALUES
		('found-future-1', 'wf', 'sim', 'send', repeat('a', 64), now() + interval '3 days'),
		('found-future-2', 'wf', 'sim', 'send', repeat('a', 64), 'infinity');
		ALTER TABLE ledger.operations ENABLE TRIGGER operations_contract`)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{})
	if err != nil || sum.Errors != 0 {
		t.Fatalf("sweep: %+v, %v", sum, err)
	}
	for _, key := range []string{"found-future-1", "found-future-2"} {
		tk, ev := b.ticketOf(t, key)
		if tk.Reason != proof.ReasonInvalidOperation || !strings.Contains(ev.Detail, "first_attempt_at") {
			t.Errorf("%s: ticket %s %q, want invalid_operation about first_attempt_at", key, tk.Reason, ev.Detail)
		}
	}
	if again, _ := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); again.Scanned != 0 {
		t.Errorf("a second sweep scanned %d", again.Scanned)
	}
}
