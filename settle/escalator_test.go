package settle_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// escalation is the policy of these tests: an hour for the first owner,
// two for the lead, then one re-alert every 30 minutes, then the end.
var escalation = review.Escalation{
	FirstWindow: time.Hour,
	Levels:      []review.EscalationLevel{{Owner: "U0LEAD0001", Priority: "high", Window: 2 * time.Hour}},
	RepeatEvery: 30 * time.Minute,
	MaxRepeats:  1,
}

// escalatorOn is an Escalator over pool whose lookups ask p, by clk.
func escalatorOn(pool *pgxpool.Pool, clk *clock, p *providers.Provider) *settle.Escalator {
	return &settle.Escalator{
		Reviews:   review.NewStore(pool, ledger.Native(), policy()),
		Ledger:    ledger.NewStore(pool, ledger.Native()),
		Settler:   settlerOn(pool, clk.Now, p),
		Policy:    escalation,
		Relookups: policy(),
		Logger:    discard(),
		Now:       clk.Now,
	}
}

// openTicket records a pending operation for key, looks it up through p
// as the sweep does, and returns the ticket it opened.
func openTicket(t *testing.T, pool *pgxpool.Pool, p *providers.Provider, key string) review.EscalationTicket {
	t.Helper()
	return openTicketAt(t, pool, p, key, time.Now)
}

// openTicketAt is openTicket with the sweep's clock at now: the ticket's
// deadline and re-lookup count from it.
func openTicketAt(t *testing.T, pool *pgxpool.Pool, p *providers.Provider, key string, now func() time.Time) review.EscalationTicket {
	t.Helper()
	ctx := context.Background()
	op := claim(t, pool, key, p.Name, time.Hour)
	s := settlerOn(pool, now, p)
	got, err := s.Finish(ctx, op, s.Attempt(ctx, op), nil)
	if err != nil || got.Applied.TicketID == 0 {
		t.Fatalf("open a ticket for %s: %+v, %v", key, got, err)
	}
	return ticketOf(t, pool, got.Applied.TicketID)
}

func ticketOf(t *testing.T, pool *pgxpool.Pool, id int64) review.EscalationTicket {
	t.Helper()
	tk, err := review.NewStore(pool, ledger.Native(), policy()).EscalationTicket(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// eventKinds are ticket id's events, oldest first.
func eventKinds(t *testing.T, pool *pgxpool.Pool, id int64) []string {
	t.Helper()
	events, err := review.NewStore(pool, ledger.Native(), policy()).Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// TestEscalate: at a ticket's deadline the operation is looked up once
// more; nothing proven, the ticket takes the policy's next step — the
// next level, a re-alert at the top, then the end — one step per deadline
// however often it is called; before its deadline, or for a version the
// ticket no longer has, nothing happens.
func TestEscalate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	nothing := simProvider(t, "sim", limits()) // finds nothing, ever
	start := time.Now()
	clk := newClock(start)
	e := escalatorOn(pool, clk, nothing)

	tk := openTicket(t, pool, nothing, "esc-1")
	if tk.Reason != proof.ReasonNotFound || tk.Level != 0 || tk.Owner != "U0DEFAULT1" {
		t.Fatalf("opened %+v", tk)
	}
	step := func(version int) settle.EscalationOutcome {
		t.Helper()
		out, err := e.Escalate(ctx, tk.ID, version, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	alreadyHandled := func(what string, version int) {
		t.Helper()
		before := ticketOf(t, pool, tk.ID)
		if out := step(version); out.Kind != settle.OutcomeAlreadyHandled || out.Level != before.Level {
			t.Errorf("%s: %+v, want already_handled at level %d", what, out, before.Level)
		}
		if after := ticketOf(t, pool, tk.ID); after.Version != before.Version || after.Deadline != before.Deadline {
			t.Errorf("%s: the ticket changed: %+v → %+v", what, before, after)
		}
	}

	alreadyHandled("before the deadline", tk.Version)

	clk.set(start.Add(61 * time.Minute))
	if out := step(tk.Version); out.Kind != review.EscalationLevelUp || out.Level != 1 {
		t.Fatalf("at the deadline: %+v, want a step to level 1", out)
	}
	up := ticketOf(t, pool, tk.ID)
	if up.Owner != "U0LEAD0001" || up.Priority != "high" || up.Version != tk.Version+1 ||
		!up.Deadline.Equal(clk.Now().Add(2*time.Hour)) || up.State != review.StateOpen {
		t.Errorf("after the step: %+v, want the lead's, high, two hours on", up)
	}
	if got := get(t, pool, up.OperationID).Status; got != ledger.StatusReview {
		t.Errorf("operation %s after an escalation, want review", got)
	}
	alreadyHandled("called again with the version it was seen at", tk.Version)
	alreadyHandled("called again with the new version", up.Version)

	clk.set(start.Add(61*time.Minute + 2*time.Hour))
	if out := step(up.Version); out.Kind != review.EscalationRepeat || out.Level != 1 {
		t.Fatalf("at the lead's deadline: %+v, want a re-alert at level 1", out)
	}
	repeated := ticketOf(t, pool, tk.ID)
	alreadyHandled("the re-alert called twice", up.Version)

	clk.add(31 * time.Minute)
	if out := step(repeated.Version); out.Kind != review.EscalationExhausted || out.Level != 1 {
		t.Fatalf("after the last re-alert: %+v, want exhausted", out)
	}
	final := ticketOf(t, pool, tk.ID)
	clk.add(24 * time.Hour)
	alreadyHandled("exhausted", final.Version)

	want := []string{review.EventOpened, review.EventEscalated, review.EventEscalated, review.EventEscalated}
	if got := eventKinds(t, pool, tk.ID); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v: one per step", got, want)
	}
	var details map[string]any
	if err := pool.QueryRow(ctx, `SELECT details FROM sweeper.ticket_events WHERE ticket_id = $1 AND kind = 'escalated'
		ORDER BY id LIMIT 1`, tk.ID).Scan(&details); err != nil {
		t.Fatal(err)
	}
	if r, _ := details["relookup"].(map[string]any); r["reason"] != string(proof.ReasonNotFound) {
		t.Errorf("the escalated event's re-lookup %v, want the not_found it found", details["relookup"])
	}
}

// TestEscalateResolvesOnProof: when the lookup at the deadline finds
// exactly one agreeing record, the ticket is resolved as done and the
// operation moves review → done with the record, instead of escalating;
// called again, nothing happens.
func TestEscalateResolvesOnProof(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	// The same provider, before and after its record turned up.
	before := simProvider(t, "sim", limits())
	after := simProvider(t, "sim", limits(), "*", sim.OutcomeFound)
	start := time.Now()
	clk := newClock(start.Add(61 * time.Minute))
	e := escalatorOn(pool, clk, after)

	tk := openTicket(t, pool, before, "esc-proof")
	out, err := e.Escalate(ctx, tk.ID, tk.Version, nil)
	if err != nil || out.Kind != settle.OutcomeResolved || out.Level != 0 {
		t.Fatalf("escalate: %+v, %v; want resolved", out, err)
	}
	if got := ticketOf(t, pool, tk.ID); got.State != review.StateResolved {
		t.Errorf("ticket %s, want resolved", got.State)
	}
	op := get(t, pool, tk.OperationID)
	if op.Status != ledger.StatusDone || op.ProviderRecordID == "" {
		t.Errorf("operation %s with record %q, want done with the record found", op.Status, op.ProviderRecordID)
	}
	if out, err := e.Escalate(ctx, tk.ID, tk.Version, nil); err != nil || out.Kind != settle.OutcomeAlreadyHandled {
		t.Errorf("called again: %+v, %v; want already_handled", out, err)
	}
	want := []string{review.EventOpened, review.EventResolvedByRelookup}
	if got := eventKinds(t, pool, tk.ID); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestRelookup: an open not_found ticket is looked up again when its
// re-lookup is due: nothing found schedules the next one later by the
// policy (10m, then 20m, ...), with no event; called twice for one due
// re-lookup, it is made once; a record found resolves the ticket as done.
// Before it is due nothing happens.
func TestRelookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	nothing := simProvider(t, "sim", limits())
	found := simProvider(t, "sim", limits(), "*", sim.OutcomeFound)
	start := time.Now()
	clk := newClock(start)
	e := escalatorOn(pool, clk, nothing)

	tk := openTicket(t, pool, nothing, "relook-1")
	if tk.RelookupAt.IsZero() || tk.Relookups != 0 {
		t.Fatalf("opened %+v, want a re-lookup scheduled", tk)
	}
	relookup := func(e *settle.Escalator, done int) settle.EscalationOutcome {
		t.Helper()
		out, err := e.Relookup(ctx, tk.ID, done, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	if out := relookup(e, 0); out.Kind != settle.OutcomeAlreadyHandled {
		t.Errorf("before it is due: %+v", out)
	}
	clk.set(tk.RelookupAt.Add(time.Second))
	if out := relookup(e, 0); out.Kind != settle.OutcomeRelooked {
		t.Fatalf("due, nothing found: %+v, want relooked", out)
	}
	first := ticketOf(t, pool, tk.ID)
	if first.Relookups != 1 || !first.RelookupAt.Equal(policy().NextRelookup(clk.Now(), 1)) ||
		!first.RelookupAt.Equal(clk.Now().Add(20*time.Minute)) {
		t.Errorf("after the first re-lookup: %d made, next at %s, want 1 and %s", first.Relookups, first.RelookupAt, clk.Now().Add(20*time.Minute))
	}
	if out := relookup(e, 0); out.Kind != settle.OutcomeAlreadyHandled {
		t.Errorf("the same re-lookup again: %+v, want already_handled", out)
	}
	if out := relookup(e, 1); out.Kind != settle.OutcomeAlreadyHandled {
		t.Errorf("the next re-lookup, not yet due: %+v", out)
	}
	if got := ticketOf(t, pool, tk.ID); got.Relookups != 1 || got.State != review.StateOpen || got.Level != 0 {
		t.Errorf("ticket %+v, want one re-lookup made, open, level 0", got)
	}

	clk.set(first.RelookupAt)
	e = escalatorOn(pool, clk, found)
	if out := relookup(e, 1); out.Kind != settle.OutcomeResolved {
		t.Fatalf("due, record found: %+v, want resolved", out)
	}
	if op := get(t, pool, tk.OperationID); op.Status != ledger.StatusDone {
		t.Errorf("operation %s, want done", op.Status)
	}
	if out := relookup(e, 1); out.Kind != settle.OutcomeAlreadyHandled {
		t.Errorf("a resolved ticket: %+v", out)
	}
	want := []string{review.EventOpened, review.EventResolvedByRelookup}
	if got := eventKinds(t, pool, tk.ID); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v: a re-lookup that finds nothing tells no one", got, want)
	}

	// A reason that a re-lookup cannot settle has none scheduled.
	many := simProvider(t, "sim", limits(), "*", sim.OutcomeMany)
	other := openTicket(t, pool, many, "relook-many")
	if other.Reason != proof.ReasonMultipleMatches || !other.RelookupAt.IsZero() {
		t.Fatalf("opened %+v, want multiple_matches with no re-lookup", other)
	}
	clk.add(365 * 24 * time.Hour)
	if out, err := e.Relookup(ctx, other.ID, 0, nil); err != nil || out.Kind != settle.OutcomeAlreadyHandled {
		t.Errorf("re-lookup of a multiple_matches ticket: %+v, %v", out, err)
	}
}

// TestEscalatorScans: the scans of expired tickets and of due re-lookups
// hand on each due ticket once, oldest first, in pages of the batch size,
// and none that is not due.
func TestEscalatorScans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	nothing := simProvider(t, "sim", limits())
	var want []int64
	for i := range 5 {
		want = append(want, openTicket(t, pool, nothing, fmt.Sprintf("scan-%d", i)).ID)
	}
	// Opened a day later: neither expired nor due.
	openTicketAt(t, pool, nothing, "scan-later", func() time.Time { return time.Now().Add(24 * time.Hour) })
	clk := newClock(time.Now().Add(2 * time.Hour))
	e := escalatorOn(pool, clk, nothing)

	for _, batch := range []int{1, 2, 5, 6} {
		var expired, due []int64
		n, err := e.ScanExpired(ctx, clk.Now(), batch, 10*time.Second, func(_ context.Context, ts []review.ExpiredTicket) error {
			if len(ts) > batch {
				t.Errorf("a page of %d, batch %d", len(ts), batch)
			}
			for _, tk := range ts {
				expired = append(expired, tk.ID)
			}
			return nil
		})
		if err != nil || n != len(want) || !slices.Equal(expired, want) {
			t.Errorf("batch %d: expired %v (%d, %v), want %v", batch, expired, n, err, want)
		}
		n, err = e.ScanDueRelookups(ctx, clk.Now(), batch, 10*time.Second, func(_ context.Context, ds []review.DueRelookup) error {
			if len(ds) > batch {
				t.Errorf("a page of %d, batch %d", len(ds), batch)
			}
			for _, d := range ds {
				due = append(due, d.ID)
			}
			return nil
		})
		if err != nil || n != len(want) || !slices.Equal(due, want) {
			t.Errorf("batch %d: due re-lookups %v (%d, %v), want %v", batch, due, n, err, want)
		}
	}
}
