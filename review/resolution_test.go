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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// openTicket claims key, looks it up with outcome out and returns the
// ticket that opened.
func openTicket(t *testing.T, store *review.Store, db ledger.DB, key string, out proof.Outcome) review.Ticket {
	t.Helper()
	ctx, now := context.Background(), time.Now().UTC().Truncate(time.Microsecond)
	op := claim(t, db, key, "onboarding", "mailer")
	d, ev := decided(op, out, now)
	applied, err := store.Apply(ctx, op, d, ev, now)
	if err != nil {
		t.Fatal(err)
	}
	if applied.TicketID == 0 {
		t.Fatalf("Apply(%s) = %+v, want a ticket", key, applied)
	}
	tk, err := store.Get(ctx, applied.TicketID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// threeRecords is a lookup that found three matching records.
var threeRecords = proof.Answered(providers.Query{}, []providers.Record{{ID: "rec_a"}, {ID: "rec_b"}, {ID: "rec_c"}})

// events returns a ticket's audit trail, failing the test on error.
func events(t *testing.T, store *review.Store, ticketID int64) []review.Event {
	t.Helper()
	evs, err := store.Events(context.Background(), ticketID)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func dedupeKeys(t *testing.T, db ledger.DB, ticketID int64) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT dedupe_key FROM sweeper.ticket_events WHERE ticket_id = $1 ORDER BY id`, ticketID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// resolvedDetails mirrors the "resolved" event's details.
type resolvedDetails struct {
	Outcome          string        `json:"outcome"`
	ProviderRecordID string        `json:"provider_record_id"`
	Note             string        `json:"note"`
	Duplicates       []string      `json:"duplicates"`
	LedgerStatus     ledger.Status `json:"ledger_status"`
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc       string
		found      proof.Outcome
		resolution review.Resolution // TicketID is filled in
		wantStatus ledger.Status
		wantRecord string
		wantDups   []string
	}{
		{desc: "done names the record", found: proof.Answered(providers.Query{}, nil),
			resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: "msg_late", By: "U0ALICE",
				Note: "found it in the provider's dashboard"},
			wantStatus: ledger.StatusDone, wantRecord: "msg_late", wantDups: []string{}},
		{desc: "not_sent fails the row", found: proof.Failed("HTTP 503"),
			resolution: review.Resolution{Outcome: review.ResolutionNotSent, By: "U0BOB"},
			wantStatus: ledger.StatusFailed, wantDups: []string{}},
		{desc: "duplicate keeps the picked record and lists the others", found: threeRecords,
			resolution: review.Resolution{Outcome: review.ResolutionDuplicate, ProviderRecordID: "rec_b", By: "U0CAROL",
				Note: "rec_b went out first", ExpectVersion: 1, ConfirmDiffers: true},
			wantStatus: ledger.StatusDone, wantRecord: "rec_b", wantDups: []string{"rec_a", "rec_c"}},
		{desc: "duplicate keeping the first record", found: threeRecords,
			resolution: review.Resolution{Outcome: review.ResolutionDuplicate, ProviderRecordID: "rec_a", By: "U0CAROL", ConfirmDiffers: true},
			wantStatus: ledger.StatusDone, wantRecord: "rec_a", wantDups: []string{"rec_b", "rec_c"}},
		{desc: "space around the actor and the note is trimmed", found: proof.Answered(providers.Query{}, nil),
			resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: "msg_1", By: " U0DAVE ",
				Note: "  "},
			wantStatus: ledger.StatusDone, wantRecord: "msg_1", wantDups: []string{}},
		{desc: "a record id is kept as written", found: proof.Answered(providers.Query{}, nil),
			resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: "rec T/é<1>", By: "U0DAVE"},
			wantStatus: ledger.StatusDone, wantRecord: "rec T/é<1>", wantDups: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tk := openTicket(t, b.store, b.tx, "resolve", tt.found)
			r := tt.resolution
			r.TicketID = tk.ID
			got, err := b.store.Resolve(b.ctx, r)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}

			by, note := strings.TrimSpace(r.By), strings.TrimSpace(r.Note)
			want := tk
			want.State, want.Resolution, want.ResolvedBy = review.StateResolved, r.Outcome, by
			want.ResolutionNote, want.ResolutionRecordID, want.Version = note, tt.wantRecord, tk.Version+1
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(review.Ticket{}, "UpdatedAt", "ResolvedAt")); diff != "" {
				t.Errorf("resolved ticket mismatch (-want +got):\n%s", diff)
			}
			if got.ResolvedAt == nil || got.ResolvedAt.IsZero() {
				t.Errorf("resolved_at = %v, want set", got.ResolvedAt)
			}
			if stored, err := b.store.Get(b.ctx, tk.ID); err != nil || !cmp.Equal(stored, got) {
				t.Errorf("Get after Resolve = %+v, %v; want what Resolve returned: %+v", stored, err, got)
			}

			op := getOp(t, b.tx, tk.OperationID)
			if op.Status != tt.wantStatus || op.ProviderRecordID != tt.wantRecord {
				t.Errorf("ledger row is %s with record %q, want %s with %q", op.Status, op.ProviderRecordID, tt.wantStatus, tt.wantRecord)
			}

			evs := events(t, b.store, tk.ID)
			if len(evs) != 2 {
				t.Fatalf("%d events, want opened and resolved: %+v", len(evs), evs)
			}
			e := evs[1]
			if e.Kind != review.EventResolved || e.Actor != by {
				t.Errorf("event = %s by %s, want %s by %s", e.Kind, e.Actor, review.EventResolved, by)
			}
			var details resolvedDetails
			if err := json.Unmarshal(e.Details, &details); err != nil {
				t.Fatalf("details %s: %v", e.Details, err)
			}
			wantDetails := resolvedDetails{Outcome: r.Outcome, ProviderRecordID: tt.wantRecord, Note: note,
				Duplicates: tt.wantDups, LedgerStatus: tt.wantStatus}
			if diff := cmp.Diff(wantDetails, details); diff != "" {
				t.Errorf("event details mismatch (-want +got):\n%s", diff)
			}
			wantKeys := []string{fmt.Sprintf("ticket:%d:opened", tk.ID), fmt.Sprintf("ticket:%d:resolved", tk.ID)}
			if diff := cmp.Diff(wantKeys, dedupeKeys(t, b.tx, tk.ID)); diff != "" {
				t.Errorf("dedupe keys mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveRefused tries decisions that must change nothing: the ticket,
// the ledger row and the audit trail are as they were.
func TestResolveRefused(t *testing.T) {
	t.Parallel()
	done := func(id int64) review.Resolution {
		return review.Resolution{TicketID: id, Outcome: review.ResolutionDone, ProviderRecordID: "rec_1", By: "U0ALICE", ConfirmDiffers: true}
	}
	tests := []struct {
		desc string
		// before runs first, on the open ticket; what it changes is kept.
		before func(t *testing.T, b *testBundle, tk review.Ticket)
		// resolution is tried next.
		resolution func(tk review.Ticket) review.Resolution
		wantErr    error
		// wantTicketState and wantStatus are the ticket's state and the
		// ledger row's status after both.
		wantTicketState string
		wantStatus      ledger.Status
	}{
		{desc: "resolve twice",
			before: func(t *testing.T, b *testBundle, tk review.Ticket) {
				if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionNotSent, By: "U0BOB"}); err != nil {
					t.Fatal(err)
				}
			},
			resolution: func(tk review.Ticket) review.Resolution { return done(tk.ID) },
			wantErr:    review.ErrAlreadyHandled, wantTicketState: review.StateResolved, wantStatus: ledger.StatusFailed},
		{desc: "the same resolution replayed",
			before: func(t *testing.T, b *testBundle, tk review.Ticket) {
				if _, err := b.store.Resolve(b.ctx, done(tk.ID)); err != nil {
					t.Fatal(err)
				}
			},
			resolution: func(tk review.Ticket) review.Resolution { return done(tk.ID) },
			wantErr:    review.ErrAlreadyHandled, wantTicketState: review.StateResolved, wantStatus: ledger.StatusDone},
		{desc: "stale version",
			before: func(t *testing.T, b *testBundle, tk review.Ticket) {
				if _, err := b.store.Acknowledge(b.ctx, tk.ID, "U0BOB", 0); err != nil {
					t.Fatal(err)
				}
			},
			resolution: func(tk review.Ticket) review.Resolution {
				r := done(tk.ID)
				r.ExpectVersion = tk.Version // as shown before the acknowledgement
				return r
			},
			wantErr: review.ErrAlreadyHandled, wantTicketState: review.StateOpen, wantStatus: ledger.StatusReview},
		{desc: "the ledger row left review",
			before: func(t *testing.T, b *testBundle, tk review.Ticket) {
				// The workflow's late confirmation, written by hand.
				if ok, err := b.ledger.CompareAndSet(b.ctx, tk.OperationID, ledger.StatusReview, ledger.StatusDone, "wf_rec"); err != nil || !ok {
					t.Fatalf("CompareAndSet = %v, %v", ok, err)
				}
			},
			resolution: func(tk review.Ticket) review.Resolution {
				return review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionNotSent, By: "U0ALICE"}
			},
			wantErr: review.ErrNotInReview, wantTicketState: review.StateOpen, wantStatus: ledger.StatusDone},
		{desc: "duplicate naming a record the evidence lacks",
			resolution: func(tk review.Ticket) review.Resolution {
				return review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionDuplicate, ProviderRecordID: "rec_z", By: "U0A"}
			},
			wantErr: review.ErrInvalidRequest, wantTicketState: review.StateOpen, wantStatus: ledger.StatusReview},
		{desc: "a record another operation holds",
			before: func(t *testing.T, b *testBundle, tk review.Ticket) {
				other := claim(t, b.tx, "holder", "onboarding", "mailer")
				if _, err := b.ledger.Confirm(b.ctx, other.OpKey, "rec_held"); err != nil {
					t.Fatal(err)
				}
			},
			resolution: func(tk review.Ticket) review.Resolution {
				return review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionDone, ProviderRecordID: "rec_held", By: "U0A", ConfirmDiffers: true}
			},
			wantErr: ledger.ErrRecordHeld, wantTicketState: review.StateOpen, wantStatus: ledger.StatusReview},
		{desc: "a record of a multiple_matches ticket, unconfirmed",
			resolution: func(tk review.Ticket) review.Resolution {
				return review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionDone, ProviderRecordID: "rec_b", By: "U0A"}
			},
			wantErr: review.ErrNeedsConfirmation, wantTicketState: review.StateOpen, wantStatus: ledger.StatusReview},
		{desc: "a duplicate of a multiple_matches ticket, unconfirmed",
			resolution: func(tk review.Ticket) review.Resolution {
				return review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionDuplicate, ProviderRecordID: "rec_a", By: "U0A"}
			},
			wantErr: review.ErrNeedsConfirmation, wantTicketState: review.StateOpen, wantStatus: ledger.StatusReview},
		{desc: "unknown ticket",
			resolution: func(tk review.Ticket) review.Resolution { return done(tk.ID + 1000) },
			wantErr:    review.ErrTicketNotFound, wantTicketState: review.StateOpen, wantStatus: ledger.StatusReview},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tk := openTicket(t, b.store, b.tx, "refused", threeRecords)
			if tt.before != nil {
				tt.before(t, b, tk)
			}
			before, err := b.store.Get(b.ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			eventsBefore := events(t, b.store, tk.ID)
			opBefore := getOp(t, b.tx, tk.OperationID)

			_, err = b.store.Resolve(b.ctx, tt.resolution(tk))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve: err = %v, want %v", err, tt.wantErr)
			}
			var handled *review.HandledError
			if errors.Is(tt.wantErr, review.ErrAlreadyHandled) && (!errors.As(err, &handled) || handled.Ticket.ID != tk.ID) {
				t.Errorf("err = %#v, want a *HandledError for ticket %d", err, tk.ID)
			}
			var stateErr *ledger.StateError
			if errors.Is(tt.wantErr, review.ErrNotInReview) && (!errors.As(err, &stateErr) || stateErr.Got != tt.wantStatus) {
				t.Errorf("err = %v, want a *ledger.StateError finding %s", err, tt.wantStatus)
			}

			after, err := b.store.Get(b.ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("the refused resolution changed the ticket (-before +after):\n%s", diff)
			}
			if after.State != tt.wantTicketState {
				t.Errorf("ticket is %s, want %s", after.State, tt.wantTicketState)
			}
			if diff := cmp.Diff(eventsBefore, events(t, b.store, tk.ID)); diff != "" {
				t.Errorf("the refused resolution changed the audit trail (-before +after):\n%s", diff)
			}
			opAfter := getOp(t, b.tx, tk.OperationID)
			if diff := cmp.Diff(opBefore, opAfter); diff != "" || opAfter.Status != tt.wantStatus {
				t.Errorf("ledger row is %s, want %s; changed (-before +after):\n%s", opAfter.Status, tt.wantStatus, diff)
			}
		})
	}
}

func TestResolveInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc       string
		resolution review.Resolution // TicketID 0 is replaced by the ticket's
		wantField  string            // named in the error
		// wantBadRecord: the error matches ledger.ErrBadRecordID too.
		wantBadRecord bool
	}{
		{desc: "done without a record id", resolution: review.Resolution{Outcome: review.ResolutionDone, By: "U0A"},
			wantField: "provider_record_id: required for outcome done"},
		{desc: "done with a blank record id", resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: " ", By: "U0A"},
			wantField: "provider_record_id: required"},
		{desc: "a record id with a space after it", resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: "rec-T ", By: "U0A"},
			wantField: "provider_record_id: malformed provider record id: has white space around it", wantBadRecord: true},
		{desc: "a record id with a newline before it", resolution: review.Resolution{Outcome: review.ResolutionDuplicate, ProviderRecordID: "\nrec-T", By: "U0A"},
			wantField: "provider_record_id: malformed provider record id", wantBadRecord: true},
		{desc: "a record id of 6000 characters", resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: strings.Repeat("r", 6000), By: "U0A"},
			wantField: "provider_record_id: malformed provider record id: 6000 bytes, more than 512", wantBadRecord: true},
		{desc: "a record id of 513 bytes", resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: strings.Repeat("é", 256) + "r", By: "U0A"},
			wantField: "513 bytes, more than 512", wantBadRecord: true},
		{desc: "a record id with a control character", resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: "rec\x1b[31m", By: "U0A"},
			wantField: "provider_record_id: malformed provider record id: holds a control character", wantBadRecord: true},
		{desc: "a record id with NUL", resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: "rec\x00", By: "U0A"},
			wantField: "provider_record_id: ", wantBadRecord: true},
		{desc: "a record id not in NFC", resolution: review.Resolution{Outcome: review.ResolutionDone, ProviderRecordID: "cafe\u0301", By: "U0A"},
			wantField: "provider_record_id: malformed provider record id: not in Unicode NFC form", wantBadRecord: true},
		{desc: "not_sent with a blank record id", resolution: review.Resolution{Outcome: review.ResolutionNotSent, ProviderRecordID: " ", By: "U0A"},
			wantField: "provider_record_id: not_sent"},
		{desc: "duplicate without a record id", resolution: review.Resolution{Outcome: review.ResolutionDuplicate, By: "U0A"},
			wantField: "provider_record_id: required for outcome duplicate"},
		{desc: "not_sent with a record id", resolution: review.Resolution{Outcome: review.ResolutionNotSent, ProviderRecordID: "r", By: "U0A"},
			wantField: "provider_record_id: not_sent"},
		{desc: "unknown outcome", resolution: review.Resolution{Outcome: "sent", ProviderRecordID: "r", By: "U0A"},
			wantField: `outcome: must be done, not_sent, duplicate, not "sent"`},
		{desc: "no outcome", resolution: review.Resolution{By: "U0A"}, wantField: "outcome:"},
		{desc: "no by", resolution: review.Resolution{Outcome: review.ResolutionNotSent}, wantField: "by: required"},
		{desc: "blank by", resolution: review.Resolution{Outcome: review.ResolutionNotSent, By: " \t"}, wantField: "by: required"},
		{desc: "by too long", resolution: review.Resolution{Outcome: review.ResolutionNotSent, By: strings.Repeat("é", 201)},
			wantField: "by: longer than 200 characters"},
		{desc: "note too long", resolution: review.Resolution{Outcome: review.ResolutionNotSent, By: "U0A", Note: strings.Repeat("x", 2001)},
			wantField: "note: longer than 2000 characters"},
		{desc: "note with NUL", resolution: review.Resolution{Outcome: review.ResolutionNotSent, By: "U0A", Note: "a\x00b"},
			wantField: "note: must be UTF-8 text without NUL"},
		{desc: "negative version", resolution: review.Resolution{Outcome: review.ResolutionNotSent, By: "U0A", ExpectVersion: -1},
			wantField: "expect_version"},
		{desc: "no ticket id", resolution: review.Resolution{TicketID: -1, Outcome: review.ResolutionNotSent, By: "U0A"},
			wantField: "ticket_id: must be a positive number"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tk := openTicket(t, b.store, b.tx, "invalid", proof.Answered(providers.Query{}, nil))
			r := tt.resolution
			if r.TicketID == 0 {
				r.TicketID = tk.ID
			}
			_, err := b.store.Resolve(b.ctx, r)
			if !errors.Is(err, review.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("Resolve: err = %v, want ErrInvalidRequest naming %q", err, tt.wantField)
			}
			if errors.Is(err, ledger.ErrBadRecordID) != tt.wantBadRecord {
				t.Errorf("Resolve: err = %v; matches ledger.ErrBadRecordID: %t, want %t", err, !tt.wantBadRecord, tt.wantBadRecord)
			}
			after, err := b.store.Get(b.ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tk, after); diff != "" {
				t.Errorf("an invalid resolution changed the ticket (-before +after):\n%s", diff)
			}
			if op := getOp(t, b.tx, tk.OperationID); op.Status != ledger.StatusReview || op.ProviderRecordID != "" {
				t.Errorf("ledger row is %s with record %q, want review without one", op.Status, op.ProviderRecordID)
			}
			if _, n := ticketCounts(t, b.tx, tk.OperationID); n != 1 {
				t.Errorf("%d events, want only the opened one", n)
			}
		})
	}
}

// TestResolveConcurrent: ten people click at once, with different
// outcomes; exactly one decision takes effect, and the ledger follows it.
func TestResolveConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	store := review.NewStore(pool, ledger.Native(), testPolicy)
	tk := openTicket(t, store, pool, "concurrent", threeRecords)

	const clicks = 10
	resolutions := make([]review.Resolution, clicks)
	for i := range resolutions {
		r := review.Resolution{TicketID: tk.ID, By: fmt.Sprintf("U0P%d", i), ExpectVersion: tk.Version, ConfirmDiffers: true}
		switch i % 3 {
		case 0:
			r.Outcome, r.ProviderRecordID = review.ResolutionDone, "rec_a"
		case 1:
			r.Outcome = review.ResolutionNotSent
		case 2:
			r.Outcome, r.ProviderRecordID = review.ResolutionDuplicate, "rec_c"
		}
		resolutions[i] = r
	}
	errs := make([]error, clicks)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clicks {
		wg.Go(func() {
			<-start
			_, errs[i] = store.Resolve(ctx, resolutions[i])
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("both %d and %d succeeded", winner, i)
			}
			winner = i
		case !errors.Is(err, review.ErrAlreadyHandled):
			t.Errorf("click %d: err = %v, want ErrAlreadyHandled", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no resolution succeeded: %v", errs)
	}
	w := resolutions[winner]
	got, err := store.Get(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != review.StateResolved || got.Resolution != w.Outcome || got.ResolvedBy != w.By || got.Version != tk.Version+1 {
		t.Errorf("ticket = %s/%s by %s at version %d, want resolved/%s by %s at version %d",
			got.State, got.Resolution, got.ResolvedBy, got.Version, w.Outcome, w.By, tk.Version+1)
	}
	wantStatus := ledger.StatusDone
	if w.Outcome == review.ResolutionNotSent {
		wantStatus = ledger.StatusFailed
	}
	if op := getOp(t, pool, tk.OperationID); op.Status != wantStatus || op.ProviderRecordID != w.ProviderRecordID {
		t.Errorf("ledger row is %s with %q, want %s with %q", op.Status, op.ProviderRecordID, wantStatus, w.ProviderRecordID)
	}
	if _, n := ticketCounts(t, pool, tk.OperationID); n != 2 {
		t.Errorf("%d events, want opened and one resolved", n)
	}
}

func TestAcknowledge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := openTicket(t, b.store, b.tx, "ack", proof.Answered(providers.Query{}, nil))

	acked, err := b.store.Acknowledge(b.ctx, tk.ID, " U0ALICE ", tk.Version)
	if err != nil {
		t.Fatalf("Acknowledge: %v", err)
	}
	zero := 0
	want := tk
	want.AcknowledgedBy, want.AcknowledgedLevel, want.Version = "U0ALICE", &zero, tk.Version+1
	if diff := cmp.Diff(want, acked, cmpopts.IgnoreFields(review.Ticket{}, "UpdatedAt", "AcknowledgedAt")); diff != "" {
		t.Errorf("acknowledged ticket mismatch (-want +got):\n%s", diff)
	}
	if acked.AcknowledgedAt == nil || acked.AcknowledgedAt.IsZero() {
		t.Errorf("acknowledged_at = %v, want set", acked.AcknowledgedAt)
	}
	if !acked.Deadline.Equal(tk.Deadline) {
		t.Errorf("deadline moved from %v to %v; an acknowledgement must keep it", tk.Deadline, acked.Deadline)
	}
	evs := events(t, b.store, tk.ID)
	if len(evs) != 2 || evs[1].Kind != review.EventAcknowledged || evs[1].Actor != "U0ALICE" {
		t.Fatalf("events = %+v, want opened then acknowledged by U0ALICE", evs)
	}
	var details map[string]any
	if err := json.Unmarshal(evs[1].Details, &details); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"level": 0.0, "owner": tk.Owner, "priority": tk.Priority}, details); diff != "" {
		t.Errorf("event details mismatch (-want +got):\n%s", diff)
	}

	// Twice at one level, by anyone, with or without a version: nothing.
	for _, again := range []struct {
		desc    string
		by      string
		version int
	}{
		{desc: "same person", by: "U0ALICE"},
		{desc: "someone else", by: "U0BOB"},
		{desc: "at the current version", by: "U0BOB", version: acked.Version},
	} {
		_, err := b.store.Acknowledge(b.ctx, tk.ID, again.by, again.version)
		var handled *review.HandledError
		if !errors.As(err, &handled) || !errors.Is(err, review.ErrAlreadyHandled) || !strings.Contains(handled.Why, "U0ALICE") {
			t.Errorf("%s: second Acknowledge: err = %v, want ErrAlreadyHandled naming U0ALICE", again.desc, err)
		}
	}
	if got, err := b.store.Get(b.ctx, tk.ID); err != nil || !cmp.Equal(acked, got) {
		t.Errorf("a repeated acknowledgement changed the ticket: %+v, %v", got, err)
	}

	// Escalated to the next level, the ticket can be taken again.
	if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET escalation_level = 1, owner = 'U0NEXT' WHERE id = $1`, tk.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Acknowledge(b.ctx, tk.ID, "U0NEXT", acked.Version); err != nil {
		t.Fatalf("Acknowledge at level 1: %v", err)
	}
	wantKeys := []string{fmt.Sprintf("ticket:%d:opened", tk.ID), fmt.Sprintf("ticket:%d:acknowledged:0", tk.ID),
		fmt.Sprintf("ticket:%d:acknowledged:1", tk.ID)}
	if diff := cmp.Diff(wantKeys, dedupeKeys(t, b.tx, tk.ID)); diff != "" {
		t.Errorf("dedupe keys mismatch (-want +got):\n%s", diff)
	}

	// Acknowledged, it can still be resolved, at its current version.
	current, err := b.store.Get(b.ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionNotSent,
		By: "U0NEXT", ExpectVersion: current.Version})
	if err != nil {
		t.Fatalf("Resolve after Acknowledge: %v", err)
	}
	if resolved.AcknowledgedBy != "U0NEXT" || *resolved.AcknowledgedLevel != 1 || resolved.State != review.StateResolved {
		t.Errorf("resolved ticket = %+v, want resolved, keeping its acknowledgement", resolved)
	}
}

func TestAcknowledgeRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		before  func(t *testing.T, b *testBundle, tk review.Ticket)
		id      func(tk review.Ticket) int64
		by      string
		version func(tk review.Ticket) int
		wantErr error
	}{
		{desc: "a resolved ticket",
			before: func(t *testing.T, b *testBundle, tk review.Ticket) {
				if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionNotSent, By: "U0A"}); err != nil {
					t.Fatal(err)
				}
			},
			by: "U0B", wantErr: review.ErrAlreadyHandled},
		{desc: "a stale version",
			before: func(t *testing.T, b *testBundle, tk review.Ticket) {
				if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET version = version + 1 WHERE id = $1`, tk.ID); err != nil {
					t.Fatal(err)
				}
			},
			by: "U0B", version: func(tk review.Ticket) int { return tk.Version }, wantErr: review.ErrAlreadyHandled},
		{desc: "an unknown ticket", id: func(tk review.Ticket) int64 { return tk.ID + 1000 }, by: "U0B",
			wantErr: review.ErrTicketNotFound},
		{desc: "nobody", by: "  ", wantErr: review.ErrInvalidRequest},
		{desc: "a name too long", by: strings.Repeat("x", 201), wantErr: review.ErrInvalidRequest},
		{desc: "no ticket id", id: func(review.Ticket) int64 { return 0 }, by: "U0B", wantErr: review.ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tk := openTicket(t, b.store, b.tx, "ack-refused", proof.Answered(providers.Query{}, nil))
			if tt.before != nil {
				tt.before(t, b, tk)
			}
			before, err := b.store.Get(b.ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			_, eventsBefore := ticketCounts(t, b.tx, tk.OperationID)
			id, version := tk.ID, 0
			if tt.id != nil {
				id = tt.id(tk)
			}
			if tt.version != nil {
				version = tt.version(tk)
			}
			if _, err := b.store.Acknowledge(b.ctx, id, tt.by, version); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Acknowledge: err = %v, want %v", err, tt.wantErr)
			}
			after, err := b.store.Get(b.ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("a refused acknowledgement changed the ticket (-before +after):\n%s", diff)
			}
			if _, n := ticketCounts(t, b.tx, tk.OperationID); n != eventsBefore {
				t.Errorf("%d events, want %d", n, eventsBefore)
			}
		})
	}
}

// TestResolutionConstraints writes the new columns with plain SQL, as a
// person with psql could.
func TestResolutionConstraints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc           string
		sql            string // $1 is an open ticket's id
		wantConstraint string // "" when the statement must succeed
	}{
		{desc: "a note on an open ticket", sql: `UPDATE sweeper.tickets SET resolution_note = 'hm' WHERE id = $1`,
			wantConstraint: "tickets_resolution_fields_check"},
		{desc: "a record id on an open ticket", sql: `UPDATE sweeper.tickets SET resolution_record_id = 'r' WHERE id = $1`,
			wantConstraint: "tickets_resolution_fields_check"},
		{desc: "an empty record id", sql: `UPDATE sweeper.tickets SET state = 'resolved', resolution = 'done',
				resolved_at = now(), resolution_record_id = '' WHERE id = $1`,
			wantConstraint: "tickets_resolution_fields_check"},
		{desc: "a note too long", sql: `UPDATE sweeper.tickets SET state = 'resolved', resolution = 'done',
				resolved_at = now(), resolution_note = repeat('x', 2001) WHERE id = $1`,
			wantConstraint: "tickets_resolution_fields_check"},
		{desc: "an acknowledgement without a level", sql: `UPDATE sweeper.tickets SET acknowledged_by = 'U0A',
				acknowledged_at = now() WHERE id = $1`,
			wantConstraint: "tickets_acknowledged_check"},
		{desc: "an acknowledgement without anyone", sql: `UPDATE sweeper.tickets SET acknowledged_at = now(),
				acknowledged_level = 0 WHERE id = $1`,
			wantConstraint: "tickets_acknowledged_check"},
		{desc: "an acknowledgement above the ticket's level", sql: `UPDATE sweeper.tickets SET acknowledged_by = 'U0A',
				acknowledged_at = now(), acknowledged_level = 1 WHERE id = $1`,
			wantConstraint: "tickets_acknowledged_check"},
		{desc: "a resolution outcome outside the three", sql: `UPDATE sweeper.tickets SET state = 'resolved',
				resolution = 'sent', resolved_at = now() WHERE id = $1`,
			wantConstraint: "tickets_resolution_check"},
		// Controls.
		{desc: "a whole acknowledgement", sql: `UPDATE sweeper.tickets SET acknowledged_by = 'U0A',
				acknowledged_at = now(), acknowledged_level = 0 WHERE id = $1`},
		{desc: "a resolution with note and record", sql: `UPDATE sweeper.tickets SET state = 'resolved', resolution = 'done',
				resolved_at = now(), resolution_note = 'ok', resolution_record_id = 'r' WHERE id = $1`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tk := openTicket(t, b.store, b.tx, "constraints", proof.Answered(providers.Query{}, nil))
			tag, err := b.tx.Exec(b.ctx, tt.sql, tk.ID)
			if tt.wantConstraint == "" {
				if err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("rejected: %v (%d rows)", err, tag.RowsAffected())
				}
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.ConstraintName != tt.wantConstraint {
				t.Errorf("err = %v, want a violation of %s", err, tt.wantConstraint)
			}
		})
	}
}

// TestResolveSameRecordConcurrently: two tickets resolved at the same time
// with the same provider record id; one record proves one operation, so
// exactly one resolution takes it.
func TestResolveSameRecordConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	store := review.NewStore(pool, ledger.Native(), testPolicy)
	for round := range 5 {
		a := openTicket(t, store, pool, fmt.Sprintf("same-rec-a-%d", round), threeRecords)
		b := openTicket(t, store, pool, fmt.Sprintf("same-rec-b-%d", round), threeRecords)
		record := fmt.Sprintf("rec_shared_%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, tk := range []review.Ticket{a, b} {
			wg.Go(func() {
				<-start
				_, errs[i] = store.Resolve(ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionDone,
					ProviderRecordID: record, By: "ops", ExpectVersion: tk.Version, ConfirmDiffers: true})
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !errors.Is(err, review.ErrInvalidRequest) {
				t.Errorf("round %d: unexpected error %v", round, err)
			}
		}
		var holders int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM ledger.operations WHERE provider_record_id = $1`, record).Scan(&holders); err != nil {
			t.Fatal(err)
		}
		if ok != 1 || holders != 1 {
			t.Fatalf("round %d: %d resolutions succeeded and %d operations hold %s; want 1 and 1", round, ok, holders, record)
		}
	}
}
