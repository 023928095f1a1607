package postmark_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postmark"
	"github.com/sweeper/sweeper/providers/providertest"
)

// FuzzSearchPage: whatever Postmark answers with 200 to an outbound
// message search, the adapter does not panic and sends nothing; it either
// fails or returns records that each have an id and a date and carry the
// op_key exactly, and only when the body is one JSON object with a
// TotalCount and a Messages array (anything else is a failed lookup, never
// "found none"). The same body read again gives the same answer.
func FuzzSearchPage(f *testing.F) {
	at := firstAttempt.Add(time.Minute)
	for _, seed := range [][]byte{
		searchPage(0),
		searchPage(1, sent("m1", at)),
		searchPage(3, sent("m1", at), sent("m2", at.Add(time.Second)), message{ID: "m3", To: recipient, Subject: subject, Received: at, Status: "Bounced", Metadata: map[string]string{"op_key": opKey}}),
		searchPage(2, sent("m1", at), message{ID: "m2", To: recipient, Subject: subject, Received: at, Metadata: map[string]string{"op_key": strings.ToUpper(opKey)}}),
		searchPage(1, message{ID: "m1", To: recipient, Subject: subject, Received: at}),
		searchPage(600, sent("m1", at)),
		searchPage(10001),
		searchPage(-1),
		[]byte(`{"TotalCount":1,"Messages":[{"MessageID":"m1","ReceivedAt":"2026-03-10T10:01:00-04:00","Metadata":{"op_key":"order-1042-receipt"}}]}`),
		[]byte(`{"TotalCount":1,"Messages":[{"MessageID":"","ReceivedAt":"2026-03-10T10:01:00-04:00","Metadata":{"op_key":"order-1042-receipt"}}]}`),
		[]byte(`{"TotalCount":1,"Messages":[{"MessageID":"m1","ReceivedAt":"2026-03-10T10:01:00","Metadata":{"op_key":"order-1042-receipt"}}]}`),
		[]byte(`{"TotalCount":1,"Messages":[{"MessageID":"m1","ReceivedAt":"2026-03-10T10:01:00-04:00","Metadata":{"op_key":1}}]}`),
		[]byte(`{"TotalCount":1,"Messages":[{"MessageID":"m1","ReceivedAt":"2026-03-10T10:01:00-04:00","Metadata":{"op_key":"x","op_\u212aey":"order-1042-receipt"}}]}`),
		[]byte(`{"TotalCount":1,"Messages":[null]}`),
		[]byte(`{"TotalCount":0,"Messages":null}`),
		[]byte(`{"TotalCount":0,"Messages":[],"Messages":[{"MessageID":"m1"}]}`),
		[]byte(`{"TotalCount":0,"Messages":[]} {"TotalCount":0,"Messages":[]}`),
		[]byte(`{"totalcount":0,"messages":[]}`),
		[]byte(`{"ErrorCode":10,"Message":"x"}`),
		[]byte(`{}`),
		[]byte(`null`),
		[]byte(`<html><body>502 Bad Gateway</body></html>`),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		cfg := postmark.Kind.NewSettings().(*postmark.Config)
		cfg.APIBase, cfg.ServerTokenEnv = "https://api.postmark.test", "POSTMARK_SERVER_TOKEN"
		var nonGET atomic.Int64
		a, err := postmark.New("mailer", cfg, providertest.Env(providertest.FixedBody{Body: page, NonGET: &nonGET}, "POSTMARK_SERVER_TOKEN", serverToken))
		if err != nil {
			t.Fatal(err)
		}
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: query, Writes: &nonGET, Hidden: []string{serverToken, recipient}, Body: page,
			Accept: func(t *testing.T, records []providers.Record) {
				var top map[string]json.RawMessage
				if json.Unmarshal(page, &top) != nil || top == nil || top["TotalCount"] == nil {
					t.Fatalf("body %q has no TotalCount, yet Lookup = %v, nil", page, records)
				}
				var messages []map[string]json.RawMessage
				if json.Unmarshal(top["Messages"], &messages) != nil || messages == nil {
					t.Fatalf("body %q has no Messages array, yet Lookup = %v, nil", page, records)
				}
				for i, r := range records {
					if r.CreatedAt.IsZero() {
						t.Errorf("record %d has no date: %+v", i, r)
					}
				}
				// Every record is a listed message whose Metadata holds the
				// op_key exactly.
				keyed := 0
				for _, m := range messages {
					var meta map[string]string
					if json.Unmarshal(m["Metadata"], &meta) == nil && meta["op_key"] == opKey {
						keyed++
					}
				}
				if len(records) > keyed {
					t.Errorf("%d records from %d messages carrying the op_key", len(records), keyed)
				}
			},
		})
	})
}
