package httplookup_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
)

// TestList: with list = true, the endpoint is asked GET ?since&until with
// no op_key, and each match must carry its op_key; without it the adapter
// cannot list.
func TestList(t *testing.T) {
	t.Parallel()
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Query().Has("op_key") || !r.URL.Query().Has("since") || !r.URL.Query().Has("until") {
			t.Errorf("listing request %s %s: want a GET with since and until and no op_key", r.Method, r.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	since, until := time.Now().Add(-24*time.Hour), time.Now()

	off := newAdapter(t, "orders", &httplookup.Config{URL: srv.URL + "/lookup"}, "", srv.Client().Transport)
	if _, err := off.List(context.Background(), since, until); !errors.Is(err, providers.ErrUnsupported) || off.Lists() {
		t.Errorf("without list: %v, want ErrUnsupported", err)
	}
	a := newAdapter(t, "orders", &httplookup.Config{URL: srv.URL + "/lookup", List: true}, "", srv.Client().Transport)
	body = `{"matches":[{"id":"r1","op_key":"k1","created_at":"2026-12-01T10:00:00Z"},{"id":"r2","op_key":"k2","state":"failed"}]}`
	listed, err := a.List(context.Background(), since, until)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].OpKey != "k1" || listed[0].Record.ID != "r1" || listed[1].Record.State != providers.StateFailed {
		t.Errorf("listed = %+v", listed)
	}
	body = `{"matches":[{"id":"r1"}]}`
	if _, err := a.List(context.Background(), since, until); err == nil {
		t.Error("a match without op_key was listed")
	}
	if errs := (&httplookup.Config{URL: srv.URL, SearchBy: httplookup.SearchByResemblance, List: true}).Validate(); len(errs) != 1 {
		t.Errorf("list with search_by resemblance: %v, want one error", errs)
	}
}
