package review_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// queueTicket opens a ticket for an operation of workflow and provider
// with reason not_found (no record) or multiple_matches (two).
func queueTicket(t *testing.T, b *testBundle, key, workflow, provider string, several bool) review.Ticket {
	t.Helper()
	op := claim(t, b.tx, key, workflow, provider)
	out := proof.Answered(providers.Query{}, nil)
	if several {
		out = proof.Answered(providers.Query{}, []providers.Record{{ID: key + "_a"}, {ID: key + "_b"}})
	}
	d, ev := decided(op, out, b.now)
	applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("Apply(%s) = %+v, %v", key, applied, err)
	}
	tk, err := b.store.Get(b.ctx, applied.TicketID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func queueIDs(page review.QueuePage) []int64 {
	var ids []int64
	for _, it := range page.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// TestQueueFilters: each filter keeps exactly the tickets it names.
func TestQueueFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := review.NewReader(b.tx, ledger.Native())
	mail := queueTicket(t, b, "q-mail", "onboarding", "mailer", false)  // owner U0WORKFLOW
	sms := queueTicket(t, b, "q-sms", "billing", "sms", true)           // owner U0SMS, multiple_matches
	other := queueTicket(t, b, "q-other", "billing", "pushy", false)    // owner U0DEFAULT
	done := queueTicket(t, b, "q-resolved", "billing", "mailer", false) // owner U0PROVIDER
	if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET escalation_level = 1, deadline = now() - interval '1 minute'
		WHERE id = $1`, sms.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: done.ID, Outcome: review.ResolutionNotSent, By: "slack:U0ANNA"}); err != nil {
		t.Fatal(err)
	}
	one := 1
	now := time.Now()
	for _, tc := range []struct {
		desc string
		f    review.QueueFilter
		want []int64
	}{
		{desc: "every open ticket", f: review.QueueFilter{}, want: []int64{sms.ID, mail.ID, other.ID}},
		{desc: "provider", f: review.QueueFilter{Provider: "mailer"}, want: []int64{mail.ID}},
		{desc: "workflow", f: review.QueueFilter{Workflow: "billing"}, want: []int64{sms.ID, other.ID}},
		{desc: "reason", f: review.QueueFilter{Reason: string(proof.ReasonMultipleMatches)}, want: []int64{sms.ID}},
		{desc: "owner (mine)", f: review.QueueFilter{Owner: "U0DEFAULT"}, want: []int64{other.ID}},
		{desc: "level", f: review.QueueFilter{Level: &one}, want: []int64{sms.ID}},
		{desc: "overdue", f: review.QueueFilter{Overdue: true}, want: []int64{sms.ID}},
		// One transaction opened them all: one creation time, the bounds
		// inclusive after and exclusive before.
		{desc: "opened before", f: review.QueueFilter{OpenedBefore: mail.CreatedAt}, want: nil},
		{desc: "opened before, just after", f: review.QueueFilter{OpenedBefore: mail.CreatedAt.Add(time.Microsecond)}, want: []int64{sms.ID, mail.ID, other.ID}},
		{desc: "opened after", f: review.QueueFilter{OpenedAfter: mail.CreatedAt, Sort: review.SortAge}, want: []int64{mail.ID, sms.ID, other.ID}},
		{desc: "opened after, just after", f: review.QueueFilter{OpenedAfter: mail.CreatedAt.Add(time.Microsecond)}, want: nil},
		{desc: "by age, ties by id", f: review.QueueFilter{Sort: review.SortAge}, want: []int64{mail.ID, sms.ID, other.ID}},
		{desc: "resolved", f: review.QueueFilter{Resolved: true}, want: []int64{done.ID}},
		{desc: "resolved, searched by who", f: review.QueueFilter{Resolved: true, Search: "U0ANNA"}, want: []int64{done.ID}},
		{desc: "resolved, searched by op_key prefix", f: review.QueueFilter{Resolved: true, Search: "q-res"}, want: []int64{done.ID}},
		{desc: "resolved, searched by id", f: review.QueueFilter{Resolved: true, Search: fmt.Sprint(done.ID)}, want: []int64{done.ID}},
		{desc: "resolved, a search that matches none", f: review.QueueFilter{Resolved: true, Search: "q-mail"}, want: nil},
		{desc: "a LIKE wildcard is a character", f: review.QueueFilter{Resolved: true, Search: "q_res"}, want: nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			page, err := r.Queue(b.ctx, tc.f, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, queueIDs(page), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			ids, total, err := r.QueueIDs(b.ctx, tc.f, now, 100)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids, cmpopts.EquateEmpty()); diff != "" || total != len(tc.want) {
				t.Errorf("QueueIDs = %v (total %d), want %v", ids, total, tc.want)
			}
		})
	}

	counts, total, err := r.QueueCounts(b.ctx, review.QueueFilter{}, now)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range counts {
		got[c.Facet+"="+c.Value] = c.Count
	}
	want := map[string]int{"provider=mailer": 1, "provider=sms": 1, "provider=pushy": 1, "workflow=onboarding": 1, "workflow=billing": 2,
		"reason=not_found": 2, "reason=multiple_matches": 1, "owner=U0WORKFLOW": 1, "owner=U0SMS": 1, "owner=U0DEFAULT": 1,
		"level=0": 2, "level=1": 1}
	if diff := cmp.Diff(want, got); diff != "" || total != 3 {
		t.Errorf("counts (-want +got):\n%s\ntotal %d, want 3", diff, total)
	}

	if _, err := r.Queue(b.ctx, review.QueueFilter{Sort: "random"}, now); !errors.Is(err, review.ErrInvalidRequest) {
		t.Errorf("unknown sort: %v, want ErrInvalidRequest", err)
	}
	if _, err := r.Queue(b.ctx, review.QueueFilter{After: "1.2.3"}, now); !errors.Is(err, review.ErrBadCursor) {
		t.Errorf("another order's cursor: %v, want ErrBadCursor", err)
	}
}

// TestQueuePagesStayCorrectWhileTicketsResolve: walking the queue page by
// page, in every order, while the tickets already shown — and some not yet
// shown — are resolved between pages, shows every ticket still open exactly
// once and in order.
func TestQueuePagesStayCorrectWhileTicketsResolve(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var all []review.Ticket
	for i := range 23 {
		all = append(all, queueTicket(t, b, fmt.Sprintf("page-%02d", i), "wf", "mailer", false))
	}
	// Ties on purpose: the id breaks them. Some tickets have exhausted
	// their escalation: the deadline order merges two indexes.
	if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET deadline = date_trunc('hour', deadline) + (id % 4) * interval '1 minute',
			priority = (ARRAY['low','normal','high','urgent'])[1 + id % 4], escalation_exhausted = (id % 3 = 0)`); err != nil {
		t.Fatal(err)
	}
	for _, sort := range review.QueueSorts {
		t.Run(sort, func(t *testing.T) {
			tx, err := b.tx.Begin(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background()) //nolint:errcheck
			store, r := review.NewStore(tx, ledger.Native(), testPolicy), review.NewReader(tx, ledger.Native())
			f := review.QueueFilter{Sort: sort, Limit: 5}
			full, err := r.Queue(b.ctx, review.QueueFilter{Sort: sort, Limit: 500}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var seen []int64
			resolved := map[int64]bool{}
			for {
				page, err := r.Queue(b.ctx, f, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Items {
					if resolved[it.ID] {
						t.Errorf("ticket %d shown after it was resolved", it.ID)
					}
					seen = append(seen, it.ID)
				}
				// Resolve the first ticket shown on this page and one
				// further down the queue, not shown yet.
				for _, id := range []int64{page.Items[0].ID, all[(len(seen)*7)%len(all)].ID} {
					if slices.Contains(seen, id) && id != page.Items[0].ID || resolved[id] {
						continue
					}
					if _, err := store.Resolve(b.ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent, By: "U0A"}); err != nil {
						t.Fatal(err)
					}
					resolved[id] = true
				}
				if page.Next == "" {
					break
				}
				f.After = page.Next
			}
			var want []int64
			for _, it := range full.Items {
				if slices.Contains(seen, it.ID) || !resolved[it.ID] {
					want = append(want, it.ID)
				}
			}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
}
