package quickbooks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/quickbooks"
)

var t0 = time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)

// TestInvoiceStates: a live invoice is the effect, a voided one (Id kept,
// amounts zeroed, "Voided" in the note) a failed attempt; a zero invoice
// without the note, or a note saying "Voided" beside an amount, is live.
func TestInvoiceStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		body   string
		want   providers.State
		status string
	}{
		{"live", string(answer(1, inv{ID: "101", DocNumber: "op-1", Total: 120, Created: t0})), providers.StateEffect, "live"},
		{"voided", string(answer(1, inv{ID: "101", DocNumber: "op-1", Total: 120, Voided: true, Created: t0})), providers.StateFailed, "voided"},
		{"zero, no note", `{"QueryResponse":{"Invoice":[{"Id":"101","DocNumber":"op-1","TotalAmt":0,"Balance":0,"MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}],"startPosition":1,"maxResults":1},"time":"x"}`, providers.StateEffect, "live"},
		{"note Voided, amount kept", `{"QueryResponse":{"Invoice":[{"Id":"101","DocNumber":"op-1","TotalAmt":5,"Balance":5,"PrivateNote":"Voided","MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}],"startPosition":1,"maxResults":1},"time":"x"}`, providers.StateEffect, "live"},
	} {
		srv := serve(t, tc.body)
		records, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
		if err != nil || len(records) != 1 || records[0].State != tc.want || records[0].Status != tc.status || records[0].ID != "101" || records[0].CreatedAt.IsZero() {
			t.Errorf("%s: Lookup = %+v, %v; want one %s record", tc.desc, records, err, tc.want)
		}
	}
}

// TestRecordFields: the record carries the Id, the creation time in UTC
// and the bill email; none is the empty answer.
func TestRecordFields(t *testing.T) {
	t.Parallel()
	_, srv := newCompany(t, inv{ID: "1045", DocNumber: "op-1", Total: 99.5, Email: "ap@acme.example", Created: t0})
	a := adapter(t, srv)
	records, err := a.Lookup(context.Background(), query("op-1"))
	if err != nil || len(records) != 1 || records[0].ID != "1045" || !records[0].CreatedAt.Equal(t0) || records[0].Recipient != "ap@acme.example" {
		t.Fatalf("Lookup = %+v, %v", records, err)
	}
	if records, err := a.Lookup(context.Background(), query("op-2")); err != nil || len(records) != 0 {
		t.Errorf("not found: %+v, %v", records, err)
	}
}

// TestPagination: full pages are followed at the next STARTPOSITION until
// a short or empty one.
func TestPagination(t *testing.T) {
	t.Parallel()
	for _, n := range []int{7, 6} { // 7: a short last page; 6: an empty one
		var invoices []inv
		for i := range n {
			invoices = append(invoices, inv{ID: string(rune('1' + i)), DocNumber: "op-1", Total: 1, Created: t0})
		}
		c, srv := newCompany(t, invoices...)
		a := adapter(t, srv)
		quickbooks.SetPageSizeForTest(a, 2)
		records, err := a.Lookup(context.Background(), query("op-1"))
		if err != nil || len(records) != n {
			t.Fatalf("%d invoices: Lookup = %d records, %v", n, len(records), err)
		}
		if got := c.gets.Load(); got != 4 {
			t.Errorf("%d invoices: %d GETs; want 4", n, got)
		}
	}
}

// TestPaginationMalformed: a page that does not start where asked, a
// maxResults that is not its count, unknown keys, or full pages without
// end are malformed, never the records read so far.
func TestPaginationMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ desc, body string }{
		{"another start", `{"QueryResponse":{"Invoice":[],"startPosition":3,"maxResults":0},"time":"x"}`},
		{"maxResults not the count", `{"QueryResponse":{"Invoice":[{"Id":"1"}],"startPosition":1,"maxResults":2},"time":"x"}`},
		{"no startPosition", `{"QueryResponse":{"Invoice":[],"maxResults":0},"time":"x"}`},
		{"no Invoice", `{"QueryResponse":{"startPosition":1,"maxResults":0},"time":"x"}`},
		{"unknown key in QueryResponse", `{"QueryResponse":{"Invoice":[],"startPosition":1,"maxResults":0,"nextLink":"x"},"time":"x"}`},
		{"unknown top-level key", `{"QueryResponse":{},"time":"x","more":true}`},
		{"no QueryResponse", `{"time":"x"}`},
		{"QueryResponse null", `{"QueryResponse":null,"time":"x"}`},
	} {
		if _, err := quickbooks.DecodeAnswerForTest([]byte(tc.body), 1); err == nil {
			t.Errorf("%s: decoded", tc.desc)
		}
	}
	c, srv := newCompany(t)
	c.ignoreFilter = true
	for i := range 30 {
		c.invoices = append(c.invoices, inv{ID: string(rune('A' + i)), DocNumber: "op-1", Total: 1, Created: t0})
	}
	a := adapter(t, srv)
	quickbooks.SetPageSizeForTest(a, 1)
	if records, err := a.Lookup(context.Background(), query("op-1")); err == nil || !strings.Contains(err.Error(), "still full pages after 10") {
		t.Fatalf("Lookup = %d records, %v; want malformed past 10 pages", len(records), err)
	}
}

// TestStrictDecoding: the kit's hostile bodies one level down — the
// Invoice array twice or in another case, a record's key twice or in
// another case — are malformed, never records or none.
func TestStrictDecoding(t *testing.T) {
	t.Parallel()
	rec := `{"Id":"101","DocNumber":"op-1","TotalAmt":5,"Balance":5,"MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}`
	for _, tc := range []struct{ desc, body string }{
		{"Invoice twice: none, then the record", `{"QueryResponse":{"Invoice":[],"Invoice":[` + rec + `],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"Invoice twice: the record, then none", `{"QueryResponse":{"Invoice":[` + rec + `],"Invoice":[],"startPosition":1,"maxResults":0},"time":"x"}`},
		{"invoice in lower case", `{"QueryResponse":{"invoice":[` + rec + `],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"QueryResponse twice", `{"QueryResponse":{},"QueryResponse":{"Invoice":[` + rec + `],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"queryResponse in lower case", `{"QueryResponse":{},"queryResponse":{"Invoice":[` + rec + `],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"DocNumber twice", `{"QueryResponse":{"Invoice":[{"Id":"101","DocNumber":"op-2","DocNumber":"op-1","TotalAmt":5,"Balance":5,"MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"TotalAmt in another case", `{"QueryResponse":{"Invoice":[{"Id":"101","DocNumber":"op-1","TotalAmt":0,"totalamt":5,"Balance":0,"PrivateNote":"Voided","MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"no Balance", `{"QueryResponse":{"Invoice":[{"Id":"101","DocNumber":"op-1","TotalAmt":0,"PrivateNote":"Voided","MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"no CreateTime", `{"QueryResponse":{"Invoice":[{"Id":"101","DocNumber":"op-1","TotalAmt":5,"Balance":5}],"startPosition":1,"maxResults":1},"time":"x"}`},
		{"two invoices under one Id", `{"QueryResponse":{"Invoice":[` + rec + `,{"Id":"101","DocNumber":"op-1","TotalAmt":0,"Balance":0,"PrivateNote":"Voided","MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}],"startPosition":1,"maxResults":2},"time":"x"}`},
	} {
		srv := serve(t, tc.body)
		records, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
		if !errors.Is(err, providers.ErrMalformed) {
			t.Errorf("%s: Lookup = %+v, %v; want malformed", tc.desc, records, err)
		}
	}
}

// TestQuoting: a quote in the op_key is escaped, so the query's literal is
// exactly the op_key and an injection finds nothing but its own DocNumber;
// what cannot be a DocNumber or quoted safely is a permanent error naming
// why, and no request.
func TestQuoting(t *testing.T) {
	t.Parallel()
	c, srv := newCompany(t, inv{ID: "1", DocNumber: "op-1", Total: 1, Created: t0}, inv{ID: "2", DocNumber: "o'brien-7", Total: 1, Created: t0})
	a := adapter(t, srv)
	for _, key := range []string{"x' OR DocNumber > '", "' OR ''='", "op-1'--", `op-1\'`} {
		records, err := a.Lookup(context.Background(), query(key))
		if strings.Contains(key, `\`) {
			if class, _ := providers.Classify(err); class != providers.ClassPermanent || !strings.Contains(err.Error(), "backslash") {
				t.Errorf("%q: %v; want permanent naming the backslash", key, err)
			}
			continue
		}
		if err != nil || len(records) != 0 {
			t.Errorf("%q: Lookup = %+v, %v; want none", key, records, err)
		}
	}
	if records, err := a.Lookup(context.Background(), query("o'brien-7")); err != nil || len(records) != 1 || records[0].ID != "2" {
		t.Errorf("o'brien-7: %+v, %v", records, err)
	}
	c.mu.Lock()
	want := []string{"x' OR DocNumber > '", "' OR ''='", "op-1'--", "o'brien-7"}
	if strings.Join(c.literals, "|") != strings.Join(want, "|") {
		t.Errorf("the fake read the literals %q; want %q", c.literals, want)
	}
	c.mu.Unlock()
	for _, tc := range []struct{ key, why string }{
		{"op-2026-12-04-000000001", "longer than the 21 characters"},
		{"op\n1", "control character"},
		{"op\xff", "UTF-8"},
	} {
		before := c.gets.Load()
		_, err := a.Lookup(context.Background(), query(tc.key))
		if class, _ := providers.Classify(err); class != providers.ClassPermanent || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%q: %v; want permanent naming %q", tc.key, err, tc.why)
		}
		if c.gets.Load() != before {
			t.Errorf("%q: a request was sent", tc.key)
		}
	}
	if _, err := quickbooks.QuoteLiteral("ééééééééééééééééééééé"); err != nil {
		t.Errorf("21 characters (42 bytes): %v", err)
	}
}

// TestOneRecordNeverProvesTwo: an invoice of op-1 is never a record of
// op-2, even when the query returns it (the filter is no proof).
func TestOneRecordNeverProvesTwo(t *testing.T) {
	t.Parallel()
	c, srv := newCompany(t, inv{ID: "1", DocNumber: "op-1", Total: 1, Created: t0}, inv{ID: "2", DocNumber: "OP-2", Total: 1, Created: t0})
	c.ignoreFilter = true
	a := adapter(t, srv)
	if records, err := a.Lookup(context.Background(), query("op-2")); err != nil || len(records) != 0 {
		t.Errorf("op-2: %+v, %v; want none", records, err)
	}
	if records, err := a.Lookup(context.Background(), query("op-1")); err != nil || len(records) != 1 || records[0].ID != "1" {
		t.Errorf("op-1: %+v, %v; want invoice 1", records, err)
	}
}

// TestRateLimited: 429 is rate limited, for Retry-After's delay or a
// minute without it.
func TestRateLimited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{{"7", 7 * time.Second}, {"-", time.Minute}} {
		c, srv := newCompany(t)
		c.limited = tc.header
		_, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
		class, wait := providers.Classify(err)
		if class != providers.ClassRateLimited || wait != tc.want {
			t.Errorf("Retry-After %s: %s %v (%v); want rate limited for %v", tc.header, class, wait, err, tc.want)
		}
	}
}

// TestUnauthorized: a refused token is permanent and never quoted.
func TestUnauthorized(t *testing.T) {
	t.Parallel()
	_, srv := newCompany(t)
	cfg := &quickbooks.Config{RealmID: realmID, AccessTokenEnv: "T", APIBase: srv.URL}
	a, err := quickbooks.New("invoices", cfg, envWith("T", "expired-token-SECRET"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = a.Lookup(context.Background(), query("op-1"))
	if class, _ := providers.Classify(err); class != providers.ClassPermanent || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("Lookup error %v (%s); want permanent, no token", err, class)
	}
}

// TestNoWrites: lookups and the namespace send only GETs; the client
// refuses a POST to the invoice endpoint.
func TestNoWrites(t *testing.T) {
	t.Parallel()
	c, srv := newCompany(t, inv{ID: "1", DocNumber: "op-1", Total: 1, Created: t0})
	a := adapter(t, srv)
	for range 3 {
		if _, err := a.Lookup(context.Background(), query("op-1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.RecordNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v3/company/"+realmID+"/invoice", strings.NewReader(`{"Line":[]}`))
	if resp, err := quickbooks.HTTPClientForTest(a).Do(req); err == nil {
		resp.Body.Close()
		t.Error("the client sent a POST to invoice")
	}
	if c.writes.Load() != 0 || c.gets.Load() != 4 {
		t.Errorf("%d writes, %d GETs; want 0 and 4", c.writes.Load(), c.gets.Load())
	}
}

// serve answers every request with 200 and body.
func serve(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.Write([]byte(body)) //nolint:errcheck // the test reads what arrives
	}))
	t.Cleanup(srv.Close)
	return srv
}

func envWith(name, value string) providers.Env { return providertest.Env(nil, name, value) }

// TestLaggingQuery: an invoice not yet returned by the query is none (no
// records, not_found within settle_window), and the later re-lookup finds
// it.
func TestLaggingQuery(t *testing.T) {
	t.Parallel()
	c, srv := newCompany(t)
	a := adapter(t, srv)
	if records, err := a.Lookup(context.Background(), query("op-1")); err != nil || len(records) != 0 {
		t.Fatalf("before: %+v, %v; want none", records, err)
	}
	c.mu.Lock()
	c.invoices = append(c.invoices, inv{ID: "7", DocNumber: "op-1", Total: 1, Created: t0})
	c.mu.Unlock()
	if records, err := a.Lookup(context.Background(), query("op-1")); err != nil || len(records) != 1 || records[0].State != providers.StateEffect {
		t.Errorf("after: %+v, %v; want the invoice", records, err)
	}
	if quickbooks.Kind.SettleWindow != 5*time.Minute {
		t.Errorf("settle window %v", quickbooks.Kind.SettleWindow)
	}
}
