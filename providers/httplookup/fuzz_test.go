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
// not panic, and succeeds only on valid JSON holding a "matches" array —
// anything else is a failed lookup, never "found none".
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
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var nonGET atomic.Int64
		a := httplookup.New("orders", &httplookup.Config{URL: "https://lookup.example.com/lookup"}, token, providertest.FixedBody{Body: body, NonGET: &nonGET})

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
		if len(records) != len(matches) {
			t.Errorf("%d records from %d matches", len(records), len(matches))
		}
		for i, r := range records {
			if strings.TrimSpace(r.ID) == "" {
				t.Errorf("record %d has no id: %+v", i, r)
			}
		}
	})
}
