package hubspot_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/hubspot"
	"github.com/sweeper/sweeper/providers/providertest"
)

var query = providers.Query{
	OpKey: opKey, Recipient: recipient, Action: "create_contact",
	FirstAttemptAt: firstAttempt, Since: firstAttempt.Add(-15 * time.Minute), Until: firstAttempt.Add(time.Hour),
}

// newAdapter builds a hubspot adapter against srv, for object, edited by set.
func newAdapter(t *testing.T, srvURL, object string, set ...func(*hubspot.Config)) *hubspot.Adapter {
	t.Helper()
	cfg := hubspot.Kind.NewSettings().(*hubspot.Config)
	cfg.AccessTokenEnv, cfg.APIBase, cfg.Object = "HUBSPOT_TOKEN", srvURL, object
	for _, s := range set {
		s(cfg)
	}
	cfg.ApplyDefaults()
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Fatalf("config: %v", errs)
	}
	a, err := hubspot.New("crm", cfg, providertest.Env(nil, "HUBSPOT_TOKEN", token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func unique(c *hubspot.Config) { c.UniqueProperty = true }

func lookup(t *testing.T, a *hubspot.Adapter, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	records, err := a.Lookup(t.Context(), q)
	if err != nil {
		for _, hidden := range []string{token, recipient} {
			if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(hidden)) {
				t.Errorf("error names %q: %v", hidden, err)
			}
		}
	}
	return records, err
}

// TestFindsTheContact: by the search and by the unique property's read, the
// contact holding the op_key is one record with its id, date, email as
// recipient, and the payload hash of {"email": …}; nothing but the search
// and GETs reach HubSpot.
func TestFindsTheContact(t *testing.T) {
	t.Parallel()
	wantHash, err := ledger.PayloadHashOf(map[string]any{"email": recipient})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		set      []func(*hubspot.Config)
		searches int64
		reads    int64
	}{
		{"search", nil, 1, 0},
		{"unique property", []func(*hubspot.Config){unique}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := newFake(t, "contacts", contact("501", opKey), contact("502", "another-op"))
			a := newAdapter(t, srv.URL, "contacts", tc.set...)
			records, err := lookup(t, a, query)
			if err != nil {
				t.Fatal(err)
			}
			if len(records) != 1 {
				t.Fatalf("records %+v, want one", records)
			}
			r := records[0]
			if r.ID != "501" || !r.CreatedAt.Equal(firstAttempt.Add(2*time.Second)) || r.Recipient != recipient ||
				r.PayloadHash != wantHash || r.State != providers.StateEffect || r.Status != "live" {
				t.Errorf("record %+v", r)
			}
			if strings.Contains(r.Excerpt, recipient) || strings.Contains(r.Excerpt, "Ada") {
				t.Errorf("excerpt %q shows personal data", r.Excerpt)
			}
			if f.searches.Load() != tc.searches || f.reads.Load() != tc.reads || f.writes.Load() != 0 {
				t.Errorf("searches %d, reads %d, writes %d; want %d, %d, 0", f.searches.Load(), f.reads.Load(), f.writes.Load(), tc.searches, tc.reads)
			}
		})
	}
}

// TestNotFound: no record is zero records, not an error — by the search's
// empty page and by HubSpot's OBJECT_NOT_FOUND 404 to the read; a 404 that
// is not HubSpot's (a wrong api_base) is a permanent error, never none.
func TestNotFound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  []func(*hubspot.Config)
	}{{"search", nil}, {"unique property", []func(*hubspot.Config){unique}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, srv := newFake(t, "deals", crmRecord{ID: "7", Props: map[string]string{"op_key": "other", "dealname": "x"}, Created: firstAttempt})
			records, err := lookup(t, newAdapter(t, srv.URL, "deals", tc.set...), query)
			if err != nil || len(records) != 0 {
				t.Errorf("Lookup = %v, %v; want zero records", records, err)
			}
		})
	}
	t.Run("404 not HubSpot's", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "404 page not found", http.StatusNotFound) })
		_, err := lookup(t, newAdapter(t, srv.URL, "contacts", unique), query)
		if class, _ := providers.Classify(err); class != providers.ClassPermanent {
			t.Errorf("Lookup error %v (%s), want permanent", err, class)
		}
	})
}

// TestUniqueReadEscapesTheKey: an op_key with a slash, a space or a
// question mark is one path segment of the read, and is found.
func TestUniqueReadEscapesTheKey(t *testing.T) {
	t.Parallel()
	key := "order/42 ?x=1#frag"
	f, srv := newFake(t, "contacts", contact("9", key))
	q := query
	q.OpKey = key
	records, err := lookup(t, newAdapter(t, srv.URL, "contacts", unique), q)
	if err != nil || len(records) != 1 || records[0].ID != "9" {
		t.Errorf("Lookup = %+v, %v", records, err)
	}
	if f.reads.Load() != 1 {
		t.Errorf("reads %d", f.reads.Load())
	}
	q.OpKey = ".."
	if _, err := lookup(t, newAdapter(t, srv.URL, "contacts", unique), q); err == nil {
		t.Error(`op_key ".." read as a path, want an error`)
	}
}

// TestStates: a live record is the effect; an archived one (should a
// search list it) is reversed and carries no payload hash.
func TestStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		archived bool
		state    providers.State
		status   string
		hashed   bool
	}{
		{false, providers.StateEffect, "live", true},
		{true, providers.StateReversed, "archived", false},
	} {
		rec := contact("77", opKey)
		rec.Archived = tc.archived
		f, srv := newFake(t, "contacts", rec)
		f.ShowArchived = true
		records, err := lookup(t, newAdapter(t, srv.URL, "contacts"), query)
		if err != nil || len(records) != 1 {
			t.Fatalf("archived %v: Lookup = %+v, %v", tc.archived, records, err)
		}
		r := records[0]
		if r.State != tc.state || r.Status != tc.status || (r.PayloadHash != "") != tc.hashed || r.Effect() != (tc.state == providers.StateEffect) {
			t.Errorf("archived %v: record %+v", tc.archived, r)
		}
	}
}

// TestPages: short pages are followed by paging.next.after to the end; a
// repeated cursor, a last page short of total, a page longer than asked, a
// total past 10,000 or more pages than the bound are errors, never a
// partial answer.
func TestPages(t *testing.T) {
	t.Parallel()
	t.Run("short pages", func(t *testing.T) {
		t.Parallel()
		var recs []crmRecord
		for i := range 7 {
			recs = append(recs, contact(strings.Repeat("1", i+1), opKey))
		}
		f, srv := newFake(t, "contacts", recs...)
		f.PageSize = 2
		records, err := lookup(t, newAdapter(t, srv.URL, "contacts"), query)
		if err != nil || len(records) != 7 {
			t.Fatalf("Lookup = %d records, %v; want 7", len(records), err)
		}
		if f.searches.Load() != 4 {
			t.Errorf("%d searches, want 4 pages", f.searches.Load())
		}
	})
	hit := `{"id":"5","properties":{"op_key":"` + opKey + `","email":"a@example.com"},"createdAt":"2026-03-10T14:00:02.000Z","updatedAt":"2026-03-10T14:00:02.000Z","archived":false}`
	for _, tc := range []struct {
		name  string
		page  func(after string) string
		class providers.Class
	}{
		{"cursor repeats", func(string) string {
			return `{"total":3,"results":[` + hit + `],"paging":{"next":{"after":"1","link":"x"}}}`
		}, providers.ClassTransient},
		{"total beyond the pages", func(string) string { return `{"total":2,"results":[` + hit + `]}` }, providers.ClassTransient},
		{"next without after", func(string) string {
			return `{"total":2,"results":[` + hit + `],"paging":{"next":{"link":"x"}}}`
		}, providers.ClassTransient},
		{"paging.prev not followed", func(string) string {
			return `{"total":1,"results":[` + hit + `],"paging":{"prev":{"before":"0"}}}`
		}, providers.ClassTransient},
		{"over 10000", func(string) string { return `{"total":10001,"results":[` + hit + `]}` }, providers.ClassPermanent},
		{"endless pages", func(after string) string {
			return `{"total":5000,"results":[` + hit + `],"paging":{"next":{"after":"` + after + `x"}}}`
		}, providers.ClassPermanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := newFake(t, "contacts")
			f.Page = func(after string) []byte { return []byte(tc.page(after)) }
			records, err := lookup(t, newAdapter(t, srv.URL, "contacts"), query)
			if class, _ := providers.Classify(err); err == nil || class != tc.class {
				t.Errorf("Lookup = %v, %v; want a %s error", records, err, tc.class)
			}
		})
	}
}

// TestMalformed: a 200 that is not a search page is an error, never none.
func TestMalformed(t *testing.T) {
	t.Parallel()
	rec := func(s string) string { return `{"total":1,"results":[` + s + `]}` }
	for name, body := range map[string]string{
		"null":                  `null`,
		"empty object":          `{}`,
		"no results":            `{"total":0}`,
		"results null":          `{"total":0,"results":null}`,
		"results twice":         `{"total":0,"results":[],"results":[{"id":"1"}]}`,
		"case variant":          `{"total":0,"results":[],"Results":[]}`,
		"unknown top-level key": `{"total":0,"results":[],"hasMore":true}`,
		"negative total":        `{"total":-1,"results":[]}`,
		"trailing data":         `{"total":0,"results":[]} {}`,
		"id not numeric":        rec(`{"id":"abc","properties":{"op_key":"` + opKey + `"},"createdAt":"2026-03-10T14:00:02Z","updatedAt":"2026-03-10T14:00:02Z","archived":false}`),
		"no archived":           rec(`{"id":"1","properties":{"op_key":"` + opKey + `"},"createdAt":"2026-03-10T14:00:02Z","updatedAt":"2026-03-10T14:00:02Z"}`),
		"property a number":     rec(`{"id":"1","properties":{"op_key":5},"createdAt":"2026-03-10T14:00:02Z","updatedAt":"2026-03-10T14:00:02Z","archived":false}`),
		"op_key twice":          rec(`{"id":"1","properties":{"op_key":"x","op_key":"` + opKey + `"},"createdAt":"2026-03-10T14:00:02Z","updatedAt":"2026-03-10T14:00:02Z","archived":false}`),
		"createdAt no zone":     rec(`{"id":"1","properties":{"op_key":"` + opKey + `"},"createdAt":"2026-03-10T14:00:02","updatedAt":"2026-03-10T14:00:02Z","archived":false}`),
		"unknown record key":    rec(`{"id":"1","properties":{"op_key":"` + opKey + `"},"createdAt":"2026-03-10T14:00:02Z","updatedAt":"2026-03-10T14:00:02Z","archived":false,"deleted":true}`),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, srv := newFake(t, "contacts")
			f.Page = func(string) []byte { return []byte(body) }
			records, err := lookup(t, newAdapter(t, srv.URL, "contacts"), query)
			if class, _ := providers.Classify(err); err == nil || class != providers.ClassTransient {
				t.Errorf("Lookup = %v, %v; want a transient error", records, err)
			}
		})
	}
}

// TestRateLimited: a 429 with Retry-After is rate limited for that delay,
// for the search and for the read.
func TestRateLimited(t *testing.T) {
	t.Parallel()
	for _, set := range [][]func(*hubspot.Config){nil, {unique}} {
		f, srv := newFake(t, "contacts", contact("1", opKey))
		f.RateLimit.Store(1)
		a := newAdapter(t, srv.URL, "contacts", set...)
		_, err := lookup(t, a, query)
		if class, wait := providers.Classify(err); class != providers.ClassRateLimited || wait != 3*time.Second {
			t.Errorf("Lookup error %v: %s for %v, want rate limited for 3s", err, class, wait)
		}
		if records, err := lookup(t, a, query); err != nil || len(records) != 1 {
			t.Errorf("after the wait: %v, %v", records, err)
		}
	}
}

// TestLaggingSearch: the search index shows a created contact only later
// (the 409 race: an empty search, then "Contact already exists"). The
// first lookup is zero records — which the kind's settle_window keeps from
// being not_found — and a later one finds it.
func TestLaggingSearch(t *testing.T) {
	t.Parallel()
	if hubspot.Kind.SettleWindow < time.Minute {
		t.Fatalf("settle window %v: an empty search would be final at once", hubspot.Kind.SettleWindow)
	}
	rec := contact("3", opKey)
	rec.VisibleAfter = 1
	_, srv := newFake(t, "contacts", rec)
	a := newAdapter(t, srv.URL, "contacts")
	if records, err := lookup(t, a, query); err != nil || len(records) != 0 {
		t.Fatalf("first lookup = %v, %v; want none yet", records, err)
	}
	if records, err := lookup(t, a, query); err != nil || len(records) != 1 || records[0].ID != "3" {
		t.Fatalf("second lookup = %v, %v; want the contact", records, err)
	}
}

// TestOneRecordOneOperation: HubSpot's EQ may match in another letter
// case; a record holding another op_key is never this operation's, and a
// read answering for another value is an error, not a record.
func TestOneRecordOneOperation(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "contacts", contact("11", "WF-42-CREATE-CONTACT"))
	f.Loose = true
	a := newAdapter(t, srv.URL, "contacts")
	records, err := lookup(t, a, query)
	if err != nil || len(records) != 0 {
		t.Errorf("lookup of %q = %v, %v; want none", opKey, records, err)
	}
	q := query
	q.OpKey = "WF-42-CREATE-CONTACT"
	if records, err := lookup(t, a, q); err != nil || len(records) != 1 {
		t.Errorf("lookup of its own key = %v, %v", records, err)
	}

	other := contact("12", "another-op")
	srv2 := newServer(t, func(w http.ResponseWriter, r *http.Request) { (&fakeHubSpot{}).write(w, other) })
	if _, err := lookup(t, newAdapter(t, srv2.URL, "contacts", unique), query); !errors.Is(err, providers.ErrMalformed) {
		t.Errorf("a read answering another record: %v, want malformed", err)
	}
}

// TestOnlyReads: the adapter's client refuses HubSpot's writes before they
// leave — a create, an update, a delete, a batch, another object's search
// — and nothing the lookups sent was one.
func TestOnlyReads(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "contacts")
	a := newAdapter(t, srv.URL, "contacts")
	client := hubspot.HTTPClientForTest(a)
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/crm/v3/objects/contacts"},
		{http.MethodPost, "/crm/v3/objects/contacts/batch/create"},
		{http.MethodPost, "/crm/v3/objects/contacts/batch/upsert"},
		{http.MethodPatch, "/crm/v3/objects/contacts/1"},
		{http.MethodDelete, "/crm/v3/objects/contacts/1"},
		{http.MethodPost, "/crm/v3/objects/deals/search"},
		{http.MethodPost, "/crm/v3/objects/contacts/search/"},
	} {
		req, err := http.NewRequestWithContext(t.Context(), r.method, "https://api.hubapi.com"+r.path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("%s %s was sent", r.method, r.path)
		}
	}
	if _, err := lookup(t, a, query); err != nil {
		t.Fatal(err)
	}
	if f.writes.Load() != 0 {
		t.Errorf("%d writes reached HubSpot", f.writes.Load())
	}
}

// TestErrors: 401 and 403 are permanent, 5xx transient; neither the token
// nor the recipient HubSpot's message quotes shows.
func TestErrors(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]providers.Class{401: providers.ClassPermanent, 403: providers.ClassPermanent, 500: providers.ClassTransient, 502: providers.ClassTransient} {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { errorAnswer(w, status, "SOMETHING") })
		for _, set := range [][]func(*hubspot.Config){nil, {unique}} {
			_, err := lookup(t, newAdapter(t, srv.URL, "notes", set...), query)
			if class, _ := providers.Classify(err); class != want {
				t.Errorf("HTTP %d: %v (%s), want %s", status, err, class, want)
			}
		}
	}
}

// TestPayloadProperties: the hash is of exactly the configured properties,
// as HubSpot returns them; a record missing one carries no hash.
func TestPayloadProperties(t *testing.T) {
	t.Parallel()
	deal := crmRecord{ID: "8", Props: map[string]string{"op_key": opKey, "dealname": "Acme renewal", "amount": "1500"}, Created: firstAttempt}
	_, srv := newFake(t, "deals", deal)
	want, _ := ledger.PayloadHashOf(map[string]any{"dealname": "Acme renewal", "amount": "1500"})
	records, err := lookup(t, newAdapter(t, srv.URL, "deals", func(c *hubspot.Config) { c.PayloadProperties = []string{"dealname", "amount"} }), query)
	if err != nil || len(records) != 1 || records[0].PayloadHash != want || records[0].Recipient != "" {
		t.Errorf("Lookup = %+v, %v", records, err)
	}
	records, err = lookup(t, newAdapter(t, srv.URL, "deals", func(c *hubspot.Config) { c.PayloadProperties = []string{"dealname", "closedate"} }), query)
	if err != nil || len(records) != 1 || records[0].PayloadHash != "" {
		t.Errorf("a property missing: %+v, %v; want no hash", records, err)
	}
}
