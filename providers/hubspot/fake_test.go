package hubspot_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	token     = "pat-na1-0b1c2d3e-secret-4f5a"
	recipient = "ada.lovelace+crm@example.com"
	opKey     = "wf-42-create-contact"
	portalID  = 2519445
)

var firstAttempt = time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)

// crmRecord is one record the fake HubSpot account holds.
type crmRecord struct {
	ID       string
	Props    map[string]string // nil value: not set
	Created  time.Time
	Archived bool
	// VisibleAfter is how many searches must run before the search index
	// shows the record (HubSpot's search is eventually consistent); the
	// direct read sees it at once.
	VisibleAfter int
}

// json renders r as HubSpot answers a record.
func (r crmRecord) json() map[string]any {
	props := map[string]any{
		"hs_object_id":     r.ID,
		"createdate":       r.Created.UTC().Format("2006-01-02T15:04:05.000Z"),
		"lastmodifieddate": r.Created.UTC().Format("2006-01-02T15:04:05.000Z"),
	}
	for k, v := range r.Props {
		props[k] = v
	}
	return map[string]any{
		"id":         r.ID,
		"properties": props,
		"createdAt":  r.Created.UTC().Format("2006-01-02T15:04:05.000Z"),
		"updatedAt":  r.Created.UTC().Format("2006-01-02T15:04:05.000Z"),
		"archived":   r.Archived,
	}
}

// fakeHubSpot is a HubSpot account's CRM as the v3 objects API shows it:
// the search (POST /crm/v3/objects/{object}/search, EQ filter, limit,
// after, total, paging.next.after), the read
// (GET /crm/v3/objects/{object}/{id}?idProperty=…) and the account details.
type fakeHubSpot struct {
	t      *testing.T
	object string
	mu     sync.Mutex
	recs   []crmRecord
	// PageSize caps a page below the asked limit, to show paging.
	PageSize int
	// Loose matches EQ in any letter case, as HubSpot's string search may.
	Loose bool
	// ShowArchived has the search list archived records too.
	ShowArchived bool
	// RateLimit answers the next n requests with 429.
	RateLimit atomic.Int64
	// Page, when set, replaces the search's answer.
	Page func(after string) []byte

	searches atomic.Int64
	reads    atomic.Int64
	writes   atomic.Int64 // anything but GET and the declared search
}

func newFake(t *testing.T, object string, recs ...crmRecord) (*fakeHubSpot, *httptest.Server) {
	f := &fakeHubSpot{t: t, object: object, recs: recs}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeHubSpot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	search := r.Method == http.MethodPost && r.URL.Path == "/crm/v3/objects/"+f.object+"/search"
	if r.Method != http.MethodGet && !search {
		f.writes.Add(1)
		errorAnswer(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+token {
		errorAnswer(w, http.StatusUnauthorized, "INVALID_AUTHENTICATION")
		return
	}
	if f.RateLimit.Load() > 0 {
		f.RateLimit.Add(-1)
		w.Header().Set("Retry-After", "3")
		errorAnswer(w, http.StatusTooManyRequests, "RATE_LIMITS")
		return
	}
	switch {
	case search:
		f.search(w, r)
	case r.URL.Path == "/account-info/v3/details":
		fmt.Fprintf(w, `{"portalId":%d,"accountType":"STANDARD","timeZone":"US/Eastern","companyCurrency":"USD","additionalCurrencies":[],"utcOffset":"-05:00","utcOffsetMilliseconds":-18000000,"uiDomain":"app.hubspot.com","dataHostingLocation":"na1"}`, portalID)
	case strings.HasPrefix(r.URL.EscapedPath(), "/crm/v3/objects/"+f.object+"/"):
		f.read(w, r)
	default:
		errorAnswer(w, http.StatusNotFound, "NOT_FOUND")
	}
}

func errorAnswer(w http.ResponseWriter, status int, category string) {
	w.WriteHeader(status)
	// HubSpot's error messages quote the request; the adapter must not.
	fmt.Fprintf(w, `{"status":"error","message":"%s for %s with %s","correlationId":"0f6a0c3e-7d4b-4c55-9e2a-1b5d5a5e3c11","category":"%s"}`, category, recipient, token, category)
}

func (f *fakeHubSpot) search(w http.ResponseWriter, r *http.Request) {
	n := f.searches.Add(1)
	var req struct {
		FilterGroups []struct {
			Filters []struct {
				PropertyName string `json:"propertyName"`
				Operator     string `json:"operator"`
				Value        string `json:"value"`
			} `json:"filters"`
		} `json:"filterGroups"`
		Properties []string `json:"properties"`
		Limit      int      `json:"limit"`
		After      string   `json:"after"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || len(req.FilterGroups) < 1 || len(req.FilterGroups) > 5 ||
		req.Limit < 1 || req.Limit > 100 {
		errorAnswer(w, http.StatusBadRequest, "VALIDATION_ERROR")
		return
	}
	if f.Page != nil {
		w.Write(f.Page(req.After)) //nolint:errcheck // a test's answer
		return
	}
	// Groups are OR-joined; each holds one EQ filter here.
	for _, g := range req.FilterGroups {
		if len(g.Filters) != 1 || g.Filters[0].Operator != "EQ" {
			errorAnswer(w, http.StatusBadRequest, "VALIDATION_ERROR")
			return
		}
	}
	f.mu.Lock()
	var hits []crmRecord
	for _, rec := range f.recs {
		match := false
		for _, g := range req.FilterGroups {
			flt := g.Filters[0]
			v, ok := rec.Props[flt.PropertyName]
			match = match || ok && (v == flt.Value || f.Loose && strings.EqualFold(v, flt.Value))
		}
		if match && int(n) > rec.VisibleAfter && (!rec.Archived || f.ShowArchived) {
			hits = append(hits, rec)
		}
	}
	f.mu.Unlock()
	offset := 0
	if req.After != "" {
		offset, _ = strconv.Atoi(req.After)
	}
	size := req.Limit
	if f.PageSize > 0 {
		size = min(size, f.PageSize)
	}
	end := min(offset+size, len(hits))
	results := []map[string]any{}
	for _, rec := range hits[min(offset, len(hits)):end] {
		results = append(results, rec.json())
	}
	answer := map[string]any{"total": len(hits), "results": results}
	if end < len(hits) {
		answer["paging"] = map[string]any{"next": map[string]any{"after": strconv.Itoa(end), "link": "?after=" + strconv.Itoa(end)}}
	}
	json.NewEncoder(w).Encode(answer) //nolint:errcheck // a test's answer
}

func (f *fakeHubSpot) read(w http.ResponseWriter, r *http.Request) {
	f.reads.Add(1)
	id, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/crm/v3/objects/"+f.object+"/"))
	prop := r.URL.Query().Get("idProperty")
	if err != nil || prop == "" || r.URL.Query().Get("archived") != "false" {
		errorAnswer(w, http.StatusBadRequest, "VALIDATION_ERROR")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rec := range f.recs {
		if v, ok := rec.Props[prop]; ok && v == id && !rec.Archived {
			json.NewEncoder(w).Encode(rec.json()) //nolint:errcheck // a test's answer
			return
		}
	}
	errorAnswer(w, http.StatusNotFound, "OBJECT_NOT_FOUND")
}

// contact is a contact created by the operation opKey.
func contact(id, key string) crmRecord {
	return crmRecord{ID: id, Props: map[string]string{"op_key": key, "email": recipient, "firstname": "Ada"}, Created: firstAttempt.Add(2 * time.Second)}
}

// newServer is a fake HubSpot answering every request with h.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// write answers with one record, whatever was asked.
func (*fakeHubSpot) write(w http.ResponseWriter, r crmRecord) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(r.json()) //nolint:errcheck // a test's answer
}
