package gcal_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/gcal"
	"github.com/sweeper/sweeper/providers/providertest"
)

// tokenThen answers the token exchange with a fixed access token and
// every other request with api.
type tokenThen struct{ api http.RoundTripper }

const fuzzToken = "ya29.fuzz-token-5f3c"

func (t tokenThen) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path != "/token" {
		return t.api.RoundTrip(req)
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"access_token":"` + fuzzToken + `","expires_in":3599,"token_type":"Bearer"}`))}, nil
}

// FuzzEventsPage: whatever Google answers with 200 to events.list, the
// adapter does not panic and sends nothing; it either fails or returns
// records that each carry the op_key (or are cancelled events listed bare),
// and only when the body is a calendar#events object with an items array.
func FuzzEventsPage(f *testing.F) {
	const opKey = "op-1"
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	for _, seed := range [][]byte{
		listPage(""),
		listPage("", ev{ID: "evt00001", OpKey: opKey, Summary: "s", Created: at}),
		listPage("", ev{ID: "evt00001", OpKey: opKey, Summary: "s", Created: at}, ev{ID: "evt00002", Status: "cancelled", Bare: true}),
		listPage("more", ev{ID: "evt00001", OpKey: opKey, Summary: "s", Created: at}),
		listPage("", ev{ID: "evt00001", OpKey: "OP-1", Summary: "s", Created: at}, ev{ID: "evt00002", Status: "tentative", OpKey: opKey, Created: at}),
		[]byte(`{"kind":"calendar#events","items":[{"id":"evt00001","status":"confirmed","extendedProperties":{"private":{"op_key":"op-1"}}}]}`),
		[]byte(`{"kind":"calendar#events","items":[{"id":"evt00001","status":"confirmed","created":"2026-12-04T09:00:00Z","extendedProperties":{"private":{"op_key":"op-1","op_\u212aey":"x"}}}]}`),
		[]byte(`{"kind":"calendar#events","items":[],"items":[{"id":"evt00001"}]}`),
		[]byte(`{"kind":"calendar#events","items":null}`),
		[]byte(`{"kind":"calendar#events","items":[],"nextPageToken":"","nextSyncToken":"x"}`),
		[]byte(`{"error":{"code":404,"message":"Not Found"}}`),
		[]byte(`null`),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		cfg := gcal.Kind.NewSettings().(*gcal.Config)
		cfg.CalendarID, cfg.CredentialsEnv = calendarID, "GCAL_KEY"
		cfg.APIBase, cfg.TokenURL = "https://calendar.test", "https://calendar.test/token"
		var nonGET atomic.Int64
		transport := tokenThen{api: providertest.FixedBody{Body: page, NonGET: &nonGET}}
		a, err := gcal.New("bookings", cfg, providertest.Env(transport, "GCAL_KEY", keyJSON()))
		if err != nil {
			t.Fatal(err)
		}
		q := providertest.Query()
		q.OpKey = opKey
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: q, Writes: &nonGET, Hidden: []string{fuzzToken, q.Recipient}, Body: page,
			Accept: func(t *testing.T, records []providers.Record) {
				var top struct {
					Kind  string                       `json:"kind"`
					Items []map[string]json.RawMessage `json:"items"`
				}
				if json.Unmarshal(page, &top) != nil || top.Kind != "calendar#events" || top.Items == nil {
					t.Fatalf("body %q is no events page, yet Lookup = %v, nil", page, records)
				}
				for _, r := range records {
					if r.State != providers.StateReversed && r.CreatedAt.IsZero() {
						t.Errorf("record without a date: %+v", r)
					}
				}
				if len(records) > len(top.Items) {
					t.Errorf("%d records from %d events", len(records), len(top.Items))
				}
			},
		})
	})
}
