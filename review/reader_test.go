package review_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestReader: the reader returns what the store wrote, by ticket, by
// event and in summaries, and says which one it did not find.
func TestReader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := review.NewReader(b.tx, ledger.Native())
	a := openTicket(t, b.store, b.tx, "reader-a", threeRecords)
	c := openTicket(t, b.store, b.tx, "reader-c", threeRecords)

	got, err := r.Ticket(b.ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("Ticket (-want +got):\n%s", diff)
	}
	if _, err := r.Ticket(b.ctx, c.ID+100); !errors.Is(err, review.ErrTicketNotFound) {
		t.Errorf("Ticket of no ticket: %v, want ErrTicketNotFound", err)
	}

	evs := events(t, b.store, a.ID)
	ev, err := r.Event(b.ctx, evs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(evs[0], ev); diff != "" {
		t.Errorf("Event (-want +got):\n%s", diff)
	}
	if _, err := r.Event(b.ctx, evs[0].ID+1000); !errors.Is(err, review.ErrEventNotFound) {
		t.Errorf("Event of no event: %v, want ErrEventNotFound", err)
	}

	list, err := r.Summaries(b.ctx, []int64{c.ID, c.ID + 100, a.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := []review.Summary{
		{ID: a.ID, OpKey: "reader-a", Reason: a.Reason, State: review.StateOpen, Workflow: "onboarding", Provider: "mailer", CreatedAt: a.CreatedAt},
		{ID: c.ID, OpKey: "reader-c", Reason: c.Reason, State: review.StateOpen, Workflow: "onboarding", Provider: "mailer", CreatedAt: c.CreatedAt},
	}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("Summaries (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		desc     string
		provider string
		since    time.Time
		written  time.Time
		want     int
	}{
		{desc: "both", provider: "mailer", since: a.CreatedAt, want: 2},
		{desc: "both, written by then", provider: "mailer", since: a.CreatedAt, written: c.CreatedAt.Add(time.Hour), want: 2},
		{desc: "written after", provider: "mailer", since: a.CreatedAt, written: a.CreatedAt.Add(-time.Hour), want: 0},
		{desc: "none yet", provider: "mailer", since: c.CreatedAt.Add(time.Hour), want: 0},
		{desc: "another provider", provider: "sms", since: a.CreatedAt, want: 0},
	} {
		n, err := r.OpenedSince(b.ctx, tc.provider, tc.since, tc.written)
		if err != nil || n != tc.want {
			t.Errorf("%s: OpenedSince = %d, %v; want %d", tc.desc, n, err, tc.want)
		}
	}
}

// TestOpenIDs: the open tickets of a provider and reason, in id order;
// another reason, another provider and a resolved ticket are left out.
func TestOpenIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := review.NewReader(b.tx, ledger.Native())
	a := openTicket(t, b.store, b.tx, "open-a", threeRecords)
	c := openTicket(t, b.store, b.tx, "open-c", threeRecords)
	failed := openTicket(t, b.store, b.tx, "open-failed", proof.Failed("HTTP 503"))
	gone := openTicket(t, b.store, b.tx, "open-gone", threeRecords)
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: gone.ID, Outcome: review.ResolutionNotSent, By: "cli:alice", ExpectVersion: gone.Version}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc     string
		provider string
		reason   proof.Reason
		want     []int64
	}{
		{desc: "open of the provider and reason", provider: "mailer", reason: a.Reason, want: []int64{a.ID, c.ID}},
		{desc: "another reason", provider: "mailer", reason: failed.Reason, want: []int64{failed.ID}},
		{desc: "another provider", provider: "sms", reason: a.Reason, want: []int64{}},
	} {
		got, err := r.OpenIDs(b.ctx, tc.provider, tc.reason)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: OpenIDs (-want +got):\n%s", tc.desc, diff)
		}
	}
}

// TestNote: an event noted from outside review is written once per kind
// and instance, with its key from EventKey; review's own kinds are refused.
func TestNote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := openTicket(t, b.store, b.tx, "note", threeRecords)
	for i, want := range []bool{true, false} {
		added, err := b.store.Note(b.ctx, tk.ID, "slack_root_removed", "1700000000.000100", map[string]string{"ts": "1700000000.000100"})
		if err != nil || added != want {
			t.Fatalf("Note #%d = %v, %v; want %v", i+1, added, err, want)
		}
	}
	keys := dedupeKeys(t, b.tx, tk.ID)
	if diff := cmp.Diff([]string{review.OpenedKey(tk.ID), review.EventKey(tk.ID, "slack_root_removed", "1700000000.000100")}, keys); diff != "" {
		t.Errorf("dedupe keys (-want +got):\n%s", diff)
	}
	if want := fmt.Sprintf("ticket:%d:opened", tk.ID); review.OpenedKey(tk.ID) != want {
		t.Errorf("OpenedKey = %q, want %q", review.OpenedKey(tk.ID), want)
	}
	for _, kind := range []string{"", review.EventOpened, review.EventResolved, review.EventContradicted} {
		if _, err := b.store.Note(b.ctx, tk.ID, kind, "x", nil); !errors.Is(err, review.ErrInvalidRequest) {
			t.Errorf("Note(%q): %v, want ErrInvalidRequest", kind, err)
		}
	}
}

// TestOpenCounts: open tickets are counted by provider and reason, and by
// reason and age.
func TestOpenCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	store := review.NewStore(pool, ledger.Native(), testPolicy)
	openTicket(t, store, pool, "count-a", threeRecords)
	openTicket(t, store, pool, "count-b", threeRecords)
	openTicket(t, store, pool, "count-c", proof.Failed("HTTP 503"))
	op := claim(t, pool, "count-d", "onboarding", "sms")
	now := time.Now().UTC().Truncate(time.Microsecond)
	d, ev := decided(op, proof.Failed("HTTP 503"), now)
	if _, err := store.Apply(ctx, op, d, ev, now); err != nil {
		t.Fatal(err)
	}
	// A ticket opened two days ago, as written then.
	if _, err := pool.Exec(ctx, `
		BEGIN;
		SELECT set_config('sweeper.writer', 'sweeper', true);
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status)
		VALUES ('count-e', 'wf', 'mailer', 'send_email', repeat('a', 64), 'review');
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, created_at)
		SELECT id, op_key, 'lookup_failed', 'U0OWNER', 'normal', now(), '{}', now() - interval '2 days'
		FROM ledger.operations WHERE op_key = 'count-e';
		COMMIT;`); err != nil {
		t.Fatal(err)
	}

	r := review.NewReader(pool, ledger.Native())
	for _, tc := range []struct {
		provider string
		reason   proof.Reason
		want     int64
	}{
		{"mailer", proof.ReasonMultipleMatches, 2},
		{"mailer", proof.ReasonLookupFailed, 2},
		{"sms", proof.ReasonLookupFailed, 1},
		{"sms", proof.ReasonNotFound, 0},
	} {
		if n, err := r.CountOpen(ctx, tc.provider, tc.reason); err != nil || n != tc.want {
			t.Errorf("CountOpen(%s, %s) = %d, %v; want %d", tc.provider, tc.reason, n, err, tc.want)
		}
	}

	counts, err := r.OpenCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []review.OpenCount{
		{Reason: proof.ReasonLookupFailed, Age: "1d-7d", Count: 1},
		{Reason: proof.ReasonLookupFailed, Age: "<1h", Count: 2},
		{Reason: proof.ReasonMultipleMatches, Age: "<1h", Count: 2},
	}
	slices.SortFunc(counts, func(a, b review.OpenCount) int {
		return strings.Compare(string(a.Reason)+" "+a.Age, string(b.Reason)+" "+b.Age)
	})
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("OpenCounts (-want +got):\n%s", diff)
	}
}
