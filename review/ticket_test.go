package review_test

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
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// testPolicy names a different owner at each level, so a test can tell
// which one was chosen.
var testPolicy = review.Policy{
	DefaultOwner:   "U0DEFAULT",
	WorkflowOwners: map[string]string{"onboarding": "U0WORKFLOW"},
	ProviderOwners: map[string]string{"mailer": "U0PROVIDER", "sms": "U0SMS"},
	Window:         4 * time.Hour,
	Priority:       "high",
}

type testBundle struct {
	ctx    context.Context
	tx     pgx.Tx
	ledger *ledger.Store
	store  *review.Store
	// now is what Apply is given, to the database's precision.
	now time.Time
}

// setup gives a test a rolled-back transaction and stores over it.
func setup(t *testing.T) *testBundle {
	t.Helper()
	tx := dbtest.Tx(t)
	return &testBundle{
		ctx:    context.Background(),
		tx:     tx,
		ledger: ledger.NewStore(tx, ledger.Native()),
		store:  review.NewStore(tx, ledger.Native(), testPolicy),
		now:    time.Now().UTC().Truncate(time.Microsecond),
	}
}

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

// decided returns the decision and evidence sweeper would write for op
// after a lookup with outcome out.
func decided(op ledger.Operation, out proof.Outcome, now time.Time) (proof.Decision, proof.Evidence) {
	if out.Searched() && out.Query().OpKey == "" {
		// An answer written without its query is the keyed lookup's for op.
		out = proof.Answered(proof.SearchFor(op, providers.Matching{ByKey: true}, now), out.Records())
	}
	d := proof.Decide(op, out)
	q := &providers.Query{OpKey: op.OpKey, Recipient: op.Recipient, Action: op.Action, PayloadHash: op.PayloadHash,
		Since: op.FirstAttemptAt.Add(-time.Hour), Until: now}
	ev := proof.NewEvidence(op, proof.LookupReport{Adapter: "sim", Query: q, Outcome: out,
		Errors: []proof.AttemptError{{At: now.Add(-time.Minute), Attempt: 1, Class: "transient", Error: "sim: HTTP 503"}},
		At:     now}, d)
	return d, ev
}

// decider is a lookup's result for op, decided at now.
type decider func(op ledger.Operation, now time.Time) (proof.Decision, proof.Evidence)

// notFound is an answered lookup with no record: a review.
func notFound(op ledger.Operation, now time.Time) (proof.Decision, proof.Evidence) {
	return decided(op, proof.Answered(providers.Query{}, nil), now)
}

// found is one agreeing record with the given id: done.
func found(op ledger.Operation, id string, now time.Time) (proof.Decision, proof.Evidence) {
	return decided(op, proof.Answered(providers.Query{}, []providers.Record{{ID: id, CreatedAt: op.FirstAttemptAt, Recipient: op.Recipient, PayloadHash: op.PayloadHash}}), now)
}

func foundAs(id string) decider {
	return func(op ledger.Operation, now time.Time) (proof.Decision, proof.Evidence) { return found(op, id, now) }
}

func failedWith(problem string) decider {
	return func(op ledger.Operation, now time.Time) (proof.Decision, proof.Evidence) {
		return decided(op, proof.Failed(problem), now)
	}
}

// ticketCounts returns how many tickets and ticket events exist for the
// operation, read with plain SQL rather than the store under test.
func ticketCounts(t *testing.T, db ledger.DB, opID int64) (tickets, events int) {
	t.Helper()
	err := db.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM sweeper.tickets WHERE operation_id = $1),
		       (SELECT count(*) FROM sweeper.ticket_events e JOIN sweeper.tickets k ON k.id = e.ticket_id
		        WHERE k.operation_id = $1)`, opID).Scan(&tickets, &events)
	if err != nil {
		t.Fatal(err)
	}
	return tickets, events
}

func getOp(t *testing.T, db ledger.DB, id int64) ledger.Operation {
	t.Helper()
	op, err := ledger.NewStore(db, ledger.Native()).GetByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestPolicyOwnerFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc               string
		workflow, provider string
		want               string
	}{
		{desc: "workflow owner beats provider owner", workflow: "onboarding", provider: "mailer", want: "U0WORKFLOW"},
		{desc: "workflow owner with an unowned provider", workflow: "onboarding", provider: "crm", want: "U0WORKFLOW"},
		{desc: "provider owner beats default", workflow: "billing", provider: "sms", want: "U0SMS"},
		{desc: "default when neither is owned", workflow: "billing", provider: "crm", want: "U0DEFAULT"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got := testPolicy.OwnerFor(ledger.Operation{Workflow: tt.workflow, Provider: tt.provider})
			if got != tt.want {
				t.Errorf("OwnerFor(%s, %s) = %q, want %q", tt.workflow, tt.provider, got, tt.want)
			}
		})
	}
	empty := review.Policy{DefaultOwner: "U0DEFAULT", WorkflowOwners: map[string]string{"onboarding": ""}}
	if got := empty.OwnerFor(ledger.Operation{Workflow: "onboarding", Provider: "mailer"}); got != "U0DEFAULT" {
		t.Errorf("an empty workflow owner was chosen over the default: %q", got)
	}
}

func TestApplyDone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op := claim(t, b.tx, "done-1", "onboarding", "mailer")
	d, ev := found(op, "msg_777", b.now)
	if !d.Done {
		t.Fatalf("test setup: decision %+v is not done", d)
	}
	applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(review.Applied{Settled: true}, applied); diff != "" {
		t.Errorf("Apply mismatch (-want +got):\n%s", diff)
	}
	got := getOp(t, b.tx, op.ID)
	if got.Status != ledger.StatusDone || got.ProviderRecordID != "msg_777" {
		t.Errorf("ledger row is %s with record %q, want done with msg_777", got.Status, got.ProviderRecordID)
	}
	if tickets, events := ticketCounts(t, b.tx, op.ID); tickets != 0 || events != 0 {
		t.Errorf("done opened %d ticket(s) and %d event(s), want none", tickets, events)
	}
}

func TestApplyReview(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc               string
		workflow, provider string
		out                proof.Outcome
		wantOwner          string
		wantReason         proof.Reason
	}{
		{desc: "workflow owner, not found", workflow: "onboarding", provider: "mailer", out: proof.Answered(providers.Query{}, nil),
			wantOwner: "U0WORKFLOW", wantReason: proof.ReasonNotFound},
		{desc: "provider owner, lookup failed", workflow: "billing", provider: "mailer", out: proof.Failed("HTTP 503"),
			wantOwner: "U0PROVIDER", wantReason: proof.ReasonLookupFailed},
		{desc: "default owner, several matches", workflow: "billing", provider: "crm",
			out:       proof.Answered(providers.Query{}, []providers.Record{{ID: "r1"}, {ID: "r2"}}),
			wantOwner: "U0DEFAULT", wantReason: proof.ReasonMultipleMatches},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			op := claim(t, b.tx, "review-"+tt.wantOwner, tt.workflow, tt.provider)
			d, ev := decided(op, tt.out, b.now)
			applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
			if err != nil {
				t.Fatal(err)
			}
			if !applied.Settled || applied.TicketID == 0 {
				t.Fatalf("Apply = %+v, want settled with a ticket", applied)
			}
			if got := getOp(t, b.tx, op.ID); got.Status != ledger.StatusReview || got.ProviderRecordID != "" {
				t.Errorf("ledger row is %s with record %q, want review without one", got.Status, got.ProviderRecordID)
			}
			if tickets, events := ticketCounts(t, b.tx, op.ID); tickets != 1 || events != 1 {
				t.Errorf("%d ticket(s), %d event(s); want 1 and 1", tickets, events)
			}

			tk, err := b.store.Get(b.ctx, applied.TicketID)
			if err != nil {
				t.Fatal(err)
			}
			want := review.Ticket{
				ID: applied.TicketID, OperationID: op.ID, OpKey: op.OpKey, Reason: tt.wantReason,
				Owner: tt.wantOwner, Priority: "high", EscalationLevel: 0, State: review.StateOpen,
				Deadline: b.now.Add(4 * time.Hour), Version: 1,
			}
			if diff := cmp.Diff(want, tk, cmpopts.IgnoreFields(review.Ticket{}, "Evidence", "CreatedAt", "UpdatedAt")); diff != "" {
				t.Errorf("ticket mismatch (-want +got):\n%s", diff)
			}
			if tk.CreatedAt.IsZero() || tk.UpdatedAt.IsZero() {
				t.Errorf("created_at %v, updated_at %v: want both set", tk.CreatedAt, tk.UpdatedAt)
			}
			var gotEv proof.Evidence
			if err := json.Unmarshal(tk.Evidence, &gotEv); err != nil {
				t.Fatalf("evidence %s: %v", tk.Evidence, err)
			}
			// What was stored is the evidence as JSON holds it (its payload
			// fields are plain maps once read back).
			var wantEv proof.Evidence
			if raw, err := json.Marshal(ev); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(raw, &wantEv); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantEv, gotEv); diff != "" {
				t.Errorf("stored evidence mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(string(tk.Evidence), "jane.doe@example.com") {
				t.Errorf("stored evidence holds the raw recipient: %s", tk.Evidence)
			}

			events, err := b.store.Events(b.ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 1 {
				t.Fatalf("%d events, want 1: %+v", len(events), events)
			}
			e := events[0]
			if e.TicketID != tk.ID || e.Kind != review.EventOpened || e.Actor != review.ActorSweeper || e.At.IsZero() {
				t.Errorf("event = %+v, want %q by %q on ticket %d", e, review.EventOpened, review.ActorSweeper, tk.ID)
			}
			var details struct {
				Reason   proof.Reason `json:"reason"`
				Owner    string       `json:"owner"`
				Priority string       `json:"priority"`
				Deadline time.Time    `json:"deadline"`
			}
			if err := json.Unmarshal(e.Details, &details); err != nil {
				t.Fatalf("details %s: %v", e.Details, err)
			}
			if details.Reason != tt.wantReason || details.Owner != tt.wantOwner || details.Priority != "high" ||
				!details.Deadline.Equal(want.Deadline) {
				t.Errorf("event details = %s, want reason %s, owner %s, priority high, deadline %v",
					e.Details, tt.wantReason, tt.wantOwner, want.Deadline)
			}
			var dedupe string
			if err := b.tx.QueryRow(b.ctx, `SELECT dedupe_key FROM sweeper.ticket_events WHERE id = $1`, e.ID).Scan(&dedupe); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("ticket:%d:opened", tk.ID); dedupe != want {
				t.Errorf("dedupe_key = %q, want %q", dedupe, want)
			}
		})
	}
}

// TestApplyIdempotent applies a second decision after the first, as a
// lookup re-run after a crash would: nothing is written the second time.
func TestApplyIdempotent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc          string
		first, second decider
		// wantStatus is the row's status after both.
		wantStatus  ledger.Status
		wantTickets int
	}{
		{desc: "review then the same review", first: notFound, second: notFound,
			wantStatus: ledger.StatusReview, wantTickets: 1},
		{desc: "review then another review", first: notFound, second: failedWith("timeout"),
			wantStatus: ledger.StatusReview, wantTickets: 1},
		{desc: "review then done", first: notFound, second: foundAs("late_1"),
			wantStatus: ledger.StatusReview, wantTickets: 1},
		{desc: "done then review", first: foundAs("rec_1"), second: notFound,
			wantStatus: ledger.StatusDone, wantTickets: 0},
		{desc: "done then done with another record", first: foundAs("rec_1"), second: foundAs("rec_2"),
			wantStatus: ledger.StatusDone, wantTickets: 0},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			op := claim(t, b.tx, "again", "onboarding", "mailer")
			d1, ev1 := tt.first(op, b.now)
			first, err := b.store.Apply(b.ctx, op, d1, ev1, b.now)
			if err != nil {
				t.Fatal(err)
			}
			if !first.Settled {
				t.Fatalf("first Apply = %+v, want settled", first)
			}
			before := getOp(t, b.tx, op.ID)
			var ticketBefore review.Ticket
			if first.TicketID != 0 {
				if ticketBefore, err = b.store.Get(b.ctx, first.TicketID); err != nil {
					t.Fatal(err)
				}
			}

			later := b.now.Add(time.Hour)
			d2, ev2 := tt.second(op, later) // op is the row as first read: pending
			second, err := b.store.Apply(b.ctx, op, d2, ev2, later)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(review.Applied{}, second); diff != "" {
				t.Errorf("second Apply wrote something (-want +got):\n%s", diff)
			}
			after := getOp(t, b.tx, op.ID)
			if after.Status != tt.wantStatus || after.ProviderRecordID != before.ProviderRecordID {
				t.Errorf("row after the second Apply: %s, record %q; want %s, record %q",
					after.Status, after.ProviderRecordID, tt.wantStatus, before.ProviderRecordID)
			}
			tickets, events := ticketCounts(t, b.tx, op.ID)
			if tickets != tt.wantTickets || events != tt.wantTickets {
				t.Errorf("%d ticket(s), %d event(s); want %d of each", tickets, events, tt.wantTickets)
			}
			if first.TicketID != 0 {
				ticketAfter, err := b.store.Get(b.ctx, first.TicketID)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(ticketBefore, ticketAfter); diff != "" {
					t.Errorf("the second Apply changed the ticket (-before +after):\n%s", diff)
				}
			}
		})
	}
}

// TestApplyAfterWorkflowConfirmed: the workflow's confirmation arrived
// between sweeper's read and its write; sweeper's decision is stale.
func TestApplyAfterWorkflowConfirmed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc   string
		decide decider
	}{
		{desc: "review decision", decide: notFound},
		{desc: "done decision with another record", decide: foundAs("sweeper_rec")},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			op := claim(t, b.tx, "confirmed", "onboarding", "mailer")
			if _, err := b.ledger.Confirm(b.ctx, op.OpKey, "workflow_rec"); err != nil {
				t.Fatal(err)
			}
			d, ev := tt.decide(op, b.now)
			applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(review.Applied{}, applied); diff != "" {
				t.Errorf("Apply on a confirmed row (-want +got):\n%s", diff)
			}
			if got := getOp(t, b.tx, op.ID); got.Status != ledger.StatusDone || got.ProviderRecordID != "workflow_rec" {
				t.Errorf("row is %s with record %q, want done with workflow_rec", got.Status, got.ProviderRecordID)
			}
			if tickets, events := ticketCounts(t, b.tx, op.ID); tickets != 0 || events != 0 {
				t.Errorf("%d ticket(s), %d event(s) for a confirmed row, want none", tickets, events)
			}
		})
	}
}

// TestApplyConcurrent races replicas applying decisions for one operation,
// each through its own Store on a shared pool: one wins, the rest find
// nothing to do (I4, I6).
func TestApplyConcurrent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc string
		// done says whether goroutine i applies a done decision.
		done func(i int) bool
	}{
		{desc: "review decisions", done: func(int) bool { return false }},
		{desc: "done and review decisions", done: func(i int) bool { return i%2 == 0 }},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			pool := dbtest.NewPool(t)
			ctx := context.Background()
			op := claim(t, pool, "race", "onboarding", "mailer")
			now := time.Now().UTC().Truncate(time.Microsecond)

			const n = 10
			var (
				wg      sync.WaitGroup
				start   = make(chan struct{})
				results [n]review.Applied
				errs    [n]error
			)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, ev := notFound(op, now)
					if tt.done(i) {
						d, ev = found(op, "rec_race", now)
					}
					store := review.NewStore(pool, ledger.Native(), testPolicy)
					<-start
					results[i], errs[i] = store.Apply(ctx, op, d, ev, now)
				}()
			}
			close(start)
			wg.Wait()

			settled, winner := 0, -1
			for i := range n {
				if errs[i] != nil {
					t.Errorf("goroutine %d: %v", i, errs[i])
				}
				if results[i].Settled {
					settled++
					winner = i
				}
			}
			if settled != 1 {
				t.Fatalf("%d Applies settled the operation, want exactly 1: %+v", settled, results)
			}
			wantTickets, wantStatus := 1, ledger.StatusReview
			if tt.done(winner) {
				wantTickets, wantStatus = 0, ledger.StatusDone
			}
			if got := getOp(t, pool, op.ID); got.Status != wantStatus {
				t.Errorf("row is %s, want %s (goroutine %d won)", got.Status, wantStatus, winner)
			}
			if tickets, events := ticketCounts(t, pool, op.ID); tickets != wantTickets || events != wantTickets {
				t.Errorf("%d ticket(s), %d event(s); want %d of each", tickets, events, wantTickets)
			}
			if wantTickets == 1 && results[winner].TicketID == 0 {
				t.Errorf("the winner got no ticket id: %+v", results[winner])
			}
		})
	}
}

// TestTicketTriggers writes to the tickets with plain SQL, as a person with
// psql could: evidence and the audit trail cannot be rewritten or deleted.
func TestTicketTriggers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc           string
		sql            string // $1 is the ticket id
		wantConstraint string // "" when the statement must succeed
	}{
		{desc: "update evidence", sql: `UPDATE sweeper.tickets SET evidence = '{"reason":"forged"}' WHERE id = $1`,
			wantConstraint: "tickets_evidence_immutable"},
		{desc: "update evidence with other columns", sql: `UPDATE sweeper.tickets SET owner = 'U0X', evidence = evidence || '{"x":1}' WHERE id = $1`,
			wantConstraint: "tickets_evidence_immutable"},
		{desc: "delete ticket", sql: `DELETE FROM sweeper.tickets WHERE id = $1`,
			wantConstraint: "tickets_append_only"},
		{desc: "update event", sql: `UPDATE sweeper.ticket_events SET actor = 'mallory' WHERE ticket_id = $1`,
			wantConstraint: "ticket_events_append_only"},
		{desc: "delete event", sql: `DELETE FROM sweeper.ticket_events WHERE ticket_id = $1`,
			wantConstraint: "ticket_events_append_only"},
		{desc: "second ticket for the operation",
			sql: `INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
				SELECT operation_id, op_key, 'not_found', 'U0X', 'low', now(), '{}' FROM sweeper.tickets WHERE id = $1`,
			wantConstraint: "tickets_operation_id_audit_key"},
		{desc: "second opened event", sql: `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
				VALUES ($1::bigint, 'opened', 'sweeper', 'ticket:' || $1::bigint || ':opened')`,
			wantConstraint: "ticket_events_dedupe_key_key"},
		// Controls: the triggers reject what they must, not every write.
		{desc: "escalate an open ticket", sql: `UPDATE sweeper.tickets
				SET owner = 'U0NEXT', escalation_level = escalation_level + 1, priority = 'urgent' WHERE id = $1`},
		{desc: "append an event", sql: `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
				VALUES ($1::bigint, 'escalated', 'sweeper', 'ticket:' || $1::bigint || ':escalated:1')`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t) // a failed statement aborts its transaction: one per case
			op := claim(t, b.tx, "trigger", "onboarding", "mailer")
			d, ev := notFound(op, b.now)
			applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
			if err != nil {
				t.Fatal(err)
			}
			tag, err := b.tx.Exec(b.ctx, tt.sql, applied.TicketID)
			if tt.wantConstraint == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if tag.RowsAffected() != 1 {
					t.Errorf("%d rows affected, want 1", tag.RowsAffected())
				}
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				t.Fatalf("err = %v (%d rows affected), want a PostgreSQL error from %s", err, tag.RowsAffected(), tt.wantConstraint)
			}
			if pgErr.ConstraintName != tt.wantConstraint {
				t.Errorf("constraint = %q (%s), want %q", pgErr.ConstraintName, pgErr.Message, tt.wantConstraint)
			}
		})
	}
}

// TestResolvedTicketIsFinal resolves a ticket with plain SQL, then tries
// to reopen it.
func TestResolvedTicketIsFinal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op := claim(t, b.tx, "final", "onboarding", "mailer")
	d, ev := notFound(op, b.now)
	applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
	if err != nil {
		t.Fatal(err)
	}
	resolve(t, b.tx, applied.TicketID)
	_, err = b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET state = 'open', resolution = NULL WHERE id = $1`, applied.TicketID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "tickets_resolved_final" {
		t.Errorf("reopening a resolved ticket: err = %v, want tickets_resolved_final", err)
	}
}

// resolve marks a ticket resolved as not_sent, with plain SQL.
func resolve(t *testing.T, db ledger.DB, ticketID int64) {
	t.Helper()
	tag, err := db.Exec(context.Background(), `UPDATE sweeper.tickets
		SET state = 'resolved', resolution = 'not_sent', resolved_at = now(), resolved_by = 'U0PERSON'
		WHERE id = $1`, ticketID)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("resolve ticket %d: %d rows", ticketID, tag.RowsAffected())
	}
}

func TestListAndGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []int64
	for i := range 4 {
		provider := "mailer"
		if i == 3 {
			provider = "acme"
		}
		op := claim(t, b.tx, fmt.Sprintf("list-%d", i), "onboarding", provider)
		d, ev := notFound(op, b.now)
		applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, applied.TicketID)
	}
	// A done operation opens no ticket and must not show up.
	doneOp := claim(t, b.tx, "list-done", "onboarding", "mailer")
	d, ev := found(doneOp, "rec_1", b.now)
	if _, err := b.store.Apply(b.ctx, doneOp, d, ev, b.now); err != nil {
		t.Fatal(err)
	}
	resolve(t, b.tx, ids[1])

	tests := []struct {
		desc   string
		filter review.ListFilter
		want   []int64
	}{
		{desc: "open", filter: review.ListFilter{State: review.StateOpen}, want: []int64{ids[0], ids[2], ids[3]}},
		{desc: "open, one provider", filter: review.ListFilter{State: review.StateOpen, Provider: "acme"}, want: []int64{ids[3]}},
		{desc: "one provider and reason", filter: review.ListFilter{Provider: "mailer", Reason: string(proof.ReasonNotFound)}, want: ids[:3]},
		{desc: "another reason", filter: review.ListFilter{Reason: string(proof.ReasonLookupFailed)}, want: nil},
		{desc: "resolved", filter: review.ListFilter{State: review.StateResolved}, want: []int64{ids[1]}},
		{desc: "all", filter: review.ListFilter{}, want: ids},
		{desc: "all, limited", filter: review.ListFilter{Limit: 2}, want: ids[:2]},
		{desc: "open, limited", filter: review.ListFilter{State: review.StateOpen, Limit: 1}, want: ids[:1]},
		{desc: "unknown state", filter: review.ListFilter{State: "closed"}, want: nil},
	}
	for _, tt := range tests {
		// Not parallel: the subtests share the bundle's transaction.
		t.Run(tt.desc, func(t *testing.T) {
			tickets, err := b.store.List(b.ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, tk := range tickets {
				got = append(got, tk.ID)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("List(%+v) ids (-want +got):\n%s", tt.filter, diff)
			}
		})
	}

	all, err := b.store.List(b.ctx, review.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, listed := range all {
		got, err := b.store.Get(b.ctx, listed.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(listed, got); diff != "" {
			t.Errorf("Get(%d) differs from List (-list +get):\n%s", listed.ID, diff)
		}
	}
	resolved, err := b.store.Get(b.ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if resolved.State != review.StateResolved || resolved.Resolution != "not_sent" || resolved.ResolvedBy != "U0PERSON" ||
		resolved.ResolvedAt == nil || resolved.Version != 1 {
		t.Errorf("resolved ticket = %+v, want resolved not_sent by U0PERSON with a time", resolved)
	}

	missing := ids[2] + 1000
	if _, err := b.store.Get(b.ctx, missing); !errors.Is(err, review.ErrTicketNotFound) {
		t.Errorf("Get(%d) = %v, want ErrTicketNotFound", missing, err)
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var tickets []int64
	for _, key := range []string{"events-a", "events-b"} {
		op := claim(t, b.tx, key, "onboarding", "mailer")
		d, ev := notFound(op, b.now)
		applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, applied.TicketID)
	}
	a, other := tickets[0], tickets[1]
	// Events of both tickets interleave in the table; each trail must hold
	// only its own, in the order they were appended.
	for i, e := range []struct {
		ticket      int64
		kind, actor string
	}{
		{a, "escalated", "sweeper"},
		{other, "escalated", "sweeper"},
		{a, "commented", "U0PERSON"},
		{a, "resolved", "U0PERSON"},
	} {
		_, err := b.tx.Exec(b.ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, details, dedupe_key)
			VALUES ($1, $2, $3, $4, $5)`, e.ticket, e.kind, e.actor, fmt.Sprintf(`{"n":%d}`, i),
			fmt.Sprintf("ticket:%d:%s:%d", e.ticket, e.kind, i))
		if err != nil {
			t.Fatal(err)
		}
	}

	type entry struct{ Kind, Actor string }
	for _, tt := range []struct {
		desc   string
		ticket int64
		want   []entry
	}{
		{desc: "first ticket", ticket: a, want: []entry{{"opened", "sweeper"}, {"escalated", "sweeper"},
			{"commented", "U0PERSON"}, {"resolved", "U0PERSON"}}},
		{desc: "second ticket", ticket: other, want: []entry{{"opened", "sweeper"}, {"escalated", "sweeper"}}},
		{desc: "no such ticket", ticket: other + 1000, want: nil},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			events, err := b.store.Events(b.ctx, tt.ticket)
			if err != nil {
				t.Fatal(err)
			}
			var got []entry
			for i, e := range events {
				got = append(got, entry{e.Kind, e.Actor})
				if e.TicketID != tt.ticket {
					t.Errorf("event %d belongs to ticket %d, want %d", e.ID, e.TicketID, tt.ticket)
				}
				if i > 0 && e.ID <= events[i-1].ID {
					t.Errorf("event %d listed after event %d", e.ID, events[i-1].ID)
				}
				if !json.Valid(e.Details) {
					t.Errorf("event %d details %q are not JSON", e.ID, e.Details)
				}
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Events(%d) (-want +got):\n%s", tt.ticket, diff)
			}
		})
	}
}

// TestAttemptRecordsOpenTickets: records of an attempt that is not the
// effect — failed, still in flight past in_flight_for, reversed — open a
// ticket of their own reason, which the database accepts, and only the
// in_flight one is looked up again on the schedule (the effect may still
// come); the ledger row goes to review, never done.
func TestAttemptRecordsOpenTickets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state      providers.State
		want       proof.Reason
		wantRelook bool
	}{
		{providers.StateFailed, proof.ReasonProviderFailed, false},
		{providers.StateInFlight, proof.ReasonInFlight, true},
		{providers.StateReversed, proof.ReasonProviderReversed, false},
	} {
		t.Run(string(tc.state), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			policy := testPolicy
			policy.RelookupAfter = time.Minute
			b.store = review.NewStore(b.tx, ledger.Native(), policy)
			op := claim(t, b.tx, "attempt-"+string(tc.state), "onboarding", "sms")
			rec := providers.Record{ID: "SM" + string(tc.state), CreatedAt: op.FirstAttemptAt, Recipient: op.Recipient,
				PayloadHash: op.PayloadHash, State: tc.state, Status: "provider word"}
			d, ev := decided(op, proof.Answered(providers.Query{}, []providers.Record{rec}), b.now)
			if d.Done || d.Reason != tc.want {
				t.Fatalf("decided %+v, want %s", d, tc.want)
			}
			applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			var reason, status string
			var relook *time.Time
			var evState string
			if err := b.tx.QueryRow(b.ctx, `
				SELECT t.reason, o.status, t.relookup_at, t.evidence->'records'->0->>'state'
				FROM sweeper.tickets t JOIN ledger.operations o ON o.id = t.operation_id WHERE t.id = $1`,
				applied.TicketID).Scan(&reason, &status, &relook, &evState); err != nil {
				t.Fatal(err)
			}
			if reason != string(tc.want) || status != "review" || (relook != nil) != tc.wantRelook || evState != string(tc.state) {
				t.Errorf("ticket reason %s, ledger %s, relookup_at %v, evidence state %q; want %s, review, relook %v, %s",
					reason, status, relook, evState, tc.want, tc.wantRelook, tc.state)
			}
		})
	}
}
