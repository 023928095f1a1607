package review_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

func TestReassign(t *testing.T) {
	t.Parallel()
	// Over a pool, each call a transaction of its own, as in production:
	// the test transaction of setup would carry the writer declaration of
	// the Apply that opened the ticket.
	pool := dbtest.NewPool(t)
	b := &testBundle{ctx: context.Background(), store: review.NewStore(pool, ledger.Native(), testPolicy)}
	tk := openTicket(t, b.store, pool, "reassign", proof.Answered(providers.Query{}, nil))

	moved, err := b.store.Reassign(b.ctx, tk.ID, " U0BOB ", "slack:U0LEAD", tk.Version)
	if err != nil {
		t.Fatalf("Reassign: %v", err)
	}
	if moved.Owner != "U0BOB" || moved.Version != tk.Version+1 || !moved.Deadline.Equal(tk.Deadline) {
		t.Errorf("reassigned = owner %s version %d deadline %v; want U0BOB, %d, the deadline kept", moved.Owner, moved.Version, moved.Deadline, tk.Version+1)
	}
	evs := events(t, b.store, tk.ID)
	if len(evs) != 2 || evs[1].Kind != review.EventReassigned || evs[1].Actor != "slack:U0LEAD" {
		t.Fatalf("events = %+v, want opened then reassigned by slack:U0LEAD", evs)
	}
	var d review.ReassignedDetails
	if err := json.Unmarshal(evs[1].Details, &d); err != nil || d.From != tk.Owner || d.To != "U0BOB" {
		t.Errorf("details = %+v (%v), want from %s to U0BOB", d, err, tk.Owner)
	}
	var outbox int
	if err := pool.QueryRow(b.ctx, `SELECT count(*) FROM sweeper.outbox WHERE ticket_id = $1 AND kind = $2`, tk.ID, review.EventReassigned).Scan(&outbox); err != nil {
		t.Fatal(err)
	}
	if outbox != 1 {
		t.Errorf("outbox rows for the reassignment = %d, want 1", outbox)
	}

	// The version the person saw is gone: a second click changes nothing.
	if _, err := b.store.Reassign(b.ctx, tk.ID, "U0CAROL", "slack:U0LEAD", tk.Version); !errors.Is(err, review.ErrAlreadyHandled) {
		t.Errorf("reassign at an old version: %v, want ErrAlreadyHandled", err)
	}
	if _, err := b.store.Reassign(b.ctx, tk.ID, "U0BOB", "slack:U0LEAD", 0); !errors.Is(err, review.ErrAlreadyHandled) {
		t.Errorf("reassign to the owner: %v, want ErrAlreadyHandled", err)
	}
	if _, err := b.store.Reassign(b.ctx, tk.ID, "two people", "slack:U0LEAD", 0); !errors.Is(err, review.ErrInvalidRequest) {
		t.Errorf("reassign to two people: %v, want ErrInvalidRequest", err)
	}
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionNotSent, By: "U0BOB"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Reassign(b.ctx, tk.ID, "U0CAROL", "slack:U0LEAD", 0); !errors.Is(err, review.ErrAlreadyHandled) {
		t.Errorf("reassign a resolved ticket: %v, want ErrAlreadyHandled", err)
	}
	if _, err := b.store.Reassign(b.ctx, tk.ID+1000, "U0CAROL", "slack:U0LEAD", 0); !errors.Is(err, review.ErrTicketNotFound) {
		t.Errorf("reassign a missing ticket: %v, want ErrTicketNotFound", err)
	}
}

func TestAddNote(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t) // each call a transaction of its own
	b := &testBundle{ctx: context.Background(), store: review.NewStore(pool, ledger.Native(), testPolicy)}
	tk := openTicket(t, b.store, pool, "note", proof.Answered(providers.Query{}, nil))

	got, err := b.store.AddNote(b.ctx, tk.ID, "slack:U0LEAD", " called the customer ")
	if err != nil {
		t.Fatalf("AddNote: %v", err)
	}
	if got.Version != tk.Version {
		t.Errorf("a note moved the version from %d to %d", tk.Version, got.Version)
	}
	evs := events(t, b.store, tk.ID)
	var d review.NotedDetails
	if len(evs) != 2 || evs[1].Kind != review.EventNoted || json.Unmarshal(evs[1].Details, &d) != nil || d.Note != "called the customer" {
		t.Fatalf("events = %+v, want opened then the note", evs)
	}
	if _, err := b.store.AddNote(b.ctx, tk.ID, "slack:U0LEAD", "called the customer"); !errors.Is(err, review.ErrAlreadyHandled) {
		t.Errorf("the same note again: %v, want ErrAlreadyHandled", err)
	}
	if _, err := b.store.AddNote(b.ctx, tk.ID, "slack:U0LEAD", "  "); !errors.Is(err, review.ErrInvalidRequest) {
		t.Errorf("an empty note: %v, want ErrInvalidRequest", err)
	}
	if _, err := b.store.AddNote(b.ctx, tk.ID+1000, "slack:U0LEAD", "x"); !errors.Is(err, review.ErrTicketNotFound) {
		t.Errorf("a note on a missing ticket: %v, want ErrTicketNotFound", err)
	}
}

func TestDecidersOneRule(t *testing.T) {
	t.Parallel()
	d := review.NewDeciders([]string{"U0LEAD", ""})
	tk := review.Ticket{Owner: "U0ANNA"}
	for _, tc := range []struct {
		desc, user string
		want       bool
	}{
		{"the owner", "U0ANNA", true},
		{"a reviewer", "U0LEAD", true},
		{"someone else", "U0EVE", false},
		{"no one", "", false},
	} {
		if got := d.MayAct(tk, tc.user); got != tc.want {
			t.Errorf("%s: MayAct = %v, want %v", tc.desc, got, tc.want)
		}
	}
	if (review.Deciders{}).MayAct(review.Ticket{}, "") {
		t.Error("the zero rule lets no one act on an ownerless ticket, even no one")
	}
}

// TestReassignOnlyToSomeoneKnown: a Store with its Assignees refuses to
// give a ticket to anyone they do not allow — an e-mail, markup, a Slack
// user id nobody named — and writes nothing; a known owner takes it.
func TestReassignOnlyToSomeoneKnown(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	store := review.NewStore(pool, ledger.Native(), testPolicy).WithAssignees(review.NewAssignees(true, []string{"U0BOB", "U0LEAD"}))
	tk := openTicket(t, store, pool, "reassign-known", proof.Answered(providers.Query{}, nil))
	for _, to := range []string{"ben@example.com", "<svg/onload=alert(4)>", "U0NOBODY1", "u0bob"} {
		if _, err := store.Reassign(ctx, tk.ID, to, "slack:U0LEAD", 0); !errors.Is(err, review.ErrInvalidRequest) || !strings.Contains(err.Error(), "owner: ") {
			t.Errorf("reassign to %q: %v, want ErrInvalidRequest naming the owner", to, err)
		}
	}
	if evs := events(t, store, tk.ID); len(evs) != 1 {
		t.Errorf("events after the refusals = %+v, want the opening alone", evs)
	}
	if moved, err := store.Reassign(ctx, tk.ID, "U0BOB", "slack:U0LEAD", 0); err != nil || moved.Owner != "U0BOB" {
		t.Errorf("reassign to a known owner: %+v, %v", moved, err)
	}
}
