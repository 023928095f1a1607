package xero_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	token     = "xero-at-0b1c2d3e-secret-4f5a"
	tenant    = "70784a63-d24b-46a9-a4db-0e70a274b056"
	recipient = "ada.lovelace+billing@example.com"
	opKey     = "wf-42-send-invoice"
)

var firstAttempt = time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)

// inv is one invoice the fake organisation holds.
type inv struct {
	ID, Number, Reference, Status string
	Updated                       time.Time
}

// json renders i as Xero's Accounting API answers an invoice.
func (i inv) json() map[string]any {
	return map[string]any{
		"Type": "ACCREC", "InvoiceID": i.ID, "InvoiceNumber": i.Number, "Reference": i.Reference,
		"Status": i.Status, "Contact": map[string]any{"ContactID": "5b96e86b-418e-48e8-8949-308c14aec278", "Name": "Ada Lovelace", "EmailAddress": recipient},
		"Total": 115.00, "SubTotal": 100.00, "TotalTax": 15.00, "CurrencyCode": "NZD",
		"Date": "/Date(1573689600000+0000)/", "DateString": "2019-11-14T00:00:00",
		"UpdatedDateUTC":  fmt.Sprintf("/Date(%d+0000)/", i.Updated.UnixMilli()),
		"LineAmountTypes": "Exclusive", "HasAttachments": false,
	}
}

// fakeXero is an organisation's invoices as Xero's Accounting API shows
// them: GET /api.xro/2.0/Invoices with where=Reference=="…" and page
// (100 a page), GET /connections, the Xero-tenant-id header, and 429s
// with X-Rate-Limit-Problem.
type fakeXero struct {
	mu   sync.Mutex
	invs []inv
	// problem, when set, answers the next request with a 429 for that
	// limit ("minute", "day", "concurrent"); guarded by mu.
	problem string
	// Loose matches the where filter in any letter case, as Xero's
	// filters may.
	Loose bool

	pages  atomic.Int64
	writes atomic.Int64 // anything but GET
}

func newFake(t *testing.T, invs ...inv) (*fakeXero, *httptest.Server) {
	f := &fakeXero{invs: invs}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func xeroError(w http.ResponseWriter, status int, title string) {
	w.WriteHeader(status)
	// Xero's error bodies can quote the request; the adapter must not.
	fmt.Fprintf(w, `{"Title":"%s","Status":%d,"Detail":"for %s with %s","Instance":"0f6a0c3e"}`, title, status, recipient, token)
}

func (f *fakeXero) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.Method != http.MethodGet {
		f.writes.Add(1)
		xeroError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+token {
		xeroError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	f.mu.Lock()
	p := f.problem
	f.problem = ""
	f.mu.Unlock()
	if p != "" {
		w.Header().Set("Retry-After", map[string]string{"minute": "7", "concurrent": "1", "day": "36000"}[p])
		w.Header().Set("X-Rate-Limit-Problem", p)
		if p == "day" {
			w.Header().Set("X-DayLimit-Remaining", "0")
		}
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if r.URL.Path == "/connections" {
		fmt.Fprintf(w, `[{"id":"e1eede29-f875-4a5d-8470-17f6a29a88b1","authEventId":"d99ecdfe-391d-43d2-b834-17636ba90e8d","tenantId":"%s","tenantType":"ORGANISATION","tenantName":"Demo Company (NZ)","createdDateUtc":"2019-07-09T23:40:30.1833130","updatedDateUtc":"2020-05-15T01:35:13.8491980"}]`, tenant)
		return
	}
	if r.Header.Get("Xero-tenant-id") != tenant {
		xeroError(w, http.StatusForbidden, "Forbidden")
		return
	}
	if r.URL.Path != "/api.xro/2.0/Invoices" {
		xeroError(w, http.StatusNotFound, "Not Found")
		return
	}
	f.pages.Add(1)
	where := r.URL.Query().Get("where")
	ref, ok := strings.CutPrefix(where, `Reference=="`)
	ref, ok2 := strings.CutSuffix(ref, `"`)
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if !ok || !ok2 || err != nil || page < 1 {
		xeroError(w, http.StatusBadRequest, "Validation Error")
		return
	}
	f.mu.Lock()
	var hits []map[string]any
	for _, i := range f.invs {
		if i.Reference == ref || f.Loose && strings.EqualFold(i.Reference, ref) {
			hits = append(hits, i.json())
		}
	}
	f.mu.Unlock()
	start, end := min((page-1)*100, len(hits)), min(page*100, len(hits))
	out := hits[start:end]
	if out == nil {
		out = []map[string]any{}
	}
	json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck // a test's answer
		"Id": "a1b2c3d4-0000-4000-8000-000000000001", "Status": "OK", "ProviderName": "sweeper",
		"DateTimeUTC": "/Date(1773151200000)/", "Invoices": out,
	})
}

// limitNext has the next request answered with a 429 for problem.
func (f *fakeXero) limitNext(problem string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problem = problem
}

// invoiceN is the n-th invoice (a UUID id) with reference and status.
func invoiceN(n int, reference, status string) inv {
	return inv{ID: fmt.Sprintf("243216c5-369e-4056-ac67-%012d", n), Number: "INV-" + strconv.Itoa(n), Reference: reference, Status: status, Updated: firstAttempt.Add(2 * time.Second)}
}

// newServer is a fake Xero answering every request with h.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
