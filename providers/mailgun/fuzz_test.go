package mailgun_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/mailgun"
	"github.com/sweeper/sweeper/providers/providertest"
)

// FuzzEventsPage: whatever Mailgun answers with 200 to an events search,
// the adapter does not panic and sends nothing; it either fails or returns
// records that each have an id and a date, and only when the body is one
// JSON object with an items array and a paging object with a next URL
// (anything else is a failed lookup, never "found none"). The same body
// read again gives the same answer.
func FuzzEventsPage(f *testing.F) {
	at := firstAttempt.Add(time.Minute)
	self := "https://api.mailgun.net/v3/" + domain + "/events/c2VsZg"
	for _, seed := range [][]byte{
		eventsPage(self),
		eventsPage(self, accepted("e1", messageID, at)),
		eventsPage(self, accepted("e1", messageID, at), delivered("e2", messageID, at.Add(time.Second)), accepted("e3", "other@x", at)),
		eventsPage(self, event{ID: "e1", Name: "failed", At: at, Recipient: recipient, MessageID: messageID, Subject: subject, Vars: map[string]any{"op_key": opKey}}),
		eventsPage(self, event{ID: "e1", Name: "accepted", At: at, Recipient: recipient, MessageID: messageID, Subject: subject, Vars: map[string]any{"op_key": 7}}),
		eventsPage("https://evil.example/v3/"+domain+"/events/x", accepted("e1", messageID, at)),
		[]byte(`{"items":[{"event":"accepted","timestamp":1773151260.5,"recipient":"r","message":{"headers":{"message-id":"m1"}},"user-variables":{"op_key":"order-1042-receipt"}}],"paging":{"next":"` + self + `"}}`),
		[]byte(`{"items":[{"event":"accepted","timestamp":-5,"message":{"headers":{"message-id":"m1"}},"user-variables":{"op_key":"order-1042-receipt"}}],"paging":{"next":"` + self + `"}}`),
		[]byte(`{"items":[{"event":"accepted","timestamp":1773151260,"message":{"headers":{"message-id":""}},"user-variables":{"op_key":"order-1042-receipt"}}],"paging":{"next":"` + self + `"}}`),
		[]byte(`{"items":[{"event":"accepted","timestamp":1773151260,"message":{"headers":{"message-id":"m1"}},"user-variables":{"op_key":"x","op_\u212aey":"order-1042-receipt"}}],"paging":{"next":"` + self + `"}}`),
		[]byte(`{"items":[null],"paging":{"next":"` + self + `"}}`),
		[]byte(`{"items":[],"paging":{}}`),
		[]byte(`{"items":null,"paging":{"next":"` + self + `"}}`),
		[]byte(`{"items":[],"items":[{"event":"accepted"}],"paging":{"next":"` + self + `"}}`),
		[]byte(`{"Items":[],"Paging":{"Next":"x"}}`),
		[]byte(`{"message":"Domain not found"}`),
		[]byte(`{}`),
		[]byte(`null`),
		[]byte(`<html><body>502 Bad Gateway</body></html>`),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		cfg := mailgun.Kind.NewSettings().(*mailgun.Config)
		cfg.Domain, cfg.APIKeyEnv = domain, "MAILGUN_API_KEY"
		var nonGET atomic.Int64
		a, err := mailgun.New("mailer", cfg, providertest.Env(providertest.FixedBody{Body: page, NonGET: &nonGET}, "MAILGUN_API_KEY", apiKey))
		if err != nil {
			t.Fatal(err)
		}
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: query, Writes: &nonGET, Hidden: []string{apiKey, recipient}, Body: page,
			Accept: func(t *testing.T, records []providers.Record) {
				var top struct {
					Items  []json.RawMessage `json:"items"`
					Paging *struct {
						Next string `json:"next"`
					} `json:"paging"`
				}
				if json.Unmarshal(page, &top) != nil || top.Items == nil || top.Paging == nil || top.Paging.Next == "" {
					t.Fatalf("body %q is not a page of events, yet Lookup = %v, nil", page, records)
				}
				for i, r := range records {
					if r.CreatedAt.IsZero() {
						t.Errorf("record %d has no date: %+v", i, r)
					}
				}
			},
		})
	})
}
