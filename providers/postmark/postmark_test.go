package postmark_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postmark"
	"github.com/sweeper/sweeper/providers/providertest"
)

// The token and the recipient must never appear in an error (I7).
const (
	serverToken = "pm-server-0f1e2d3c-SECRET-4b5a69788"
	recipient   = "jane.doe+receipts@example.com"
	opKey       = "order-1042-receipt"
	subject     = "Your receipt #1042"
)

var (
	firstAttempt = time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	// query is a keyed lookup an hour after the first attempt: the settle
	// window has passed.
	query = providers.Query{
		OpKey:          opKey,
		Recipient:      recipient,
		Action:         "send_email",
		PayloadHash:    hashOf(subject),
		FirstAttemptAt: firstAttempt,
		Since:          firstAttempt.Add(-15 * time.Minute),
		Until:          firstAttempt.Add(time.Hour),
	}
)

// hashOf is the payload hash a workflow stores for an email.
var hashOf = providertest.SubjectHash

// sent is a message to recipient carrying the op_key, received at.
func sent(id string, at time.Time) message {
	return message{ID: id, To: recipient, Subject: subject, Received: at, Metadata: map[string]string{"op_key": opKey, "order": "1042"}}
}

func newAdapter(t *testing.T, f *fakePostmark, edit ...func(*postmark.Config)) providers.Lookup {
	t.Helper()
	set := func(c *postmark.Config) { c.ServerTokenEnv, c.APIBase = "POSTMARK_SERVER_TOKEN", f.srv.URL }
	env := providertest.Env(nil, "POSTMARK_SERVER_TOKEN", serverToken)
	return providertest.NewLookup(t, postmark.Kind, "mailer", env, append([]func(*postmark.Config){set}, edit...)...)
}

// lookup runs q and checks that no error names the token or the
// recipient, in any encoding a URL would give them.
func lookup(t *testing.T, l providers.Lookup, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	return providertest.LookupHiding(t, l, q, []string{serverToken, recipient, url.QueryEscape(recipient)}, []string{"@", subject})
}

func TestLookupRecord(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(3 * time.Second)
	f := newFake(t, sent("b7bc2f4a-e38e-4336-af7d-e6c392c2f817", at))
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.Record{{
		ID:          "b7bc2f4a-e38e-4336-af7d-e6c392c2f817",
		CreatedAt:   at,
		Recipient:   recipient,
		Fields:      map[string]any{"subject": subject},
		PayloadHash: query.PayloadHash,
		Excerpt:     "postmark message status=Sent stream=outbound",
		State:       providers.StateEffect,
		Status:      "Sent",
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
		edit   func(*postmark.Config)
		q      func(*providers.Query)
		extend url.Values
	}{
		{desc: "defaults"},
		{desc: "a message stream and a metadata key", edit: func(c *postmark.Config) { c.MessageStream, c.MetadataKey = "broadcast", "sweeper_op" },
			extend: url.Values{"messagestream": {"broadcast"}, "metadata_sweeper_op": {opKey}}},
		{desc: "no recipient searches by the key alone", q: func(q *providers.Query) { q.Recipient = "" }},
		{desc: "the recipient as the ledger holds it, trimmed", q: func(q *providers.Query) { q.Recipient = " " + recipient + "\n" }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			q := query
			if tc.q != nil {
				tc.q(&q)
			}
			if _, err := lookup(t, newAdapter(t, f, func(c *postmark.Config) {
				if tc.edit != nil {
					tc.edit(c)
				}
			}), q); err != nil {
				t.Fatal(err)
			}
			want := url.Values{
				"count":  {"500"},
				"offset": {"0"},
				// Eastern Standard Time, a day wider on each side: Postmark
				// reads the dates in Eastern Time, with or without daylight
				// saving.
				"fromdate":        {"2026-03-09T08:45:00"},
				"todate":          {"2026-03-11T10:00:00"},
				"metadata_op_key": {opKey},
			}
			if strings.TrimSpace(q.Recipient) != "" {
				want.Set("recipient", recipient)
			}
			if tc.extend != nil {
				want.Del("metadata_op_key")
				for k, v := range tc.extend {
					want[k] = v
				}
			}
			reqs := f.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Method != http.MethodGet || got.Path != "/messages/outbound" || got.Token != serverToken || got.Accept != "application/json" {
				t.Errorf("request %+v", got)
			}
			if diff := cmp.Diff(want, got.Query); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(time.Minute)
	withStatus := func(m message, status string) message { m.Status = status; return m }
	withMeta := func(m message, meta map[string]string) message { m.Metadata = meta; return m }
	for _, tc := range []struct {
		desc     string
		messages []message
		want     []string // record ids, as Postmark listed them
		noHash   []string // records without a payload hash
	}{
		{desc: "one message", messages: []message{sent("m1", at)}, want: []string{"m1"}},
		{desc: "nothing found", want: []string{}},
		{desc: "two messages with the key are both returned", messages: []message{sent("m2", at.Add(time.Minute)), sent("m1", at)}, want: []string{"m2", "m1"}},
		{desc: "the key's value in another case is no match", messages: []message{withMeta(sent("m1", at), map[string]string{"op_key": strings.ToUpper(opKey)})}, want: []string{}},
		{desc: "the key in another case is no match", messages: []message{withMeta(sent("m1", at), map[string]string{"OP_KEY": opKey})}, want: []string{}},
		{desc: "a value with surrounding space is no match", messages: []message{withMeta(sent("m1", at), map[string]string{"op_key": opKey + " "})}, want: []string{}},
		{desc: "a message without metadata is no match", messages: []message{withMeta(sent("m1", at), nil)}, want: []string{}},
		{desc: "a queued message is proof", messages: []message{withStatus(sent("m1", at), "Queued")}, want: []string{"m1"}},
		{desc: "a processed message is proof", messages: []message{withStatus(sent("m1", at), "Processed")}, want: []string{"m1"}},
		{desc: "a bounced message (failed) carries no hash", messages: []message{withStatus(sent("m1", at), "Bounced")}, want: []string{"m1"}, noHash: []string{"m1"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			records, err := lookup(t, newAdapter(t, newFake(t, tc.messages...)), query)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, r := range records {
				ids = append(ids, r.ID)
				noHash := false
				for _, id := range tc.noHash {
					noHash = noHash || id == r.ID
				}
				switch {
				case noHash && r.PayloadHash != "":
					t.Errorf("record %s: payload hash %s, want none", r.ID, r.PayloadHash)
				case !noHash && r.PayloadHash != hashOf(subject):
					t.Errorf("record %s: payload hash %q, want the hash of {subject}", r.ID, r.PayloadHash)
				}
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("record ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLookupRecipient: a message to several people carries the
// recipient the ledger names, as Postmark writes it.
func TestLookupRecipient(t *testing.T) {
	t.Parallel()
	m := sent("m1", firstAttempt)
	m.To = "Ops <ops@acme.example>"
	m.Recipients = []string{"ops@acme.example", "Jane.Doe+Receipts@Example.com"}
	records, err := lookup(t, newAdapter(t, newFake(t, m)), query)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Recipient != "Jane.Doe+Receipts@Example.com" {
		t.Errorf("records %+v; want m1 to Jane.Doe+Receipts@Example.com", records)
	}
}

func TestLookupPages(t *testing.T) {
	t.Parallel()
	var messages []message
	for i := range 1001 {
		messages = append(messages, sent(fmt.Sprintf("m%04d", i), firstAttempt.Add(time.Duration(1001-i)*time.Second)))
	}
	f := newFake(t, messages...)
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1001 || records[0].ID != "m0000" || records[1000].ID != "m1000" {
		t.Errorf("%d records; want the 1001 messages in Postmark's order", len(records))
	}
	var offsets []string
	for _, r := range f.Requests() {
		offsets = append(offsets, r.Query.Get("offset")+"+"+r.Query.Get("count"))
	}
	if diff := cmp.Diff([]string{"0+500", "500+500", "1000+500"}, offsets); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// TestLookupPageLimits: Postmark serves at most 10,000 messages of one
// search; an answer that says more, or pages that contradict their
// TotalCount, are no answer to act on.
func TestLookupPageLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		pages    func(offset int) []byte
		class    providers.Class
		requests int
	}{
		{desc: "more than 10,000 matches", pages: func(int) []byte { return searchPage(10001, sent("m1", firstAttempt)) }, class: providers.ClassPermanent, requests: 1},
		{desc: "a short page before TotalCount", pages: func(offset int) []byte {
			if offset == 0 {
				return searchPage(600, sent("m1", firstAttempt))
			}
			return searchPage(600)
		}, class: providers.ClassTransient, requests: 1},
		{desc: "a page longer than asked", pages: func(int) []byte {
			var ms []message
			for i := range 501 {
				ms = append(ms, sent(fmt.Sprintf("m%d", i), firstAttempt))
			}
			return searchPage(501, ms...)
		}, class: providers.ClassTransient, requests: 1},
		{desc: "a negative TotalCount", pages: func(int) []byte { return searchPage(-1) }, class: providers.ClassTransient, requests: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.respond = func(w http.ResponseWriter, r *http.Request) {
				var offset int
				fmt.Sscan(r.URL.Query().Get("offset"), &offset) //nolint:errcheck // test
				w.Header().Set("Content-Type", "application/json")
				w.Write(tc.pages(offset)) //nolint:errcheck // test
			}
			_, err := lookup(t, newAdapter(t, f), query)
			if class, _ := providers.Classify(err); err == nil || class != tc.class {
				t.Errorf("Lookup: %v (%s); want a %s error", err, class, tc.class)
			}
			if n := len(f.Requests()); n > tc.requests+1 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

// resourceJSON is m as Postmark lists it.
func resourceJSON(t *testing.T, m message) string {
	t.Helper()
	b, err := json.Marshal(m.resource())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	m := resourceJSON(t, sent("m1", firstAttempt))
	page := func(items ...string) string {
		return `{"TotalCount":` + fmt.Sprint(len(items)) + `,"Messages":[` + strings.Join(items, ",") + `]}`
	}
	for _, tc := range []struct {
		desc   string
		status int
		header map[string]string
		body   string
		class  providers.Class
		delay  time.Duration
	}{
		{desc: "401 bad token", status: 401, body: `{"ErrorCode":10,"Message":"Request does not contain a valid Server token."}`, class: providers.ClassPermanent},
		{desc: "422 naming the recipient", status: 422, body: `{"ErrorCode":300,"Message":"Invalid recipient '` + recipient + `'"}`, class: providers.ClassPermanent},
		{desc: "404", status: 404, body: `{"ErrorCode":0,"Message":"Not found."}`, class: providers.ClassPermanent},
		{desc: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"}, body: `{"ErrorCode":0,"Message":"Rate limit exceeded"}`, class: providers.ClassRateLimited, delay: 7 * time.Second},
		{desc: "429 without Retry-After", status: 429, body: `{"ErrorCode":0,"Message":"Rate limit exceeded"}`, class: providers.ClassRateLimited, delay: time.Second},
		{desc: "500", status: 500, body: `{"ErrorCode":0,"Message":"Internal Server Error"}`, class: providers.ClassTransient},
		{desc: "503 HTML", status: 503, body: `<html>Service Unavailable</html>`, class: providers.ClassTransient},
		{desc: "a redirect", status: 302, header: map[string]string{"Location": "https://evil.example/"}, class: providers.ClassPermanent},
		{desc: "200 {}", status: 200, body: `{}`, class: providers.ClassTransient},
		{desc: "200 null", status: 200, body: `null`, class: providers.ClassTransient},
		{desc: "200 Messages null", status: 200, body: `{"TotalCount":0,"Messages":null}`, class: providers.ClassTransient},
		{desc: "200 no TotalCount", status: 200, body: `{"Messages":[]}`, class: providers.ClassTransient},
		{desc: "200 TotalCount a string", status: 200, body: `{"TotalCount":"0","Messages":[]}`, class: providers.ClassTransient},
		{desc: "200 an error body", status: 200, body: `{"ErrorCode":10,"Message":"nope"}`, class: providers.ClassTransient},
		{desc: "200 the page twice", status: 200, body: page() + page(), class: providers.ClassTransient},
		{desc: "200 Messages twice, the message last", status: 200, body: `{"TotalCount":1,"Messages":[],"Messages":[` + m + `]}`, class: providers.ClassTransient},
		{desc: "200 Messages and messages", status: 200, body: `{"TotalCount":1,"messages":[],"Messages":[` + m + `]}`, class: providers.ClassTransient},
		{desc: "200 a message without MessageID", status: 200, body: page(strings.Replace(m, `"MessageID":"m1",`, ``, 1)), class: providers.ClassTransient},
		{desc: "200 a message with a blank MessageID", status: 200, body: page(strings.Replace(m, `"MessageID":"m1"`, `"MessageID":" m1"`, 1)), class: providers.ClassTransient},
		{desc: "200 a message without ReceivedAt", status: 200, body: page(strings.Replace(m, `"ReceivedAt":`, `"Received":`, 1)), class: providers.ClassTransient},
		{desc: "200 a date without an offset", status: 200, body: page(strings.Replace(m, `-04:00"`, `"`, 1)), class: providers.ClassTransient},
		{desc: "200 a metadata value that is not a string", status: 200, body: page(strings.Replace(m, `"op_key":"`+opKey+`"`, `"op_key":1042`, 1)), class: providers.ClassTransient},
		{desc: "200 op_key twice in the metadata", status: 200, body: page(strings.Replace(m, `"op_key":"`+opKey+`"`, `"op_key":"other","op_key":"`+opKey+`"`, 1)), class: providers.ClassTransient},
		{desc: "200 op_key and OP_KEY", status: 200, body: page(strings.Replace(m, `"op_key":"`+opKey+`"`, `"OP_KEY":"other","op_key":"`+opKey+`"`, 1)), class: providers.ClassTransient},
		{desc: "200 Subject and subject", status: 200, body: page(strings.Replace(m, `"Subject":`, `"subject":"other","Subject":`, 1)), class: providers.ClassTransient},
		{desc: "200 SUBJECT alone", status: 200, body: page(strings.Replace(m, `"Subject":`, `"SUBJECT":`, 1)), class: providers.ClassTransient},
		{desc: "200 invalid UTF-8", status: 200, body: page(strings.Replace(m, `Your receipt`, "Your r\xe9ceipt", 1)), class: providers.ClassTransient},
		{desc: "200 one message twice, different subjects", status: 200,
			body: page(m, strings.Replace(m, `"Subject":"`+subject+`"`, `"Subject":"Another"`, 1)), class: providers.ClassTransient},
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
			if class, delay := providers.Classify(err); class != tc.class || delay != tc.delay {
				t.Errorf("classified %s %s, want %s %s: %v", class, delay, tc.class, tc.delay, err)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// TestLookupSameMessageTwice: a message on two pages (the list moved
// between requests) is one record, even if its status moved on.
func TestLookupSameMessageTwice(t *testing.T) {
	t.Parallel()
	queued := sent("m1", firstAttempt)
	queued.Status = "Queued"
	f := newFake(t)
	f.respond = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("offset") == "0" {
			var ms []message
			for i := range 499 {
				ms = append(ms, sent(fmt.Sprintf("other%d", i), firstAttempt))
			}
			w.Write(searchPage(501, append(ms, queued)...)) //nolint:errcheck // test
			return
		}
		w.Write(searchPage(501, sent("m1", firstAttempt))) //nolint:errcheck // test
	}
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 500 {
		t.Errorf("%d records, want 500 (m1 once)", len(records))
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
		{Desc: "no start time", Edit: func(q *providers.Query) { q.Since = time.Time{} }, Want: "no start time"},
		{Desc: "a window that ends before it starts", Edit: func(q *providers.Query) { q.Since = q.Until.Add(time.Hour) }, Want: "ends before it starts"},
	})
}

// TestSendEndpointsRefused: the client a lookup uses cannot reach
// Postmark's send endpoints — the request is refused before it leaves the
// process (I1).
func TestSendEndpointsRefused(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	client := postmark.HTTPClientForTest(newAdapter(t, f).(*postmark.Adapter))
	for _, path := range []string{"/email", "/email/batch", "/email/withTemplate", "/email/batchWithTemplates"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+path,
			strings.NewReader(`{"From":"receipts@acme.example","To":"`+recipient+`","Subject":"x","TextBody":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Postmark-Server-Token", serverToken)
		resp, err := client.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent {
			t.Errorf("POST %s: %v (%s); want refused, permanent", path, err, class)
		}
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("Postmark received %d requests, want 0", n)
	}
}

func TestMatching(t *testing.T) {
	t.Parallel()
	l := newAdapter(t, newFake(t)).(providers.MatchingLookup)
	if got := l.Matching(); got != (providers.Matching{ByKey: true}) {
		t.Errorf("Matching = %+v, want by key", got)
	}
}
