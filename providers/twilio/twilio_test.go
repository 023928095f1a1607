package twilio_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"
	"go.uber.org/goleak"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/twilio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The credentials and the number must never appear in an error (I7).
const (
	accountSID = "AC0123456789abcdef0123456789abcdef"
	authToken  = "f00dfeedf00dfeedf00dfeedSECRET42"
	number     = "+15550100777"
	sender     = "+15017122661"
	body       = "Your code is 481516"
)

var (
	since = time.Date(2026, 3, 10, 9, 45, 0, 0, time.UTC)
	until = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	query = providers.Query{
		OpKey:          "otp-42",
		Recipient:      number,
		Action:         "send_sms",
		PayloadHash:    hashOf(body),
		FirstAttemptAt: since.Add(15 * time.Minute),
		Since:          since,
		Until:          until,
	}
)

// hashOf is the payload hash a workflow stores for an SMS: SHA-256 of the
// canonical JSON {"body":"…"}, computed here without the ledger package for
// ASCII text, to pin the contract the package doc states.
func hashOf(text string) string {
	sum := sha256.Sum256([]byte(`{"body":"` + text + `"}`))
	return hex.EncodeToString(sum[:])
}

// sms is a message to number in the middle of the window.
func sms(sid, text string, at time.Time) message {
	return message{SID: sid, To: number, From: sender, Body: text, Created: at, Sent: at.Add(time.Second)}
}

func newAdapter(t *testing.T, f *fakeTwilio, edit ...func(*twilio.Config)) providers.Lookup {
	t.Helper()
	set := func(c *twilio.Config) {
		c.AccountSIDEnv, c.AuthTokenEnv, c.APIBase = "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", f.srv.URL
	}
	env := providertest.Env(nil, "TWILIO_ACCOUNT_SID", accountSID, "TWILIO_AUTH_TOKEN", authToken)
	return providertest.NewLookup(t, twilio.Kind, "sms", env, append([]func(*twilio.Config){set}, edit...)...)
}

// checkNoLeak fails when err names a credential or the number, in any
// encoding a URL would give it.
func checkNoLeak(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{authToken, accountSID, number, url.QueryEscape(number), strings.TrimPrefix(number, "+")} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error names %q: %v", s, err)
		}
	}
}

func lookup(t *testing.T, l providers.Lookup, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	records, err := l.Lookup(ctx, q)
	checkNoLeak(t, err)
	return records, err
}

func TestLookupRecord(t *testing.T) {
	t.Parallel()
	at := since.Add(20 * time.Minute)
	f := newFake(t, sms("SM00000000000000000000000000000001", body, at))
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.Record{{
		ID:          "SM00000000000000000000000000000001",
		CreatedAt:   at,
		Recipient:   number,
		Fields:      map[string]any{"body": body},
		PayloadHash: query.PayloadHash,
		Excerpt:     "twilio message status=delivered direction=outbound-api segments=1",
		State:       providers.StateEffect,
		Status:      "delivered",
	}}
	if diff := cmp.Diff(want, records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	// The adapter's hash is the ledger's, over the documented fields.
	if h, _ := ledger.PayloadHashOf(map[string]any{"body": body}); h != query.PayloadHash {
		t.Errorf("ledger hash of {body} = %s, want %s", h, query.PayloadHash)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	in := since.Add(30 * time.Minute)
	other := "Your code is 000000"
	for _, tc := range []struct {
		desc     string
		messages []message
		hash     string   // the query's payload hash; default query's
		want     []string // record ids, oldest first
		noHash   bool     // the one record has no payload hash
	}{
		{desc: "one message whose body matches", messages: []message{sms("SM1", body, in)}, want: []string{"SM1"}},
		{desc: "a mismatching body is returned for the decision", messages: []message{sms("SM1", other, in)}, want: []string{"SM1"}},
		{desc: "two matching bodies are both returned", messages: []message{sms("SM2", body, in.Add(time.Minute)), sms("SM1", body, in)}, want: []string{"SM1", "SM2"}},
		{
			desc:     "matching bodies hide mismatching ones",
			messages: []message{sms("SM3", other, in.Add(2*time.Minute)), sms("SM2", body, in.Add(time.Minute)), sms("SM1", other, in)},
			want:     []string{"SM2"},
		},
		{
			desc:     "without a match every candidate is returned",
			messages: []message{sms("SM2", other, in.Add(time.Minute)), sms("SM1", "hello", in)},
			want:     []string{"SM1", "SM2"},
		},
		{
			desc:     "a query without a payload hash gets every candidate",
			messages: []message{sms("SM2", body, in.Add(time.Minute)), sms("SM1", other, in)},
			hash:     "-",
			want:     []string{"SM1", "SM2"},
		},
		{desc: "nothing listed is zero records", want: []string{}},
		{
			desc: "messages outside the precise window are left out",
			messages: []message{
				sms("SMlate", body, until.Add(time.Minute)),          // same day, after Until
				sms("SMin", body, in),                                // in the window
				sms("SMearly", body, since.Add(-time.Minute)),        // same day, before Since
				sms("SMedge", body, since),                           // exactly Since: in
				sms("SMyesterday", body, since.Add(-24*time.Hour+1)), // the day before
			},
			want: []string{"SMedge", "SMin"},
		},
		{
			desc:     "messages to another number are not listed",
			messages: []message{{SID: "SM1", To: "+15550100999", From: sender, Body: body, Created: in, Sent: in}},
			want:     []string{},
		},
		{
			desc:     "a media-only message has no payload hash",
			messages: []message{{SID: "SM1", To: number, From: sender, NoBody: true, Created: in, Sent: in}},
			want:     []string{"SM1"},
			noHash:   true,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.messages...)
			q := query
			switch tc.hash {
			case "-":
				q.PayloadHash = ""
			case "":
			default:
				q.PayloadHash = tc.hash
			}
			records, err := lookup(t, newAdapter(t, f), q)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, r := range records {
				ids = append(ids, r.ID)
				if strings.Contains(r.Excerpt, number) || strings.Contains(r.Excerpt, body) || strings.Contains(r.Excerpt, other) {
					t.Errorf("excerpt %q shows the number or the text", r.Excerpt)
				}
				switch {
				case tc.noHash && (r.PayloadHash != "" || r.Fields != nil):
					t.Errorf("record %s: payload hash %q, fields %v; want none", r.ID, r.PayloadHash, r.Fields)
				case !tc.noHash && r.PayloadHash != hashOf(r.Fields["body"].(string)):
					t.Errorf("record %s: payload hash %s, want the hash of {body}", r.ID, r.PayloadHash)
				}
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("record ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLookupRecipientE164: Twilio's To filter matches E.164 exactly, so the
// ledger's recipient is searched in that form, however it was written; the
// record's recipient is Twilio's.
func TestLookupRecipientE164(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, recipient, wantTo string
	}{
		{"E.164", number, number},
		{"spaces and brackets", "+1 (555) 0100-777", number},
		{"dots and dashes", "+1.555.0100.777", number},
		{"surrounding space", " +15550100777\n", number},
		{"a WhatsApp address", "whatsapp:+1 555 0100 777", "whatsapp:" + number},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			at := since.Add(20 * time.Minute)
			m := sms("SM1", body, at)
			m.To = tc.wantTo
			f := newFake(t, m)
			q := query
			q.Recipient = tc.recipient
			records, err := lookup(t, newAdapter(t, f), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(records) != 1 || records[0].ID != "SM1" || records[0].Recipient != tc.wantTo {
				t.Errorf("records %+v; want SM1 to %s", records, tc.wantTo)
			}
			if reqs := f.Requests(); len(reqs) != 1 || reqs[0].Query.Get("To") != tc.wantTo {
				t.Errorf("requests %+v; want one with To=%s", reqs, tc.wantTo)
			}
		})
	}
}

// TestLookupSameMessageTwice: a message on two pages (the list moved
// between requests) is one record, even if its status moved on.
func TestLookupSameMessageTwice(t *testing.T) {
	t.Parallel()
	m := sms("SM1", body, since.Add(time.Minute))
	delivered := m
	delivered.Status = "delivered"
	m.Status = "sent"
	f := newFake(t)
	f.respond = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("Page") == "" {
			next := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages.json?Page=1&PageToken=PASM1", accountSID)
			w.Write(listPage(accountSID, []message{m}, 0, 1000, &next)) //nolint:errcheck // test
			return
		}
		w.Write(listPage(accountSID, []message{delivered}, 1, 1000, nil)) //nolint:errcheck // test
	}
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].ID != "SM1" {
		t.Errorf("records %+v; want SM1 once", records)
	}
}

// resourceJSON is m as Twilio renders it in a list.
func resourceJSON(t *testing.T, m message) string {
	t.Helper()
	b, err := json.Marshal(m.resource(accountSID))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupRequest(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	if _, err := lookup(t, newAdapter(t, f, func(c *twilio.Config) { c.From = sender }), query); err != nil {
		t.Fatal(err)
	}
	want := []seenRequest{{
		Method: http.MethodGet,
		Path:   "/2010-04-01/Accounts/" + accountSID + "/Messages.json",
		Query: url.Values{
			"To":        {number},
			"From":      {sender},
			"DateSent>": {"2026-03-10T00:00:00Z"}, // Twilio's DateSent>=: on or after Since's day
			"DateSent<": {"2026-03-11T00:00:00Z"}, // DateSent<=: up to the day after Until's
			"PageSize":  {"1000"},
		},
		User:     accountSID,
		Password: authToken,
		Accept:   "application/json",
	}}
	if diff := cmp.Diff(want, f.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestLookupPrefixedAPIBase(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.respond = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/proxy/twilio/2010-04-01/Accounts/"+accountSID+"/Messages.json" {
			twilioError(w, http.StatusNotFound, 20404, "not found")
			return
		}
		w.Write(listPage(accountSID, nil, 0, 1000, nil)) //nolint:errcheck // test
	}
	l := newAdapter(t, f, func(c *twilio.Config) { c.APIBase = f.srv.URL + "/proxy/twilio/" })
	if records, err := lookup(t, l, query); err != nil || len(records) != 0 {
		t.Fatalf("Lookup = %v, %v; want none", records, err)
	}
}

func TestLookupPages(t *testing.T) {
	t.Parallel()
	var messages []message
	for i := range 5 {
		messages = append(messages, sms(fmt.Sprintf("SM%d", 5-i), fmt.Sprintf("text %d", i), until.Add(-time.Duration(i+1)*time.Minute)))
	}
	f := newFake(t, messages...)
	f.pageCap = 2
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range records {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"SM1", "SM2", "SM3", "SM4", "SM5"}, ids); diff != "" {
		t.Errorf("record ids (-want +got):\n%s", diff)
	}
	seen := f.Requests()
	if len(seen) != 3 {
		t.Fatalf("%d requests, want 3 pages", len(seen))
	}
	for i, r := range seen[1:] {
		page := fmt.Sprint(i + 1)
		if r.Query.Get("Page") != page || r.Query.Get("PageToken") == "" || r.Query.Get("To") != number || r.User != accountSID {
			t.Errorf("request for page %s: %+v; want the next_page_uri, authenticated", page, r)
		}
	}
}

func TestLookupTooMany(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		text string
	}{{"matching", body}, {"mismatching", "something else"}} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var messages []message
			for i := range 21 {
				messages = append(messages, sms(fmt.Sprintf("SM%02d", i), tc.text, since.Add(time.Duration(i)*time.Minute)))
			}
			_, err := lookup(t, newAdapter(t, newFake(t, messages...)), query)
			if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent || !strings.Contains(err.Error(), "too many candidates") {
				t.Errorf("21 candidates: %v (%s); want a permanent too many candidates error", err, class)
			}
		})
	}
}

func TestLookupPageCap(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.respond = func(w http.ResponseWriter, r *http.Request) {
		page := r.URL.Query().Get("Page")
		next := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages.json?PageSize=1000&Page=%s1&PageToken=PAx", accountSID, page)
		w.Write(listPage(accountSID, nil, 0, 1000, &next)) //nolint:errcheck // test
	}
	_, err := lookup(t, newAdapter(t, f), query)
	if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent {
		t.Errorf("endless pages: %v (%s); want a permanent error", err, class)
	}
	if n := len(f.Requests()); n != 20 {
		t.Errorf("%d requests, want 20 pages", n)
	}
}

func TestLookupForeignNextPage(t *testing.T) {
	t.Parallel()
	for _, next := range []string{
		"/2010-04-01/Accounts/ACother/Messages.json?Page=1",
		"/2010-04-01/Accounts/" + accountSID + "/Calls.json?Page=1",
		"https://evil.example/2010-04-01/Accounts/" + accountSID + "/Messages.json?Page=1",
		"//evil.example/2010-04-01/Accounts/" + accountSID + "/Messages.json?Page=1",
	} {
		t.Run(next, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.respond = func(w http.ResponseWriter, _ *http.Request) {
				w.Write(listPage(accountSID, nil, 0, 1000, &next)) //nolint:errcheck // test
			}
			if records, err := lookup(t, newAdapter(t, f), query); err == nil {
				t.Errorf("Lookup = %v, nil; want an error", records)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	in := twilioDate(since.Add(time.Minute))
	for _, tc := range []struct {
		desc   string
		status int
		header map[string]string
		body   string
		class  providers.Class
		delay  time.Duration
	}{
		{desc: "401", status: 401, body: `{"code":20003,"message":"Authenticate","more_info":"https://www.twilio.com/docs/errors/20003","status":401}`, class: providers.ClassPermanent},
		{desc: "403", status: 403, body: `{"code":20003,"message":"Forbidden","status":403}`, class: providers.ClassPermanent},
		{desc: "404 naming the account", status: 404, body: `{"code":20404,"message":"The requested resource /2010-04-01/Accounts/` + accountSID + `/Messages.json was not found","status":404}`, class: providers.ClassPermanent},
		{desc: "400 naming the number", status: 400, body: `{"code":21211,"message":"Invalid 'To' Phone Number: ` + number + `","status":400}`, class: providers.ClassPermanent},
		{desc: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"}, body: `{"code":20429,"message":"Too Many Requests","status":429}`, class: providers.ClassRateLimited, delay: 7 * time.Second},
		{desc: "429 without Retry-After", status: 429, body: `{"code":20429,"message":"Too Many Requests","status":429}`, class: providers.ClassRateLimited, delay: time.Second},
		{desc: "500", status: 500, body: `{"code":20500,"message":"Internal Server Error","status":500}`, class: providers.ClassTransient},
		{desc: "503 HTML", status: 503, body: `<html>Service Unavailable</html>`, class: providers.ClassTransient},
		{desc: "a redirect", status: 302, header: map[string]string{"Location": "https://evil.example/"}, class: providers.ClassPermanent},
		{desc: "200 {}", status: 200, body: `{}`, class: providers.ClassTransient},
		{desc: "200 null", status: 200, body: `null`, class: providers.ClassTransient},
		{desc: "200 messages null", status: 200, body: `{"messages":null,"next_page_uri":null}`, class: providers.ClassTransient},
		{desc: "200 Messages misspelt", status: 200, body: `{"messages":[],"Messages":[{"sid":"SM1"}]}`, class: providers.ClassTransient},
		{desc: "200 the list twice", status: 200, body: `{"messages":[]}{"messages":[]}`, class: providers.ClassTransient},
		{desc: "200 HTML", status: 200, body: `<html><body>OK</body></html>`, class: providers.ClassTransient},
		{desc: "200 a message without sid", status: 200, body: `{"messages":[{"to":"` + number + `","date_created":"` + in + `"}]}`, class: providers.ClassTransient},
		{desc: "200 a message without date", status: 200, body: `{"messages":[{"sid":"SM1","to":"` + number + `"}]}`, class: providers.ClassTransient},
		{desc: "200 a message with a bad date", status: 200, body: `{"messages":[{"sid":"SM1","to":"` + number + `","date_created":"2026-03-10 09:46"}]}`, class: providers.ClassTransient},
		{desc: "200 a wrongly typed field", status: 200, body: `{"messages":[{"sid":"SM1","error_code":"` + number + `"}]}`, class: providers.ClassTransient},
		// Keys a lenient reader (twilio-go's encoding/json) would take one
		// way or another: the last of duplicates, any letter case of a name.
		{desc: "200 messages twice, the message last", status: 200, body: `{"messages":[],"messages":[` + resourceJSON(t, sms("SM1", body, since.Add(time.Minute))) + `]}`, class: providers.ClassTransient},
		{desc: "200 messages twice, none last", status: 200, body: `{"messages":[` + resourceJSON(t, sms("SM1", body, since.Add(time.Minute))) + `],"messages":[]}`, class: providers.ClassTransient},
		{desc: "200 a body twice, the matching one last", status: 200,
			body: `{"messages":[` + strings.Replace(resourceJSON(t, sms("SM1", "other text", since.Add(time.Minute))), `"body":`, `"body":"`+body+`","body":`, 1) + `]}`, class: providers.ClassTransient},
		{desc: "200 body and Body", status: 200,
			body: `{"messages":[` + strings.Replace(resourceJSON(t, sms("SM1", "other text", since.Add(time.Minute))), `"body":`, `"Body":"`+body+`","body":`, 1) + `]}`, class: providers.ClassTransient},
		{desc: "200 Body alone", status: 200,
			body: `{"messages":[` + strings.Replace(resourceJSON(t, sms("SM1", body, since.Add(time.Minute))), `"body":`, `"Body":`, 1) + `]}`, class: providers.ClassTransient},
		{desc: "200 SID alone", status: 200,
			body: `{"messages":[` + strings.Replace(resourceJSON(t, sms("SM1", body, since.Add(time.Minute))), `"sid":`, `"SID":`, 1) + `]}`, class: providers.ClassTransient},
		{desc: "200 a key and its LONG S fold", status: 200,
			body: `{"messages":[` + strings.Replace(resourceJSON(t, sms("SM1", body, since.Add(time.Minute))), `"sid":`, `"\u017fid":"SM2","sid":`, 1) + `]}`, class: providers.ClassTransient},
		{desc: "200 invalid UTF-8", status: 200,
			body: `{"messages":[` + strings.Replace(resourceJSON(t, sms("SM1", "caf~", since.Add(time.Minute))), "~", "\xe9", 1) + `]}`, class: providers.ClassTransient},
		{desc: "200 one message twice with different bodies", status: 200,
			body: `{"messages":[` + resourceJSON(t, sms("SM1", body, since.Add(time.Minute))) + `,` + resourceJSON(t, sms("SM1", "other text", since.Add(time.Minute))) + `]}`, class: providers.ClassTransient},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.respond = func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body)) //nolint:errcheck // test
			}
			records, err := lookup(t, newAdapter(t, f), query)
			if err == nil {
				t.Fatalf("Lookup = %v, nil; want an error", records)
			}
			t.Log(err)
			if class, delay := providers.Classify(err); class != tc.class || delay != tc.delay {
				t.Errorf("classified %s %s, want %s %s: %v", class, delay, tc.class, tc.delay, err)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests, want 1: the SDK must not retry", n)
			}
		})
	}
}

func TestLookupUnsearchable(t *testing.T) {
	t.Parallel()
	providertest.RefusedQueries(t, query, func(t *testing.T, q providers.Query) (int, error) {
		f := newFake(t)
		_, err := lookup(t, newAdapter(t, f), q)
		return len(f.Requests()), err
	}, []providertest.Refused{
		{Desc: "no recipient", Edit: func(q *providers.Query) { q.Recipient = "" }, Want: "no recipient"},
		{Desc: "an email address", Edit: func(q *providers.Query) { q.Recipient = "user.42@example.com" }, Want: "not in international form"},
		{Desc: "a number without its country code", Edit: func(q *providers.Query) { q.Recipient = "(555) 010-0777" }, Want: "not in international form"},
		{Desc: "a number without +", Edit: func(q *providers.Query) { q.Recipient = "15550100777" }, Want: "not in international form"},
		{Desc: "a number too short for its country", Edit: func(q *providers.Query) { q.Recipient = "+1 555 01" }, Want: "wrong length"},
		{Desc: "letters for digits", Edit: func(q *providers.Query) { q.Recipient = "+1 555 CALL-NOW" }, Want: "other than digits"},
		{Desc: "a channel address without a number", Edit: func(q *providers.Query) { q.Recipient = "messenger:1234567890" }, Want: "not in international form"},
		{Desc: "no start time", Edit: func(q *providers.Query) { q.Since = time.Time{} }, Want: "no start time"},
		{Desc: "a window that ends before it starts", Edit: func(q *providers.Query) { q.Since = q.Until.Add(time.Hour) }, Want: "ends before it starts"},
	})
}

// TestSDKCannotWrite drives twilio-go's own create, update and delete calls
// through the client a lookup uses: none may reach Twilio, and none may
// carry the credentials anywhere (I1).
func TestSDKCannotWrite(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	adapter := newAdapter(t, f).(*twilio.Adapter)
	api := twilio.SDKForTest(t.Context(), adapter)
	create := &openapi.CreateMessageParams{}
	create.SetTo(number).SetFrom(sender).SetBody(body)
	update := &openapi.UpdateMessageParams{}
	update.SetBody("")
	_, errCreate := api.CreateMessage(create)
	_, errUpdate := api.UpdateMessage("SM1", update)
	errDelete := api.DeleteMessage("SM1", nil)
	for _, err := range []error{errCreate, errUpdate, errDelete} {
		var classified *providers.Error
		if !errors.As(err, &classified) || classified.Class != providers.ClassPermanent {
			t.Errorf("SDK write: %v; want refused, permanent", err)
		}
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("the fake received %d requests, want 0", n)
	}
}

// TestEdgeEnvIgnored: twilio-go's TWILIO_EDGE and TWILIO_REGION would move
// requests to another host; the adapter's requests go to api_base.
func TestEdgeEnvIgnored(t *testing.T) {
	t.Setenv("TWILIO_EDGE", "sydney")
	t.Setenv("TWILIO_REGION", "au1")
	f := newFake(t, sms("SM1", body, since.Add(time.Minute)))
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil || len(records) != 1 {
		t.Fatalf("Lookup = %v, %v; want one record", records, err)
	}
}

func TestCancelBetweenPages(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := newFake(t)
	f.respond = func(w http.ResponseWriter, _ *http.Request) {
		cancel()
		next := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages.json?Page=1&PageToken=PAx", accountSID)
		w.Write(listPage(accountSID, nil, 0, 1000, &next)) //nolint:errcheck // test
	}
	_, err := newAdapter(t, f).Lookup(ctx, query)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Lookup after cancellation: %v; want context.Canceled", err)
	}
	checkNoLeak(t, err)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func(c *twilio.Config) {
		c.AccountSIDEnv, c.AuthTokenEnv = "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"
	}
	providertest.ConfigCases(t, twilio.Kind, valid, []providertest.ConfigCase[*twilio.Config]{
		{Desc: "defaults with both env names"},
		{Desc: "an empty api_base is the default", Block: `api_base = ""`},
		{Desc: "a from number", Block: `from = "` + sender + `"`},
		// The *_env keys are checked by the configuration, through SecretEnvs.
		{Desc: "nothing set", Change: func(c *twilio.Config) { *c = twilio.Config{} }},
		{Desc: "relative api_base", Block: `api_base = "api.twilio.com"`, Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "ftp api_base", Block: `api_base = "ftp://api.twilio.com"`, Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base with credentials", Block: `api_base = "https://AC1:tok@api.twilio.com"`, Want: []string{"api_base: must not carry credentials; use account_sid_env and auth_token_env"}},
		{Desc: "api_base with a query", Block: `api_base = "https://api.twilio.com/?x=1"`, Want: []string{"api_base: must not have a query or a fragment"}},
		{Desc: "api_base with an empty query", Block: `api_base = "https://api.twilio.com/?"`, Want: []string{"api_base: must not have a query or a fragment"}},
		{Desc: "a from twilio-go would mangle", Block: `from = "sender.1"`, Want: []string{`from: must not contain "." followed by a digit (twilio-go drops it from queries)`}},
	})
}

func TestSettings(t *testing.T) {
	t.Parallel()
	c := providertest.ConfigDefaults(t, twilio.Kind, func(c *twilio.Config) { c.AccountSIDEnv, c.AuthTokenEnv = "SID_VAR", "TOKEN_VAR" }, []providers.SecretEnv{
		{Key: "account_sid_env", Name: "SID_VAR", Required: true},
		{Key: "auth_token_env", Name: "TOKEN_VAR", Required: true},
	})
	if c.APIBase != "https://api.twilio.com" || c.From != "" {
		t.Errorf("defaults: %+v", c)
	}
}

func TestKindNewMissingEnv(t *testing.T) {
	t.Parallel()
	cfg := &twilio.Config{AccountSIDEnv: "SID_VAR", AuthTokenEnv: "TOKEN_VAR", APIBase: "https://api.twilio.com"}
	for _, tc := range []struct {
		desc string
		env  map[string]string
		want string
	}{
		{"no SID", map[string]string{"TOKEN_VAR": authToken}, "account_sid_env: environment variable SID_VAR is not set (nor SID_VAR_FILE)"},
		{"no token", map[string]string{"SID_VAR": accountSID}, "auth_token_env: environment variable TOKEN_VAR is not set (nor TOKEN_VAR_FILE)"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			_, err := twilio.Kind.New("sms", cfg, providers.Env{Getenv: func(k string) string { return tc.env[k] }})
			if err == nil || err.Error() != tc.want {
				t.Errorf("New: %v; want %q", err, tc.want)
			}
			checkNoLeak(t, err)
		})
	}
	if _, err := twilio.Kind.New("sms", cfg, providers.Env{Getenv: func(k string) string {
		return map[string]string{"SID_VAR": accountSID, "TOKEN_VAR": authToken}[k]
	}}); err != nil {
		t.Errorf("New with both variables: %v", err)
	}
}

func TestRecordsSorted(t *testing.T) {
	t.Parallel()
	f := newFake(t, sms("SMb", body, since.Add(2*time.Minute)), sms("SMa", body, since.Add(time.Minute)))
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(records, func(x, y providers.Record) int { return x.CreatedAt.Compare(y.CreatedAt) }) {
		t.Errorf("records not oldest first: %+v", records)
	}
}

func TestWithhold(t *testing.T) {
	t.Parallel()
	adapter := newAdapter(t, newFake(t)).(*twilio.Adapter)
	for _, tc := range []struct {
		desc string
		err  error
		keep bool
	}{
		{"the token", providers.Transient(errors.New("dial: " + authToken)), false},
		{"the account", providers.Permanent(errors.New("GET /Accounts/" + strings.ToUpper(accountSID))), false},
		{"the number, URL-encoded", providers.RateLimited(3*time.Second, errors.New("To="+url.QueryEscape(number))), false},
		{"the number, grouped otherwise", providers.Permanent(errors.New("Invalid 'To' Phone Number: 555-0100-777")), false},
		{"the number's digits", providers.Transient(errors.New("queue 15550100777 full")), false},
		{"the token in upper case", providers.Transient(errors.New("dial: " + strings.ToUpper(authToken))), false},
		{"nothing secret", providers.Transient(errors.New("connection reset")), true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got := twilio.Withhold(adapter, tc.err, number)
			checkNoLeak(t, got)
			if (got == tc.err) != tc.keep {
				t.Errorf("Withhold(%v) = %v; keep %v", tc.err, got, tc.keep)
			}
			wantClass, wantDelay := providers.Classify(tc.err)
			if class, delay := providers.Classify(got); class != wantClass || delay != wantDelay {
				t.Errorf("class %s %s, want %s %s", class, delay, wantClass, wantDelay)
			}
		})
	}
}

// TestLookupStates: each status Twilio documents for a message is read
// onto the state the decision uses (the package's one table); an inbound
// message to the number is no candidate; an unknown status or direction is
// a malformed answer, never proof.
func TestLookupStates(t *testing.T) {
	t.Parallel()
	at := since.Add(20 * time.Minute)
	for _, tc := range []struct {
		desc      string
		status    string
		direction string // default outbound-api
		errorCode int
		want      providers.State // "-": no record
		excerpt   string          // default "twilio message status=<status> direction=<direction> segments=1"
		malformed bool
	}{
		{desc: "queued is the effect", status: "queued", want: providers.StateEffect},
		{desc: "accepted is the effect", status: "accepted", want: providers.StateEffect},
		{desc: "sending is the effect", status: "sending", want: providers.StateEffect},
		{desc: "sent is the effect", status: "sent", want: providers.StateEffect},
		{desc: "delivered is the effect", status: "delivered", want: providers.StateEffect},
		{desc: "read is the effect", status: "read", want: providers.StateEffect},
		{desc: "partially_delivered is the effect", status: "partially_delivered", want: providers.StateEffect},
		{desc: "scheduled is in flight", status: "scheduled", want: providers.StateInFlight},
		{desc: "failed", status: "failed", errorCode: 30008, want: providers.StateFailed,
			excerpt: "twilio message status=failed direction=outbound-api segments=1 error_code=30008"},
		{desc: "undelivered", status: "undelivered", errorCode: 30003, want: providers.StateFailed,
			excerpt: "twilio message status=undelivered direction=outbound-api segments=1 error_code=30003"},
		{desc: "canceled", status: "canceled", want: providers.StateFailed},
		{desc: "sent in a call is the effect", status: "delivered", direction: "outbound-call", want: providers.StateEffect},
		{desc: "sent in reply is the effect", status: "delivered", direction: "outbound-reply", want: providers.StateEffect},
		{desc: "an inbound message is no candidate", status: "received", direction: "inbound", want: "-"},
		{desc: "an inbound message being received is no candidate", status: "receiving", direction: "inbound", want: "-"},
		{desc: "received is inbound whatever the direction says", status: "received", want: "-"},
		{desc: "an unknown status is malformed", status: "teleported", malformed: true},
		{desc: "a status in another case is malformed", status: "Delivered", malformed: true},
		{desc: "an unknown direction is malformed", status: "delivered", direction: "sideways", malformed: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			m := sms("SM1", body, at)
			m.Status, m.Direction, m.ErrorCode = tc.status, tc.direction, tc.errorCode
			records, err := lookup(t, newAdapter(t, newFake(t, m)), query)
			if tc.malformed {
				if class, _ := providers.Classify(err); class != providers.ClassTransient || !strings.Contains(fmt.Sprint(err), "malformed answer") {
					t.Fatalf("Lookup = %v, %v; want a transient malformed answer", records, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "-" {
				if len(records) != 0 {
					t.Errorf("records %+v; want none", records)
				}
				return
			}
			if len(records) != 1 {
				t.Fatalf("records %+v; want one", records)
			}
			r := records[0]
			if r.State != tc.want || r.Status != tc.status {
				t.Errorf("state %q, status %q; want %q, %q", r.State, r.Status, tc.want, tc.status)
			}
			excerpt, direction := tc.excerpt, tc.direction
			if direction == "" {
				direction = "outbound-api"
			}
			if excerpt == "" {
				excerpt = fmt.Sprintf("twilio message status=%s direction=%s segments=1", tc.status, direction)
			}
			if r.Excerpt != excerpt {
				t.Errorf("excerpt %q, want %q", r.Excerpt, excerpt)
			}
			// A failed attempt carries no payload hash: it never agrees,
			// even for a decision that would read only the hash.
			if wantHash := tc.want != providers.StateFailed; (r.PayloadHash == query.PayloadHash) != wantHash {
				t.Errorf("payload hash %q; want it: %v", r.PayloadHash, wantHash)
			}
		})
	}
}

// TestLookupInboundNotACandidate: a reply from the recipient, listed with
// the outbound message, is left out; the outbound message alone is the
// record.
func TestLookupInboundNotACandidate(t *testing.T) {
	t.Parallel()
	out := sms("SM1", body, since.Add(20*time.Minute))
	reply := sms("SM2", body, since.Add(21*time.Minute))
	// Listed by the To filter: a message sent to the number from another
	// of the account's numbers, or from the number to itself.
	reply.Status, reply.Direction, reply.From = "received", "inbound", "+15550100888"
	records, err := lookup(t, newAdapter(t, newFake(t, reply, out)), query)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].ID != "SM1" {
		t.Errorf("records %+v; want SM1 alone", records)
	}
}
