package xero_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/xero"
)

var query = providers.Query{
	OpKey: opKey, Recipient: recipient, Action: "send_invoice",
	FirstAttemptAt: firstAttempt, Since: firstAttempt.Add(-15 * time.Minute), Until: firstAttempt.Add(time.Hour),
}

func newAdapter(t *testing.T, srvURL string) *xero.Adapter {
	t.Helper()
	cfg := xero.Kind.NewSettings().(*xero.Config)
	cfg.AccessTokenEnv, cfg.APIBase, cfg.TenantID = "XERO_TOKEN", srvURL, tenant
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Fatalf("config: %v", errs)
	}
	a, err := xero.New("books", cfg, providertest.Env(nil, "XERO_TOKEN", token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func lookup(t *testing.T, a *xero.Adapter, q providers.Query) ([]providers.Record, error) {
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

// TestFindsTheInvoice: the invoice whose Reference is the op_key is one
// record with its id, date, contact email, state and the hash of its total
// and currency; another op's invoice is not; only GETs reach Xero.
func TestFindsTheInvoice(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, invoiceN(1, opKey, "AUTHORISED"), invoiceN(2, "another-op", "AUTHORISED"))
	records, err := lookup(t, newAdapter(t, srv.URL), query)
	if err != nil {
		t.Fatal(err)
	}
	wantHash, err := ledger.PayloadHashOf(map[string]any{"total": "115", "currency": "NZD"})
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 {
		t.Fatalf("records %+v, want one", records)
	}
	r := records[0]
	if r.ID != invoiceN(1, "", "").ID || !r.CreatedAt.Equal(firstAttempt.Add(2*time.Second)) || r.Recipient != recipient ||
		r.State != providers.StateEffect || r.Status != "authorised" || r.PayloadHash != wantHash {
		t.Errorf("record %+v", r)
	}
	if strings.Contains(r.Excerpt, recipient) || strings.Contains(r.Excerpt, "Ada") {
		t.Errorf("excerpt %q shows personal data", r.Excerpt)
	}
	if f.writes.Load() != 0 || f.pages.Load() != 1 {
		t.Errorf("writes %d, pages %d; want 0, 1", f.writes.Load(), f.pages.Load())
	}
}

// TestNotFound: no invoice is zero records, not an error.
func TestNotFound(t *testing.T) {
	t.Parallel()
	_, srv := newFake(t, invoiceN(1, "other", "PAID"))
	if records, err := lookup(t, newAdapter(t, srv.URL), query); err != nil || len(records) != 0 {
		t.Errorf("Lookup = %v, %v; want zero records", records, err)
	}
}

// TestStates: each documented status reads as its state; only AUTHORISED
// and PAID are the effect; an undocumented status is malformed, never
// none.
func TestStates(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]providers.State{
		"DRAFT": providers.StateInFlight, "SUBMITTED": providers.StateInFlight,
		"AUTHORISED": providers.StateEffect, "PAID": providers.StateEffect,
		"VOIDED": providers.StateFailed, "DELETED": providers.StateFailed,
	} {
		_, srv := newFake(t, invoiceN(1, opKey, status))
		records, err := lookup(t, newAdapter(t, srv.URL), query)
		if err != nil || len(records) != 1 || records[0].State != want || records[0].Status != strings.ToLower(status) {
			t.Errorf("%s: Lookup = %+v, %v; want one %s record", status, records, err, want)
		}
		if err == nil && len(records) == 1 && want != providers.StateEffect && records[0].PayloadHash != "" {
			t.Errorf("%s: a payload hash on a record that is not the effect", status)
		}
	}
	_, srv := newFake(t, invoiceN(1, opKey, "ARCHIVED"))
	if records, err := lookup(t, newAdapter(t, srv.URL), query); !providers.Unreadable(err) {
		t.Errorf("ARCHIVED: Lookup = %v, %v; want a malformed answer", records, err)
	}
}

// TestPagination: a full page of 100 is followed by the next; a short page
// ends the reading. 150 invoices under the op_key are 150 records over two
// pages.
func TestPagination(t *testing.T) {
	t.Parallel()
	var invs []inv
	for n := range 150 {
		invs = append(invs, invoiceN(n+1, opKey, "DRAFT"))
	}
	f, srv := newFake(t, invs...)
	records, err := lookup(t, newAdapter(t, srv.URL), query)
	if err != nil || len(records) != 150 {
		t.Fatalf("Lookup = %d records, %v; want 150", len(records), err)
	}
	if f.pages.Load() != 2 {
		t.Errorf("pages asked %d, want 2", f.pages.Load())
	}
	// Exactly 100: the full page asks for an empty second page.
	f2, srv2 := newFake(t, invs[:100]...)
	if records, err := lookup(t, newAdapter(t, srv2.URL), query); err != nil || len(records) != 100 || f2.pages.Load() != 2 {
		t.Errorf("100 invoices: %d records, %v, %d pages; want 100, nil, 2", len(records), err, f2.pages.Load())
	}
}

// TestRateLimits: a 429 for the minute or concurrency limit is rate
// limited for Xero's Retry-After; one for the day is the provider's outage
// until Xero's Retry-After, however many hours (providers.OutUntil: a
// transient error for this operation, the provider down at once for
// everyone), never rate limited or permanent.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		problem string
		class   providers.Class
		wait    time.Duration
	}{
		{"minute", providers.ClassRateLimited, 7 * time.Second},
		{"concurrent", providers.ClassRateLimited, time.Second},
		{"day", providers.ClassTransient, 0},
	} {
		f, srv := newFake(t, invoiceN(1, opKey, "PAID"))
		f.limitNext(tc.problem)
		_, err := lookup(t, newAdapter(t, srv.URL), query)
		class, wait := providers.Classify(err)
		if class != tc.class || wait != tc.wait || providers.Unreadable(err) {
			t.Errorf("%s: %v (%s, %s); want %s, %s", tc.problem, err, class, wait, tc.class, tc.wait)
		}
		until, out := providers.OutUntilOf(err)
		if tc.problem != "day" {
			if out {
				t.Errorf("%s: the provider out until %s; want only this request limited", tc.problem, until)
			}
			continue
		}
		if !strings.Contains(err.Error(), "daily") {
			t.Errorf("day: %v does not say the daily limit", err)
		}
		// Retry-After: 36000, ten hours: not cut to the hour a 429's wait
		// is held to, but the time the whole provider is out.
		if want := time.Now().Add(10 * time.Hour); !out || until.Before(want.Add(-time.Minute)) || until.After(want.Add(time.Minute)) {
			t.Errorf("day: out until %s (%v); want the provider out until about %s", until, out, want)
		}
	}
}

// TestOneRecordNeverProvesTwo: an invoice holds one op_key in its
// Reference; the lookup of another op_key — even one Xero's filter
// matches in another letter case — never returns it.
func TestOneRecordNeverProvesTwo(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, invoiceN(1, opKey, "AUTHORISED"))
	f.Loose = true
	a := newAdapter(t, srv.URL)
	q := query
	q.OpKey = strings.ToUpper(opKey)
	if records, err := lookup(t, a, q); err != nil || len(records) != 0 {
		t.Errorf("other op_key: Lookup = %v, %v; want none", records, err)
	}
	q.OpKey = opKey
	if records, err := lookup(t, a, q); err != nil || len(records) != 1 {
		t.Errorf("own op_key: Lookup = %v, %v; want one", records, err)
	}
}

// TestNoWrites: the adapter's client refuses every method but GET before
// it reaches Xero, and a lookup sends GETs only.
func TestNoWrites(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, invoiceN(1, opKey, "PAID"))
	a := newAdapter(t, srv.URL)
	if _, err := lookup(t, a, query); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RecordNamespace(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, err := http.NewRequestWithContext(t.Context(), m, "https://api.xero.com/api.xro/2.0/Invoices", bytes.NewReader([]byte(`{"Invoices":[]}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := xero.HTTPClientForTest(a).Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body) //nolint:errcheck // drained
			resp.Body.Close()
			t.Errorf("%s was sent", m)
		}
	}
	if f.writes.Load() != 0 {
		t.Errorf("writes %d, want 0", f.writes.Load())
	}
}

// TestStrictAnswers: an answer with an unknown top-level key, a key twice
// or in two letter cases, no Invoices array, a page of more than 100, an
// invoice without an id, or an undated invoice is malformed, never none.
func TestStrictAnswers(t *testing.T) {
	t.Parallel()
	good := `{"InvoiceID":"243216c5-369e-4056-ac67-000000000001","Reference":"` + opKey + `","Status":"PAID","UpdatedDateUTC":"/Date(1773151202000+0000)/"}`
	for _, body := range []string{
		`{"Invoices":[],"NextPage":2}`,
		`{"Invoices":[],"Invoices":[` + good + `]}`,
		`{"Invoices":[],"invoices":[` + good + `]}`,
		`{"Invoices":[` + good + `],"pagination":{"page":1,"pageCount":2,"cursor":"x"}}`,
		`{"Status":"OK"}`,
		`{"Invoices":null}`,
		`{"Invoices":[{"Reference":"` + opKey + `","Status":"PAID","UpdatedDateUTC":"/Date(1773151202000)/"}]}`,
		`{"Invoices":[{"InvoiceID":"243216c5-369e-4056-ac67-000000000001","Reference":"` + opKey + `","Status":"PAID","UpdatedDateUTC":"2026-03-10"}]}`,
		`{"Invoices":[{"InvoiceID":"243216c5-369e-4056-ac67-000000000001","Reference":"` + opKey + `","Status":"PAID","Status":"DRAFT","UpdatedDateUTC":"/Date(1773151202000)/"}]}`,
		`{"Invoices":[]} {}`,
		`<html>502</html>`,
	} {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) }) //nolint:errcheck // a test's answer
		if records, err := lookup(t, newAdapter(t, srv.URL), query); !providers.Unreadable(err) {
			t.Errorf("%s: Lookup = %v, %v; want a malformed answer", body, records, err)
		}
	}
	full := `{"Invoices":[` + strings.Repeat(good+",", 100) + good + `]}`
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(full)) }) //nolint:errcheck // a test's answer
	if _, err := lookup(t, newAdapter(t, srv.URL), query); !providers.Unreadable(err) {
		t.Errorf("101 invoices on a page: %v; want a malformed answer", err)
	}
	// Xero's documented top-level keys, and a pagination it documents, are read.
	ok := `{"Id":"x","Status":"OK","ProviderName":"p","DateTimeUTC":"/Date(1773151200000)/","Invoices":[` + good + `],"pagination":{"page":1,"pageSize":100,"pageCount":1,"itemCount":1}}`
	srv = newServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(ok)) }) //nolint:errcheck // a test's answer
	if records, err := lookup(t, newAdapter(t, srv.URL), query); err != nil || len(records) != 1 {
		t.Errorf("documented answer: Lookup = %v, %v; want one record", records, err)
	}
}

// TestErrors: a 401 is permanent and names neither token nor recipient; a
// 5xx is transient; an op_key that cannot be quoted in the filter is
// permanent without a request.
func TestErrors(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]providers.Class{401: providers.ClassPermanent, 403: providers.ClassPermanent, 503: providers.ClassTransient} {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { xeroError(w, status, "E") })
		_, err := lookup(t, newAdapter(t, srv.URL), query)
		if class, _ := providers.Classify(err); class != want {
			t.Errorf("%d: %v (%s), want %s", status, err, class, want)
		}
	}
	f, srv := newFake(t)
	q := query
	q.OpKey = `wf-"42"`
	if _, err := lookup(t, newAdapter(t, srv.URL), q); err == nil || f.pages.Load() != 0 {
		t.Errorf("quoted op_key: %v, %d pages asked", err, f.pages.Load())
	} else if class, _ := providers.Classify(err); class != providers.ClassPermanent {
		t.Errorf("quoted op_key: %s, want permanent", class)
	}
}
