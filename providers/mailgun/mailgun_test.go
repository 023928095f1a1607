package mailgun_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mg "github.com/mailgun/mailgun-go/v4"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/mailgun"
	"github.com/sweeper/sweeper/providers/providertest"
)

// The key and the recipient must never appear in an error (I7).
const (
	apiKey    = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0-SECRET"
	domain    = "mg.acme.example"
	recipient = "jane.doe+receipts@example.com"
	opKey     = "order-1042-receipt"
	subject   = "Your receipt #1042"
	messageID = "20260310140003.1.0F3A6E2C9B1D4E5F@mg.acme.example"
)

var (
	firstAttempt = time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	// query is a keyed lookup two hours after the first attempt: the
	// settle window has passed.
	query = providers.Query{
		OpKey:          opKey,
		Recipient:      recipient,
		Action:         "send_email",
		PayloadHash:    hashOf(subject),
		FirstAttemptAt: firstAttempt,
		Since:          firstAttempt.Add(-15 * time.Minute),
		Until:          firstAttempt.Add(2 * time.Hour),
	}
)

// hashOf is the payload hash a workflow stores for an email.
var hashOf = providertest.SubjectHash

// accepted and delivered are a message's events, carrying the op_key.
func accepted(id, msgID string, at time.Time) event {
	return event{ID: id, Name: "accepted", At: at, Recipient: recipient, MessageID: msgID, Subject: subject, Vars: map[string]any{"op_key": opKey}}
}

func delivered(id, msgID string, at time.Time) event {
	e := accepted(id, msgID, at)
	e.Name = "delivered"
	return e
}

func newAdapter(t *testing.T, f *fakeMailgun, edit ...func(*mailgun.Config)) providers.Lookup {
	t.Helper()
	set := func(c *mailgun.Config) { c.APIKeyEnv, c.Domain, c.APIBase = "MAILGUN_API_KEY", domain, f.srv.URL }
	env := providertest.Env(nil, "MAILGUN_API_KEY", apiKey)
	return providertest.NewLookup(t, mailgun.Kind, "mailer", env, append([]func(*mailgun.Config){set}, edit...)...)
}

// lookup runs q and checks that no error names the key or the recipient.
func lookup(t *testing.T, l providers.Lookup, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	return providertest.LookupHiding(t, l, q, []string{apiKey, recipient, url.QueryEscape(recipient)}, []string{"@", subject})
}

func TestLookupRecord(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(3*time.Second + 96436*time.Microsecond)
	f := newFake(t, accepted("ev1", messageID, at), delivered("ev2", messageID, at.Add(2*time.Second)))
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.Record{{
		ID:          messageID,
		CreatedAt:   at,
		Recipient:   recipient,
		Fields:      map[string]any{"subject": subject},
		PayloadHash: query.PayloadHash,
		Excerpt:     "mailgun message events=accepted,delivered",
		State:       providers.StateEffect,
		Status:      "delivered",
	}}
	if diff := cmp.Diff(want, records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if len(records) == 1 && records[0].PayloadHash != providertest.SubjectVector {
		t.Errorf("payload hash of {\"subject\": %q} = %s, want the documented vector %s", subject, records[0].PayloadHash, providertest.SubjectVector)
	}
}

func TestLookupRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		region string
		public string
	}{
		{"US region", "us", "https://api.mailgun.net/v3"},
		{"EU region", "eu", "https://api.eu.mailgun.net/v3"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, accepted("ev1", messageID, firstAttempt))
			f.public = tc.public
			if _, err := lookup(t, newAdapter(t, f, func(c *mailgun.Config) { c.Region = tc.region }), query); err != nil {
				t.Fatal(err)
			}
			reqs := f.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2 (the page, then the empty page after it)", len(reqs))
			}
			want := seen{
				Method: http.MethodGet,
				Path:   "/v3/" + domain + "/events",
				Query: url.Values{
					"begin":     {"Tue, 10 Mar 2026 13:45:00 +0000"},
					"end":       {"Tue, 10 Mar 2026 16:00:01 +0000"},
					"ascending": {"yes"},
					"limit":     {"300"},
					"recipient": {recipient},
					"event":     {"accepted OR delivered OR failed OR rejected"},
				},
				User:     "api",
				Password: apiKey,
			}
			if diff := cmp.Diff(want, reqs[0]); diff != "" {
				t.Errorf("first request (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(reqs[1].Path, "/v3/"+domain+"/events/") || reqs[1].User != "api" || reqs[1].Password != apiKey {
				t.Errorf("second request %+v; want the next page, authenticated", reqs[1])
			}
		})
	}
}

// TestLookupPrefixedAPIBase: api_base may carry a path (a proxy); the
// region's /v3 paths follow it.
func TestLookupPrefixedAPIBase(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.respond = func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/proxy/mailgun/v3/"+domain+"/events") {
			mailgunError(w, http.StatusNotFound, "not found")
			return
		}
		w.Write(eventsPage(f.public + "/" + domain + "/events/eyJ9")) //nolint:errcheck // test
	}
	l := newAdapter(t, f, func(c *mailgun.Config) { c.APIBase = f.srv.URL + "/proxy/mailgun/" })
	if records, err := lookup(t, l, query); err != nil || len(records) != 0 {
		t.Fatalf("Lookup = %v, %v; want none", records, err)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(time.Minute)
	with := func(e event, edit func(*event)) event { edit(&e); return e }
	for _, tc := range []struct {
		desc   string
		events []event
		want   []string // record ids, oldest first
	}{
		{desc: "accepted only", events: []event{accepted("e1", "m1@x", at)}, want: []string{"m1@x"}},
		{desc: "delivered only (the accepted event aged out)", events: []event{delivered("e1", "m1@x", at)}, want: []string{"m1@x"}},
		{desc: "nothing found", want: []string{}},
		{desc: "two messages are two records", events: []event{accepted("e1", "m1@x", at), accepted("e2", "m2@x", at.Add(time.Second)), delivered("e3", "m1@x", at.Add(2*time.Second))},
			want: []string{"m1@x", "m2@x"}},
		{desc: "the op_key in another case is no match", events: []event{with(accepted("e1", "m1@x", at), func(e *event) { e.Vars = map[string]any{"op_key": strings.ToUpper(opKey)} })}, want: []string{}},
		{desc: "the variable in another case is no match", events: []event{with(accepted("e1", "m1@x", at), func(e *event) { e.Vars = map[string]any{"OP_KEY": opKey} })}, want: []string{}},
		{desc: "a number is no match", events: []event{with(accepted("e1", "m1@x", at), func(e *event) { e.Vars = map[string]any{"op_key": 1042} })}, want: []string{}},
		{desc: "no user variables is no match", events: []event{with(accepted("e1", "m1@x", at), func(e *event) { e.Vars = nil })}, want: []string{}},
		{desc: "another operation's message is left out", events: []event{with(accepted("e1", "m0@x", at), func(e *event) { e.Vars = map[string]any{"op_key": "order-1041-receipt"} }), accepted("e2", "m1@x", at)},
			want: []string{"m1@x"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			records, err := lookup(t, newAdapter(t, newFake(t, tc.events...)), query)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, r := range records {
				ids = append(ids, r.ID)
				if r.PayloadHash != hashOf(subject) || r.CreatedAt.IsZero() {
					t.Errorf("record %+v: want the hash of {subject} and a date", r)
				}
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("record ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupPages(t *testing.T) {
	t.Parallel()
	var events []event
	for i := range 5 {
		events = append(events, accepted(fmt.Sprintf("e%d", i), fmt.Sprintf("m%d@x", i), firstAttempt.Add(time.Duration(i)*time.Minute)))
	}
	f := newFake(t, events...)
	f.pageCap = 2
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range records {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"m0@x", "m1@x", "m2@x", "m3@x", "m4@x"}, ids); diff != "" {
		t.Errorf("record ids (-want +got):\n%s", diff)
	}
	if n := len(f.Requests()); n != 4 {
		t.Errorf("%d requests, want 3 pages and the empty one after them", n)
	}
}

func TestLookupPageCap(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	var n int
	f.respond = func(w http.ResponseWriter, _ *http.Request) {
		n++
		w.Write(eventsPage(fmt.Sprintf("%s/%s/events/page%d", f.public, domain, n), accepted(fmt.Sprintf("e%d", n), "m1@x", firstAttempt))) //nolint:errcheck // test
	}
	_, err := lookup(t, newAdapter(t, f), query)
	if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent {
		t.Errorf("endless pages: %v (%s); want a permanent error", err, class)
	}
	if n := len(f.Requests()); n != 20 {
		t.Errorf("%d requests, want 20 pages", n)
	}
}

// TestLookupRepeatedPage: a page whose next URL is itself would only
// repeat; the traversal ends there.
func TestLookupRepeatedPage(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.respond = func(w http.ResponseWriter, _ *http.Request) {
		w.Write(eventsPage(f.public+"/"+domain+"/events/same", accepted("e1", messageID, firstAttempt))) //nolint:errcheck // test
	}
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil || len(records) != 1 {
		t.Fatalf("Lookup = %v, %v; want one record", records, err)
	}
	if n := len(f.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestLookupForeignNextPage(t *testing.T) {
	t.Parallel()
	for _, next := range []string{
		"https://evil.example/v3/" + domain + "/events/abc",
		"http://api.mailgun.net/v3/" + domain + "/events/abc",
		"https://api.mailgun.net/v3/other.example/events/abc",
		"https://api.mailgun.net/v3/" + domain + "/messages",
		"https://api.mailgun.net/v3/" + domain + "/events/abc/def",
		"https://api.eu.mailgun.net/v3/" + domain + "/events/abc",
	} {
		t.Run(next, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.respond = func(w http.ResponseWriter, _ *http.Request) {
				w.Write(eventsPage(next, accepted("e1", messageID, firstAttempt))) //nolint:errcheck // test
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

// itemJSON is e as Mailgun lists it.
func itemJSON(t *testing.T, e event) string {
	t.Helper()
	b, err := json.Marshal(e.item())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	it := itemJSON(t, accepted("e1", messageID, firstAttempt))
	paging := `"paging":{"next":"https://api.mailgun.net/v3/` + domain + `/events/n","first":"f","last":"l","previous":"p"}`
	page := func(items ...string) string { return `{"items":[` + strings.Join(items, ",") + `],` + paging + `}` }
	for _, tc := range []struct {
		desc   string
		status int
		header map[string]string
		body   string
		class  providers.Class
		delay  time.Duration
	}{
		{desc: "401", status: 401, body: "Forbidden", class: providers.ClassPermanent},
		{desc: "403", status: 403, body: `{"message":"Forbidden"}`, class: providers.ClassPermanent},
		{desc: "404 domain not found", status: 404, body: `{"message":"Domain not found: ` + domain + `"}`, class: providers.ClassPermanent},
		{desc: "400 naming the recipient", status: 400, body: `{"message":"Invalid recipient: ` + recipient + `"}`, class: providers.ClassPermanent},
		{desc: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"}, body: `{"message":"Too many requests"}`, class: providers.ClassRateLimited, delay: 7 * time.Second},
		{desc: "429 without Retry-After", status: 429, body: `{"message":"Too many requests"}`, class: providers.ClassRateLimited, delay: time.Second},
		{desc: "500", status: 500, body: `{"message":"Internal Server Error"}`, class: providers.ClassTransient},
		{desc: "503 HTML", status: 503, body: `<html>Service Unavailable</html>`, class: providers.ClassTransient},
		{desc: "a redirect", status: 302, header: map[string]string{"Location": "https://evil.example/"}, class: providers.ClassPermanent},
		{desc: "200 {}", status: 200, body: `{}`, class: providers.ClassTransient},
		{desc: "200 null", status: 200, body: `null`, class: providers.ClassTransient},
		{desc: "200 items null", status: 200, body: `{"items":null,` + paging + `}`, class: providers.ClassTransient},
		{desc: "200 no paging", status: 200, body: `{"items":[` + it + `]}`, class: providers.ClassTransient},
		{desc: "200 no next page", status: 200, body: `{"items":[` + it + `],"paging":{"first":"f"}}`, class: providers.ClassTransient},
		{desc: "200 the page twice", status: 200, body: page() + page(), class: providers.ClassTransient},
		{desc: "200 items twice, the event last", status: 200, body: `{"items":[],"items":[` + it + `],` + paging + `}`, class: providers.ClassTransient},
		{desc: "200 Items and items", status: 200, body: `{"Items":[` + it + `],"items":[],` + paging + `}`, class: providers.ClassTransient},
		{desc: "200 an event without message-id", status: 200, body: page(strings.Replace(it, `"message-id":"`+messageID+`",`, ``, 1)), class: providers.ClassTransient},
		{desc: "200 an event with a blank message-id", status: 200, body: page(strings.Replace(it, `"message-id":"`+messageID+`"`, `"message-id":" "`, 1)), class: providers.ClassTransient},
		{desc: "200 a timestamp as a string", status: 200, body: page(strings.Replace(it, `"timestamp":`, `"timestamp":"1773151200","x":`, 1)), class: providers.ClassTransient},
		{desc: "200 no timestamp", status: 200, body: page(strings.Replace(it, `"timestamp":`, `"time":`, 1)), class: providers.ClassTransient},
		{desc: "200 a negative timestamp", status: 200, body: page(strings.Replace(it, `"timestamp":`, `"timestamp":-1,"x":`, 1)), class: providers.ClassTransient},
		{desc: "200 a timestamp past the year 3000", status: 200, body: page(strings.Replace(it, `"timestamp":`, `"timestamp":1e300,"x":`, 1)), class: providers.ClassTransient},
		{desc: "200 an unknown event", status: 200, body: page(strings.Replace(it, `"event":"accepted"`, `"event":"teleported"`, 1)), class: providers.ClassTransient},
		{desc: "200 op_key twice", status: 200, body: page(strings.Replace(it, `"op_key":"`+opKey+`"`, `"op_key":"x","op_key":"`+opKey+`"`, 1)), class: providers.ClassTransient},
		{desc: "200 op_key and OP_KEY", status: 200, body: page(strings.Replace(it, `"op_key":"`+opKey+`"`, `"OP_KEY":"x","op_key":"`+opKey+`"`, 1)), class: providers.ClassTransient},
		{desc: "200 Recipient alone", status: 200, body: page(strings.Replace(it, `"recipient":`, `"Recipient":`, 1)), class: providers.ClassTransient},
		{desc: "200 subject and Subject", status: 200, body: page(strings.Replace(it, `"subject":`, `"Subject":"other","subject":`, 1)), class: providers.ClassTransient},
		{desc: "200 a key and its KELVIN SIGN fold", status: 200, body: page(strings.Replace(it, `"op_key":`, `"op_\u212aey":"x","op_key":`, 1)), class: providers.ClassTransient},
		{desc: "200 invalid UTF-8", status: 200, body: page(strings.Replace(it, `Your receipt`, "Your r\xe9ceipt", 1)), class: providers.ClassTransient},
		{desc: "200 one message with two subjects", status: 200,
			body: page(it, itemJSON(t, func() event {
				e := delivered("e2", messageID, firstAttempt.Add(time.Second))
				e.Subject = "Another"
				return e
			}())), class: providers.ClassTransient},
		{desc: "200 one message to two recipients", status: 200,
			body: page(it, itemJSON(t, func() event {
				e := delivered("e2", messageID, firstAttempt.Add(time.Second))
				e.Recipient = "ops@acme.example"
				return e
			}())), class: providers.ClassTransient},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.respond = func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v3/"+domain+"/events" {
					w.Write(eventsPage(f.public + "/" + domain + "/events/end")) //nolint:errcheck // test
					return
				}
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
			if class, delay := providers.Classify(err); class != tc.class || delay != tc.delay {
				t.Errorf("classified %s %s, want %s %s: %v", class, delay, tc.class, tc.delay, err)
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
		{Desc: "no op_key", Edit: func(q *providers.Query) { q.OpKey = "" }, Want: "no op_key"},
		{Desc: "no recipient", Edit: func(q *providers.Query) { q.Recipient = " " }, Want: "no recipient"},
		{Desc: "no start time", Edit: func(q *providers.Query) { q.Since = time.Time{} }, Want: "no start time"},
		{Desc: "a window that ends before it starts", Edit: func(q *providers.Query) { q.Since = q.Until.Add(time.Hour) }, Want: "ends before it starts"},
	})
}

// TestSDKCannotWrite drives mailgun-go's own send and write calls, and a
// raw POST to the messages endpoint, through the client a lookup uses:
// none may reach Mailgun (I1).
func TestSDKCannotWrite(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	adapter := newAdapter(t, f).(*mailgun.Adapter)
	sdk := mailgun.SDKForTest(adapter)
	ctx := t.Context()
	msg := mg.NewMessage("receipts@"+domain, subject, "text", recipient)
	_, _, errSend := sdk.Send(ctx, msg)
	_, _, errResend := sdk.ReSend(ctx, "https://api.mailgun.net/v3/domains/"+domain+"/messages/key", recipient)
	errBounce := sdk.AddBounce(ctx, recipient, "550", "x")
	errDelete := sdk.DeleteBounce(ctx, recipient)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.mailgun.net/v3/"+domain+"/messages", strings.NewReader("to="+url.QueryEscape(recipient)))
	if err != nil {
		t.Fatal(err)
	}
	resp, errRaw := sdk.Client().Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	for i, err := range []error{errSend, errResend, errBounce, errDelete, errRaw} {
		var classified *providers.Error
		if !errors.As(err, &classified) || classified.Class != providers.ClassPermanent {
			t.Errorf("write %d: %v; want refused, permanent", i, err)
		}
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("Mailgun received %d requests, want 0", n)
	}
}

func TestMatching(t *testing.T) {
	t.Parallel()
	l := newAdapter(t, newFake(t)).(providers.MatchingLookup)
	if got := l.Matching(); got != (providers.Matching{ByKey: true}) {
		t.Errorf("Matching = %+v, want by key", got)
	}
}
