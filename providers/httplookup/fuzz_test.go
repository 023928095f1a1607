package httplookup_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/providertest"
)

// FuzzParseResponse: whatever a provider answers with 200, the adapter does
// not panic, and succeeds only on valid JSON holding a "matches" array and
// nothing else — anything else (a page's has_more or next_cursor
// included) is a failed lookup, never "found none" — with each record's
// state one of the protocol's and its op_key, if any, the one asked.
func FuzzParseResponse(f *testing.F) {
	for _, seed := range []string{
		`{"matches":[]}`,
		`{"matches":[{"id":"msg_1","created_at":"2024-05-01T10:00:05Z","recipient":"jane.doe@example.com","payload_hash":"abc"}]}`,
		`{"matches":[{"id":"a"},{"id":"b","created_at":"2024-05-01T10:00:05+02:00"}]}`,
		`{"matches":null}`,
		`{}`,
		`{"Matches":[]}`,
		`{"matches":[]} {"matches":[{"id":"x"}]}`,
		`{"matches":[{"id":""}]}`,
		`{"matches":[{"id":"a","created_at":"yesterday"}]}`,
		`<html><body>502 Bad Gateway</body></html>`,
		`{"matches":[{"id":"a"`,
		``,
		`{"matches":[{"id":"r","payload_hash":"wrong","payload_hash":"abc"}]}`,
		`{"matches":[{"id":"r","payload_hash":"wrong","Payload_Hash":"abc"}]}`,
		`{"matches":[],"matches":[{"id":"r","payload_hash":"abc"}]}`,
		`{"matches":[{"ID":"r","op_\u212aey":"x"}]}`,
		`{"matches":[{"id":"a"}],"has_more":true,"next_cursor":"c2","total":2}`,
		`{"matches":[],"has_more":false}`,
		`{"matches":[{"id":"a"}],"count":1}`,
		`{"matches":[{"id":"a","state":"in_flight","status":"scheduled"},{"id":"b","state":"failed"}]}`,
		`{"matches":[{"id":"a","state":"reversed"}]}`,
		`{"matches":[{"id":"a","op_key":"ord-42"},{"id":"b","op_key":"ord-43"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var nonGET atomic.Int64
		a := newAdapter(t, "orders", &httplookup.Config{URL: "https://lookup.example.com/lookup"}, token, providertest.FixedBody{Body: body, NonGET: &nonGET})

		records, err := a.Lookup(t.Context(), query)

		if n := nonGET.Load(); n != 0 {
			t.Fatalf("%d non-GET requests, want 0", n)
		}
		if err != nil {
			if records != nil {
				t.Errorf("records %v alongside error %v", records, err)
			}
			checkNoSecrets(t, err)
			return
		}
		if err := providers.CheckJSON(body); err != nil {
			t.Fatalf("body %q is not strict JSON (%v), yet Lookup = %v, nil", body, err, records)
		}
		var top map[string]any
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("body %q is not a JSON object (%v), yet Lookup = %v, nil", body, err, records)
		}
		matches, ok := top["matches"].([]any)
		if !ok {
			t.Fatalf("body %q has no \"matches\" array, yet Lookup = %v, nil", body, records)
		}
		if len(top) != 1 {
			t.Fatalf("body %q holds more than matches, yet Lookup = %v, nil", body, records)
		}
		if len(records) != len(matches) {
			t.Errorf("%d records from %d matches", len(records), len(matches))
		}
		for i, r := range records {
			if strings.TrimSpace(r.ID) == "" {
				t.Errorf("record %d has no id: %+v", i, r)
			}
			if r.State != "" && r.State != providers.StateEffect && r.State != providers.StateInFlight && r.State != providers.StateFailed {
				t.Errorf("record %d: state %q", i, r.State)
			}
			if m, ok := matches[i].(map[string]any); ok {
				if k, carried := m["op_key"].(string); carried && k != query.OpKey {
					t.Errorf("record %d carries op_key %q, not the one asked", i, k)
				}
			}
		}
	})
}

// FuzzParseBatchResponse: whatever a batch endpoint answers with 200, the
// adapter does not panic; the request succeeds only on strict JSON holding
// a "results" array whose every entry is for an op_key asked; and a query
// gets records only from exactly one entry naming its op_key.
func FuzzParseBatchResponse(f *testing.F) {
	for _, seed := range []string{
		`{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[{"id":"a"}]},{"op_key":"ord-2","error":"x"}]}`,
		`{"results":[{"op_key":"ord-0","matches":[{"id":"a","created_at":"2024-05-01T10:00:05Z","payload_hash":"abc"}]}]}`,
		`{"results":[{"op_key":"ord-1","matches":[{"id":"a"}]},{"op_key":"ord-1","matches":[]}]}`,
		`{"results":[{"op_key":"ORD-1","matches":[{"id":"a"}]}]}`,
		`{"results":[{"op_key":"ord-9","matches":[{"id":"a"}]}]}`,
		`{"results":[{"op_key":"ord-0","matches":[],"error":"x"}]}`,
		`{"results":[],"results":[{"op_key":"ord-0","matches":[{"id":"a"}]}]}`,
		`{"results":[{"op_key":"ord-0","op_\u212aey":"ord-1","matches":[{"id":"a"}]}]}`,
		`{"matches":[]}`,
		`{"results":[{"op_key":"ord-0","matches":[{"id":"a"}]}],"has_more":true}`,
		`{"results":[{"op_key":"ord-0","matches":[{"id":"a"}],"next_cursor":"c2"}]}`,
		`{"results":[{"op_key":"ord-0","matches":[{"id":"a","op_key":"ord-1","state":"failed"}]}]}`,
		`{"results":null}`,
		`{}`,
		``,
	} {
		f.Add([]byte(seed))
	}
	qs := make([]providers.Query, 3)
	for i := range qs {
		qs[i] = query
		qs[i].OpKey = "ord-" + string(rune('0'+i))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var nonGET atomic.Int64
		a := newAdapter(t, "orders", &httplookup.Config{URL: "https://lookup.example.com/lookup", MaxBatch: 5}, token, providertest.FixedBody{Body: body, NonGET: &nonGET})

		answers, err := a.LookupBatch(t.Context(), qs)

		if n := nonGET.Load(); n != 0 {
			t.Fatalf("%d non-GET requests, want 0", n)
		}
		if err != nil {
			if answers != nil {
				t.Errorf("answers %v alongside error %v", answers, err)
			}
			checkNoSecrets(t, err)
			return
		}
		if err := providers.CheckJSON(body); err != nil {
			t.Fatalf("body %q is not strict JSON (%v), yet LookupBatch succeeded", body, err)
		}
		var top struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal(body, &top); err != nil || top.Results == nil {
			t.Fatalf("body %q has no results array of objects (%v), yet LookupBatch succeeded", body, err)
		}
		var keys map[string]any
		if err := json.Unmarshal(body, &keys); err != nil || len(keys) != 1 {
			t.Fatalf("body %q holds more than results, yet LookupBatch succeeded", body)
		}
		if len(answers) != len(qs) {
			t.Fatalf("%d answers for %d queries", len(answers), len(qs))
		}
		for i, ans := range answers {
			if ans.Err != nil {
				checkNoSecrets(t, ans.Err)
				if ans.Records != nil {
					t.Errorf("answer %d: records alongside error %v", i, ans.Err)
				}
				continue
			}
			entries := 0
			for _, e := range top.Results {
				if e["op_key"] == qs[i].OpKey {
					entries++
					for k := range e {
						if k != "op_key" && k != "matches" && k != "error" {
							t.Errorf("answer %d (%s) answered from an entry holding %q", i, qs[i].OpKey, k)
						}
					}
					if ms, ok := e["matches"].([]any); ok {
						for _, m := range ms {
							if mm, ok := m.(map[string]any); ok {
								if k, carried := mm["op_key"].(string); carried && k != qs[i].OpKey {
									t.Errorf("answer %d (%s) holds a record carrying op_key %q", i, qs[i].OpKey, k)
								}
							}
						}
					}
				}
			}
			if entries != 1 {
				t.Errorf("answer %d (%s) answered from %d entries naming it, want exactly 1", i, qs[i].OpKey, entries)
			}
			for _, r := range ans.Records {
				if strings.TrimSpace(r.ID) == "" {
					t.Errorf("answer %d: a record without id", i)
				}
			}
		}
	})
}
