package review_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

// openEscalationTicket opens a not_found ticket for a new operation and reads it as
// escalation does.
func openEscalationTicket(t *testing.T, b *testBundle, key string) review.EscalationTicket {
	t.Helper()
	op := claim(t, b.tx, key, "onboarding", "mailer")
	d, ev := notFound(op, b.now)
	applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := b.store.EscalationTicket(b.ctx, applied.TicketID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestEscalateStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := openEscalationTicket(t, b, "esc-store")
	policy := review.Escalation{Levels: []review.EscalationLevel{{Owner: "U0NEXT", Priority: "urgent", Window: time.Hour}}}
	now := tk.Deadline.Add(time.Minute)
	step := policy.Next(tk.EscalationState, now)

	taken, err := b.store.Escalate(b.ctx, tk, step, map[string]any{"to_level": 1}, nil)
	if err != nil || !taken {
		t.Fatalf("Escalate = %v, %v", taken, err)
	}
	got, err := b.store.EscalationTicket(b.ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := tk
	want.Version++
	want.Level, want.Owner, want.Priority, want.Deadline = 1, "U0NEXT", "urgent", now.Add(time.Hour)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ticket (-want +got):\n%s", diff)
	}

	// The same step again, from the version it was read at: nothing.
	if taken, err := b.store.Escalate(b.ctx, tk, step, nil, nil); err != nil || taken {
		t.Errorf("second Escalate = %v, %v; want false", taken, err)
	}
	// A step whose event exists already (someone rewound the ticket by
	// hand): nothing, not even the ticket update.
	if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET version = version + 1 WHERE id = $1`, tk.ID); err != nil {
		t.Fatal(err)
	}
	again := got
	again.Version++
	if taken, err := b.store.Escalate(b.ctx, again, review.EscalationStep{
		Kind: review.EscalationLevelUp, FromLevel: 1, ToLevel: 1, Owner: "U0OTHER", Priority: "low", Deadline: now,
	}, nil, nil); err != nil || taken {
		t.Errorf("Escalate over an existing event = %v, %v; want false", taken, err)
	}
	if after, _ := b.store.EscalationTicket(b.ctx, tk.ID); after.Owner != "U0NEXT" {
		t.Errorf("owner %s: the ticket changed although its event was refused", after.Owner)
	}
	var events int
	if err := b.tx.QueryRow(b.ctx, `SELECT count(*) FROM sweeper.ticket_events WHERE ticket_id = $1 AND kind = 'escalated'`, tk.ID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 1 {
		t.Errorf("%d escalated events, want 1", events)
	}

	// An error in the caller's part of the transaction rolls it all back.
	tk, _ = b.store.EscalationTicket(b.ctx, tk.ID)
	boom := errors.New("job completion failed")
	_, err = b.store.Escalate(b.ctx, tk, review.EscalationStep{Kind: review.EscalationRepeat, FromLevel: 1, ToLevel: 1,
		Owner: tk.Owner, Priority: tk.Priority, Deadline: now.Add(2 * time.Hour), RepeatCount: 1},
		nil, func(context.Context, pgx.Tx) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the caller's", err)
	}
	if after, _ := b.store.EscalationTicket(b.ctx, tk.ID); after.RepeatCount != 0 || after.Version != tk.Version {
		t.Errorf("ticket %+v after a rolled-back step", after)
	}
}

func TestResolveByRelookupStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := openEscalationTicket(t, b, "relookup-store")
	op := getOp(t, b.tx, tk.OperationID)
	_, ev := found(op, "rec_1", b.now)

	ok, err := b.store.ResolveByRelookup(b.ctx, tk, "rec_1", ev, b.now, nil)
	if err != nil || !ok {
		t.Fatalf("ResolveByRelookup = %v, %v", ok, err)
	}
	if got := getOp(t, b.tx, op.ID); got.Status != ledger.StatusDone || got.ProviderRecordID != "rec_1" {
		t.Errorf("operation %s %q", got.Status, got.ProviderRecordID)
	}
	if ok, err := b.store.ResolveByRelookup(b.ctx, tk, "rec_1", ev, b.now, nil); err != nil || ok {
		t.Errorf("second ResolveByRelookup = %v, %v; want false", ok, err)
	}

	// The operation left review outside sweeper: nothing is written.
	other := openEscalationTicket(t, b, "relookup-settled")
	if _, err := b.tx.Exec(b.ctx, `UPDATE ledger.operations SET status = 'failed' WHERE id = $1`, other.OperationID); err != nil {
		t.Fatal(err)
	}
	_, err = b.store.ResolveByRelookup(b.ctx, other, "rec_2", ev, b.now, nil)
	if !errors.Is(err, review.ErrNotInReview) {
		t.Errorf("err = %v, want ErrNotInReview", err)
	}
	if got, _ := b.store.EscalationTicket(b.ctx, other.ID); got.State != review.StateOpen || got.Version != other.Version {
		t.Errorf("ticket %+v changed", got)
	}
	if got := getOp(t, b.tx, other.OperationID); got.Status != ledger.StatusFailed {
		t.Errorf("operation %s, want failed untouched", got.Status)
	}
}

// TestEscalationOnlyMovesForward: the trigger refuses any write that would
// let a step happen twice.
func TestEscalationOnlyMovesForward(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc string
		sql  string
		want string
	}{
		{desc: "level down", sql: `UPDATE sweeper.tickets SET escalation_level = 1 WHERE id = $1`, want: "tickets_escalation_forward"},
		{desc: "repeats back at a level", sql: `UPDATE sweeper.tickets SET repeat_count = 1 WHERE id = $1`, want: "tickets_escalation_forward"},
		{desc: "un-exhaust", sql: `UPDATE sweeper.tickets SET escalation_exhausted = false WHERE id = $1`, want: "tickets_escalation_forward"},
		{desc: "negative repeats", sql: `UPDATE sweeper.tickets SET escalation_level = 3, repeat_count = -1 WHERE id = $1`, want: "tickets_repeat_count_check"},
		{desc: "control: level up, repeats reset", sql: `UPDATE sweeper.tickets SET escalation_level = 3, repeat_count = 0 WHERE id = $1`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tk := openEscalationTicket(t, b, "forward")
			if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET escalation_level = 2, repeat_count = 2,
				escalation_exhausted = true WHERE id = $1`, tk.ID); err != nil {
				t.Fatal(err)
			}
			_, err := b.tx.Exec(b.ctx, tt.sql, tk.ID)
			var pgErr *pgconn.PgError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && !errors.As(err, &pgErr):
				t.Fatalf("err = %v, want %s", err, tt.want)
			case tt.want != "" && pgErr.ConstraintName != tt.want:
				t.Errorf("constraint %q (%s), want %s", pgErr.ConstraintName, pgErr.Message, tt.want)
			}
		})
	}
}

// TestExpiredTickets: the escalation scan returns open, not exhausted
// tickets past their deadline, in keyset pages, from the partial index.
func TestExpiredTickets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := b.now
	// 20,000 tickets: one in 50 open, of those one in 5 exhausted; deadlines
	// spread over the day before and after now.
	_, err := b.tx.Exec(b.ctx, `
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, state,
			resolution, resolved_at, escalation_exhausted)
		SELECT i, 'scan-' || i, 'not_found', 'U0X', 'normal', $1::timestamptz + ((i % 2880) - 1440) * interval '1 minute', '{}',
		       CASE WHEN i % 50 = 0 THEN 'open' ELSE 'resolved' END,
		       CASE WHEN i % 50 = 0 THEN NULL ELSE 'done' END,
		       CASE WHEN i % 50 = 0 THEN NULL ELSE $1::timestamptz END,
		       i % 250 = 0
		FROM generate_series(1, 20000) i`, now)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	err = b.tx.QueryRow(b.ctx, `SELECT coalesce(array_agg(id ORDER BY deadline, id), '{}') FROM sweeper.tickets
		WHERE state = 'open' AND NOT escalation_exhausted AND deadline <= $1`, now).Scan(&want)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 100 {
		t.Fatalf("only %d expired tickets to scan", len(want))
	}
	var got []int64
	var cursor review.ExpiredCursor
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("the scan does not end")
		}
		page, err := b.store.ExpiredTickets(b.ctx, now, cursor, 37)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range page {
			got = append(got, tk.ID)
		}
		if len(page) < 37 {
			break
		}
		last := page[len(page)-1]
		cursor = review.ExpiredCursor{Deadline: last.Deadline, ID: last.ID}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scanned ids (-want +got):\n%s", diff)
	}

	if _, err := b.tx.Exec(b.ctx, `ANALYZE sweeper.tickets`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		desc   string
		cursor any
	}{{"first page", nil}, {"later page", now.Add(-time.Hour)}} {
		rows, err := b.tx.Query(b.ctx, `EXPLAIN `+review.ExpiredTicketsQuery, now, c.cursor, int64(0), 500)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "tickets_open_deadline_idx") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: the scan does not use tickets_open_deadline_idx:\n%s", c.desc, plan)
		}
	}
}
