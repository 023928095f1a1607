package slack_test

import (
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// outboxRows counts ticket id's outbox rows.
func (b *bundle) outboxRows(t *testing.T, id int64) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM sweeper.outbox WHERE ticket_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPruneOutbox: a resolved ticket whose rows are all final and older
// than the retention loses its rows, and keeps its events; a ticket still
// open, or resolved with a row still to send, keeps every row; and the
// table refuses any delete but the prune's.
func TestPruneOutbox(t *testing.T) {
	b := setup(t)
	store := review.NewStore(b.pool, ledger.Native(), testPolicy)
	done, waiting, open := b.openTicket(t, "onboarding"), b.openTicket(t, "onboarding"), b.openTicket(t, "onboarding")
	for _, id := range []int64{done, waiting} {
		if _, err := store.Resolve(b.ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent, By: "cli:alice"}); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(t, b.dispatcher(t, "d1", nil))
	// A later event of the waiting ticket, not yet in Slack.
	b.event(t, waiting, "note", "note:1")
	rows := map[int64]int{done: b.outboxRows(t, done), waiting: b.outboxRows(t, waiting), open: b.outboxRows(t, open)}
	if rows[done] < 2 {
		t.Fatalf("the resolved ticket has %d outbox rows, want opened and resolved", rows[done])
	}

	// Not yet past the retention: nothing goes.
	if n, err := outbox.Prune(b.ctx, b.pool, time.Now().Add(-time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("PruneOutbox an hour ago = %d, %v; want 0", n, err)
	}
	// A person's delete, even of a row the prune would delete, is refused.
	if _, err := b.pool.Exec(b.ctx, `DELETE FROM sweeper.outbox WHERE ticket_id = $1`, done); err == nil {
		t.Fatal("a delete without sweeper.writer went through")
	}

	before := time.Now().Add(time.Minute)
	n, err := outbox.Prune(b.ctx, b.pool, before, 100)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(rows[done]) {
		t.Errorf("PruneOutbox = %d rows, want the resolved ticket's %d", n, rows[done])
	}
	want := map[int64]int{done: 0, waiting: rows[waiting], open: rows[open]}
	for id, w := range want {
		if got := b.outboxRows(t, id); got != w {
			t.Errorf("ticket %d has %d outbox rows, want %d", id, got, w)
		}
	}
	if evs, err := store.Events(b.ctx, done); err != nil || len(evs) < 2 {
		t.Errorf("the pruned ticket's events: %d, %v; want them kept", len(evs), err)
	}
	if n, err := outbox.Prune(b.ctx, b.pool, before, 100); err != nil || n != 0 {
		t.Errorf("a second prune = %d, %v; want 0 (idempotent)", n, err)
	}

	// Even as sweeper, an open ticket's row is not deleted by hand.
	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx)
	if _, err := tx.Exec(b.ctx, ledger.SweeperWriterSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(b.ctx, `DELETE FROM sweeper.outbox WHERE ticket_id = $1`, open); err == nil {
		t.Error("sweeper deleted an open ticket's outbox row")
	}
}

// TestPruneOutboxBatches: a pass takes at most its number of tickets.
func TestPruneOutboxBatches(t *testing.T) {
	b := setup(t)
	store := review.NewStore(b.pool, ledger.Native(), testPolicy)
	for range 3 {
		id := b.openTicket(t, "onboarding")
		if _, err := store.Resolve(b.ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent, By: "cli:alice"}); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(t, b.dispatcher(t, "d1", nil))
	before := time.Now().Add(time.Minute)
	var passes []int64
	for {
		n, err := outbox.Prune(b.ctx, b.pool, before, 2)
		if err != nil {
			t.Fatal(err)
		}
		passes = append(passes, n)
		if n == 0 {
			break
		}
	}
	if len(passes) != 3 || passes[0] <= passes[1] {
		t.Errorf("passes deleted %v rows, want two tickets' rows, then one's, then none", passes)
	}
}
