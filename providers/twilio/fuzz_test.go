package twilio_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/twilio"
)

// fuzzPage is a Messages list page holding messages, rendered as Twilio
// does (see listPage), without a next page.
func fuzzPage(messages ...message) []byte {
	return listPage(accountSID, messages, 0, 1000, nil)
}

// FuzzMessagesPage: whatever Twilio answers with 200 to a Messages list,
// the adapter does not panic and sends nothing; it either fails or returns
// records that each have an id and lie in the query's window, and only
// when the body is one JSON object with a "messages" array (anything else
// is a failed lookup, never "found none"). The same body read again gives
// the same answer.
func FuzzMessagesPage(f *testing.F) {
	at := since.Add(time.Hour)
	next := "/2010-04-01/Accounts/" + accountSID + "/Messages.json?PageSize=1000&Page=1&PageToken=PAxx"
	for _, seed := range [][]byte{
		fuzzPage(),
		fuzzPage(message{SID: "SM001", To: number, From: sender, Body: body, Created: at, Sent: at}),
		fuzzPage(
			message{SID: "SM001", To: number, From: sender, Body: body, Created: at, Sent: at},
			message{SID: "SM002", To: number, From: sender, Body: "another text", Created: at.Add(time.Minute), Sent: at.Add(time.Minute)},
			message{SID: "SM003", To: number, From: sender, NoBody: true, Status: "failed", Created: at, Sent: at},
		),
		// Outside the window, on either side.
		fuzzPage(message{SID: "SM004", To: number, Body: body, Created: since.Add(-time.Second), Sent: since},
			message{SID: "SM005", To: number, Body: body, Created: until.Add(time.Second), Sent: until}),
		listPage(accountSID, []message{{SID: "SM006", To: number, Body: body, Created: at, Sent: at}}, 0, 1000, &next),
		[]byte(`{"messages":[],"next_page_uri":"https://evil.example.com/2010-04-01/Accounts/` + accountSID + `/Messages.json"}`),
		[]byte(`{"messages":[{"sid":"","date_created":"Tue, 10 Mar 2026 10:00:00 +0000"}]}`),
		[]byte(`{"messages":[{"sid":"   ","date_created":"Tue, 10 Mar 2026 10:00:00 +0000"}]}`),
		[]byte(`{"messages":[{"sid":"SM007","date_created":"2026-03-10T10:00:00Z"}]}`),
		[]byte(`{"messages":[{"sid":"SM008"}]}`),
		[]byte(`{"messages":[null]}`),
		[]byte(`{"messages":null}`),
		[]byte(`{"Messages":[]}`),
		[]byte(`{"messages":[],"Messages":[{"sid":"SM009"}]}`),
		[]byte(`{"messages":[]} {"messages":[]}`),
		[]byte(`{}`),
		[]byte(`null`),
		[]byte(`<html><body>502 Bad Gateway</body></html>`),
		[]byte(`{"messages":[{"sid":"SM010"`),
		{},
		[]byte(`{"messages":[],"messages":[{"sid":"SM011","to":"+15550100777","body":"Your code is 481516","date_created":"Tue, 10 Mar 2026 10:45:00 +0000"}]}`),
		[]byte(`{"messages":[{"sid":"SM012","to":"+15550100777","body":"x","Body":"Your code is 481516","date_created":"Tue, 10 Mar 2026 10:45:00 +0000"}]}`),
		[]byte(`{"messages":[{"SID":"SM013","to":"+15550100777","body":"Your code is 481516","date_created":"Tue, 10 Mar 2026 10:45:00 +0000"}]}`),
		[]byte(`{"messages":[{"sid":"SM014","date_created":"Tue, 10 Mar 2026 10:45:00 +0000"},{"sid":"SM014","body":"x","date_created":"Tue, 10 Mar 2026 10:45:00 +0000"}]}`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		var nonGET atomic.Int64
		a, err := twilio.New("sms", &twilio.Config{APIBase: "https://api.twilio.test", AccountSIDEnv: "TWILIO_ACCOUNT_SID", AuthTokenEnv: "TWILIO_AUTH_TOKEN"},
			providertest.Env(providertest.FixedBody{Body: page, NonGET: &nonGET}, "TWILIO_ACCOUNT_SID", accountSID, "TWILIO_AUTH_TOKEN", authToken))
		if err != nil {
			t.Fatal(err)
		}
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: query, Writes: &nonGET, Hidden: []string{authToken, accountSID, number}, Body: page,
			Accept: func(t *testing.T, records []providers.Record) {
				var top map[string]json.RawMessage
				if json.Unmarshal(page, &top) != nil || top == nil {
					t.Fatalf("body %q is not a JSON object, yet Lookup = %v, nil", page, records)
				}
				var messages []json.RawMessage
				if json.Unmarshal(top["messages"], &messages) != nil || messages == nil {
					t.Fatalf("body %q has no \"messages\" array, yet Lookup = %v, nil", page, records)
				}
				if records == nil {
					t.Error("Lookup = nil, nil; want a non-nil slice")
				}
				for i, r := range records {
					if r.CreatedAt.Before(query.Since) || r.CreatedAt.After(query.Until) {
						t.Errorf("record %d created %s, outside [%s, %s]", i, r.CreatedAt, query.Since, query.Until)
					}
				}
			},
		})
	})
}
