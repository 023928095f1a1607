package hubspot_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/hubspot"
	"github.com/sweeper/sweeper/providers/providertest"
)

// fixedSearch answers every request with 200 and one body, without a
// network, and counts what could write: anything but a GET and the
// contacts search.
type fixedSearch struct {
	body   []byte
	writes *atomic.Int64
}

func (f fixedSearch) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	if r.Method != http.MethodGet && !(r.Method == http.MethodPost && r.URL.Path == "/crm/v3/objects/contacts/search") {
		f.writes.Add(1)
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)), Request: r,
	}, nil
}

// FuzzSearchPage: whatever HubSpot answers with 200 to the search, the
// adapter does not panic and writes nothing; it either fails or returns
// records that each hold the op_key exactly, and only when the body is
// one JSON object with a total and a results array.
func FuzzSearchPage(f *testing.F) {
	hit := `{"id":"5","properties":{"op_key":"` + opKey + `","email":"a@example.com"},"createdAt":"2026-03-10T14:00:02.000Z","updatedAt":"2026-03-10T14:00:02.000Z","archived":false}`
	for _, seed := range []string{
		`{"total":0,"results":[]}`,
		`{"total":1,"results":[` + hit + `]}`,
		`{"total":2,"results":[` + hit + `],"paging":{"next":{"after":"1","link":"x"}}}`,
		`{"total":1,"results":[{"id":"5","properties":{"op_key":"WF-42-CREATE-CONTACT"},"createdAt":"2026-03-10T14:00:02Z","updatedAt":"2026-03-10T14:00:02Z","archived":true}]}`,
		`{"total":1,"results":[{"id":"5","properties":{"op_key":null},"createdAt":"2026-03-10T14:00:02Z","updatedAt":"2026-03-10T14:00:02Z","archived":false}]}`,
		`{"total":0,"results":[],"results":[` + hit + `]}`,
		`{"total":0,"results":[]} {}`,
		`{"status":"error","message":"x","category":"RATE_LIMITS"}`,
		`{}`, `null`, `<html>502</html>`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cfg := hubspot.Kind.NewSettings().(*hubspot.Config)
		cfg.AccessTokenEnv, cfg.Object = "HUBSPOT_TOKEN", hubspot.ObjectContacts
		cfg.ApplyDefaults()
		var writes atomic.Int64
		a, err := hubspot.New("crm", cfg, providertest.Env(fixedSearch{body: body, writes: &writes}, "HUBSPOT_TOKEN", token))
		if err != nil {
			t.Fatal(err)
		}
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: query, Writes: &writes, Hidden: []string{token, recipient}, Body: body,
			Accept: func(t *testing.T, records []providers.Record) {
				var top map[string]json.RawMessage
				if json.Unmarshal(body, &top) != nil || top["total"] == nil {
					t.Fatalf("body %q has no total, yet Lookup = %v, nil", body, records)
				}
				var results []struct {
					Properties map[string]*string `json:"properties"`
				}
				if json.Unmarshal(top["results"], &results) != nil || results == nil {
					t.Fatalf("body %q has no results array, yet Lookup = %v, nil", body, records)
				}
				keyed := 0
				for _, r := range results {
					if v := r.Properties["op_key"]; v != nil && *v == opKey {
						keyed++
					}
				}
				if len(records) > keyed {
					t.Errorf("%d records from %d results holding the op_key", len(records), keyed)
				}
				for i, r := range records {
					if r.CreatedAt.IsZero() {
						t.Errorf("record %d has no date", i)
					}
				}
			},
		})
	})
}
