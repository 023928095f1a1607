package gcal_test

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/gcal"
)

var t0 = time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)

// TestEventStates: every status Google documents, read onto the decision's
// state through the fake; an unknown or missing status is malformed.
func TestEventStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status string
		bare   bool
		want   providers.State
		bad    bool
	}{
		{status: "confirmed", want: providers.StateEffect},
		{status: "tentative", want: providers.StateEffect},
		{status: "cancelled", want: providers.StateReversed},
		{status: "cancelled", bare: true, want: providers.StateReversed},
		{status: "Confirmed", bad: true},
		{status: "deleted", bad: true},
	} {
		t.Run(tc.status+map[bool]string{true: " bare"}[tc.bare], func(t *testing.T) {
			t.Parallel()
			_, srv := newCalendar(t, ev{ID: "evt00001", Status: tc.status, OpKey: "op-1", Summary: "Intro", Created: t0, Bare: tc.bare})
			records, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
			if tc.bad {
				if err == nil || !strings.Contains(err.Error(), "malformed") {
					t.Fatalf("Lookup = %+v, %v; want a malformed answer", records, err)
				}
				return
			}
			if err != nil || len(records) != 1 || records[0].State != tc.want || records[0].Status != tc.status {
				t.Fatalf("Lookup = %+v, %v; want one %s record", records, err, tc.want)
			}
			if tc.want == providers.StateEffect && records[0].CreatedAt.IsZero() {
				t.Error("no CreatedAt")
			}
		})
	}
}

// TestNoStatus: an event without a status is malformed.
func TestNoStatus(t *testing.T) {
	t.Parallel()
	srv := tokenAndAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"kind":"calendar#events","items":[{"kind":"calendar#event","id":"evt00001","created":"2026-12-04T09:00:00.000Z",` + //nolint:errcheck // the test reads what arrives
			`"extendedProperties":{"private":{"op_key":"op-1"}}}]}`))
	})
	if records, err := adapter(t, srv).Lookup(context.Background(), query("op-1")); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("Lookup = %+v, %v; want a malformed answer", records, err)
	}
}

// TestRecordFields: the recipient is the attendee matching the query, the
// payload hash covers the summary and the start, and the summary shows
// nowhere else.
func TestRecordFields(t *testing.T) {
	t.Parallel()
	_, srv := newCalendar(t,
		ev{ID: "evt00001", OpKey: "op-1", Summary: "Call with Ada Lovelace", Attendee: "Ada@Example.com", Created: t0},
		ev{ID: "evt00002", OpKey: "op-2", Summary: "Offsite", Created: t0, StartDate: "2026-12-24"})
	a := adapter(t, srv)
	q := query("op-1")
	q.Recipient = "ada@example.com"
	records, err := a.Lookup(context.Background(), q)
	if err != nil || len(records) != 1 {
		t.Fatalf("Lookup = %+v, %v", records, err)
	}
	want, _ := ledger.PayloadHashOf(map[string]string{"summary": "Call with Ada Lovelace", "start": "2026-12-10T10:00:00+01:00"})
	r := records[0]
	if r.Recipient != "Ada@Example.com" || r.PayloadHash != want || r.Fields != nil || strings.Contains(r.Excerpt, "Ada") {
		t.Errorf("record %+v; want recipient Ada@Example.com, hash %s, no fields, no summary", r, want)
	}
	records, err = a.Lookup(context.Background(), query("op-2"))
	want, _ = ledger.PayloadHashOf(map[string]string{"summary": "Offsite", "start": "2026-12-24"})
	if err != nil || len(records) != 1 || records[0].PayloadHash != want {
		t.Errorf("all-day event: %+v, %v; want hash %s", records, err, want)
	}
}

// TestPagination: short pages, pages with no events that still say more,
// followed until nextPageToken is absent; nextSyncToken is no "more".
func TestPagination(t *testing.T) {
	t.Parallel()
	var events []ev
	for i := range 7 {
		events = append(events, ev{ID: "evt0000" + string(rune('a'+i)), OpKey: "op-1", Summary: "s", Created: t0})
	}
	c, srv := newCalendar(t, events...)
	c.perPage, c.emptyPage = 2, 3
	records, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
	if err != nil || len(records) != 7 {
		t.Fatalf("Lookup = %d records, %v; want 7", len(records), err)
	}
	if got := c.gets.Load(); got != 3+4 {
		t.Errorf("%d GETs; want 7 (3 empty pages, 4 short ones)", got)
	}
}

// TestPaginationMalformed: a "more" signal the adapter will not follow is a
// malformed answer, never the records read so far.
func TestPaginationMalformed(t *testing.T) {
	t.Parallel()
	c, srv := newCalendar(t, ev{ID: "evt00001", OpKey: "op-1", Summary: "s", Created: t0})
	c.emptyPage = 25 // past the 20 pages followed
	records, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
	if err == nil || !strings.Contains(err.Error(), "still more pages after 20") {
		t.Fatalf("Lookup = %v, %v; want malformed past 20 pages", records, err)
	}
	if c.gets.Load() != 20 {
		t.Errorf("%d GETs; want 20", c.gets.Load())
	}
	for _, tc := range []struct{ desc, body string }{
		{"empty token", `{"kind":"calendar#events","items":[],"nextPageToken":""}`},
		{"both tokens", `{"kind":"calendar#events","items":[],"nextPageToken":"a","nextSyncToken":"b"}`},
		{"unknown key", `{"kind":"calendar#events","items":[],"nextLink":"x"}`},
		{"no items", `{"kind":"calendar#events"}`},
		{"another kind", `{"kind":"calendar#calendarList","items":[]}`},
	} {
		if _, err := gcal.DecodeListForTest([]byte(tc.body)); err == nil {
			t.Errorf("%s: decoded", tc.desc)
		}
	}
}

// TestRepeatedPageToken: a token answered twice is a loop, malformed.
func TestRepeatedPageToken(t *testing.T) {
	t.Parallel()
	srv := tokenAndAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(listPage("same")) //nolint:errcheck // the test reads what arrives
	})
	_, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
	if err == nil || !strings.Contains(err.Error(), "repeats a nextPageToken") {
		t.Fatalf("Lookup error %v; want a repeated token refused", err)
	}
}

// TestOneRecordNeverProvesTwo: an event carrying op-1 is never a record of
// op-2, even when the search returns it (the filter is no proof).
func TestOneRecordNeverProvesTwo(t *testing.T) {
	t.Parallel()
	c, srv := newCalendar(t, ev{ID: "evt00001", OpKey: "op-1", Summary: "s", Created: t0}, ev{ID: "evt00002", Summary: "no key", Created: t0})
	c.ignoreFilter = true
	a := adapter(t, srv)
	if records, err := a.Lookup(context.Background(), query("op-2")); err != nil || len(records) != 0 {
		t.Errorf("op-2: %+v, %v; want none", records, err)
	}
	if records, err := a.Lookup(context.Background(), query("op-1")); err != nil || len(records) != 1 || records[0].ID != "evt00001" {
		t.Errorf("op-1: %+v, %v; want evt00001", records, err)
	}
}

// TestLaggingSearch: an event not yet listed is not_found (no records),
// and the later re-lookup finds it.
func TestLaggingSearch(t *testing.T) {
	t.Parallel()
	c, srv := newCalendar(t)
	a := adapter(t, srv)
	if records, err := a.Lookup(context.Background(), query("op-1")); err != nil || len(records) != 0 {
		t.Fatalf("first: %+v, %v", records, err)
	}
	c.mu.Lock()
	c.events = append(c.events, ev{ID: "evt00001", OpKey: "op-1", Summary: "s", Created: t0})
	c.mu.Unlock()
	if records, err := a.Lookup(context.Background(), query("op-1")); err != nil || len(records) != 1 {
		t.Fatalf("re-lookup: %+v, %v; want the event", records, err)
	}
}

// TestEventID: the id a workflow derives is base32hex of the op_key's
// SHA-256, lowercase, 52 characters Google accepts.
func TestEventID(t *testing.T) {
	t.Parallel()
	id := gcal.EventID("booking-1042")
	if !regexp.MustCompile(`^[0-9a-v]{52}$`).MatchString(id) {
		t.Fatalf("EventID = %q", id)
	}
	raw, err := base32.HexEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(id))
	sum := sha256.Sum256([]byte("booking-1042"))
	if err != nil || string(raw) != string(sum[:]) {
		t.Errorf("EventID does not decode to the op_key's SHA-256: %v", err)
	}
	if gcal.EventID("booking-1043") == id {
		t.Error("two op_keys, one id")
	}
}

// TestLookupByEventID: with event_id_from_op_key the event is read by its
// derived id (found without properties), 404 falls back to the search, and
// an event both read and listed is one record.
func TestLookupByEventID(t *testing.T) {
	t.Parallel()
	byID := func(c *gcal.Config) { c.EventIDFromOpKey = true }
	id := gcal.EventID("op-1")
	for _, tc := range []struct {
		desc   string
		events []ev
		want   []string
	}{
		{"by id only", []ev{{ID: id, Summary: "s", Created: t0}}, []string{id}},
		{"by id and listed", []ev{{ID: id, OpKey: "op-1", Summary: "s", Created: t0}}, []string{id}},
		{"404, listed", []ev{{ID: "evt00001", OpKey: "op-1", Summary: "s", Created: t0}}, []string{"evt00001"}},
		{"a duplicate beside it", []ev{{ID: id, OpKey: "op-1", Summary: "s", Created: t0}, {ID: "evt00002", OpKey: "op-1", Summary: "s", Created: t0}}, []string{id, "evt00002"}},
		{"none", nil, nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			c, srv := newCalendar(t, tc.events...)
			records, err := adapter(t, srv, byID).Lookup(context.Background(), query("op-1"))
			var got []string
			for _, r := range records {
				got = append(got, r.ID)
			}
			if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("Lookup = %v, %v; want %v", got, err, tc.want)
			}
			if c.gets.Load() != 2 {
				t.Errorf("%d GETs; want 2 (the id, the search)", c.gets.Load())
			}
		})
	}
	t.Run("410 is none", func(t *testing.T) {
		t.Parallel()
		srv := tokenAndAPI(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/events") {
				w.Write(listPage("")) //nolint:errcheck // the test reads what arrives
				return
			}
			googleErr(w, http.StatusGone, "deleted")
		})
		if records, err := adapter(t, srv, byID).Lookup(context.Background(), query("op-1")); err != nil || len(records) != 0 {
			t.Errorf("Lookup = %v, %v; want none", records, err)
		}
	})
}

// TestNoWrites: every lookup, token refreshes included, sends only GETs
// and the token exchange; the API client refuses a POST to events.
func TestNoWrites(t *testing.T) {
	t.Parallel()
	c, srv := newCalendar(t, ev{ID: "evt00001", OpKey: "op-1", Summary: "s", Created: t0})
	a := adapter(t, srv, func(c *gcal.Config) { c.EventIDFromOpKey = true })
	for range 3 {
		if _, err := a.Lookup(context.Background(), query("op-1")); err != nil {
			t.Fatal(err)
		}
		c.revokeAll()
	}
	if _, err := a.RecordNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/calendar/v3/calendars/"+calendarID+"/events", strings.NewReader(`{"summary":"x"}`))
	if resp, err := gcal.HTTPClientForTest(a).Do(req); err == nil {
		resp.Body.Close()
		t.Error("the API client sent a POST to events")
	}
	if c.writes.Load() != 0 || c.tokenPosts.Load() != 4 {
		t.Errorf("%d writes, %d token exchanges; want 0 and 4", c.writes.Load(), c.tokenPosts.Load())
	}
}

// TestEventIDContradicted: an event under the op_key's id whose private
// property names another op_key is no answer, never a record of either.
func TestEventIDContradicted(t *testing.T) {
	t.Parallel()
	_, srv := newCalendar(t, ev{ID: gcal.EventID("op-1"), OpKey: "op-2", Summary: "s", Created: t0})
	records, err := adapter(t, srv, func(c *gcal.Config) { c.EventIDFromOpKey = true }).Lookup(context.Background(), query("op-1"))
	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("Lookup = %+v, %v; want a malformed answer", records, err)
	}
}
