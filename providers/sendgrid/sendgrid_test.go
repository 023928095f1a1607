package sendgrid_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sendgrid/rest"
	sg "github.com/sendgrid/sendgrid-go"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/sendgrid"
)

// The key and the recipient must never appear in an error (I7).
const (
	apiKey    = "SG.fakeKeyId0123.SECRET-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
	recipient = "jane.doe+receipts@example.com"
	opKey     = "order-1042-receipt"
	subject   = "Your receipt #1042"
	msgID     = "Xj5LmNkWSOqRbdvOpR34BA.recvd-85abf8d92c-3qfgp-2-7890E356-43C.1"
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

// sent is a message to recipient carrying the op_key.
func sent(id string, at time.Time) message {
	return message{ID: id, To: recipient, Subject: subject, Created: at, Args: map[string]string{"op_key": opKey, "order": "1042"}}
}

func newAdapter(t *testing.T, f *fakeSendGrid, edit ...func(*sendgrid.Config)) providers.Lookup {
	t.Helper()
	set := func(c *sendgrid.Config) { c.APIKeyEnv, c.APIBase = "SENDGRID_API_KEY", f.srv.URL }
	env := providertest.Env(nil, "SENDGRID_API_KEY", apiKey)
	return providertest.NewLookup(t, sendgrid.Kind, "mailer", env, append([]func(*sendgrid.Config){set}, edit...)...)
}

// lookup runs q and checks that no error names the key or the recipient.
func lookup(t *testing.T, l providers.Lookup, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	return providertest.LookupHiding(t, l, q, []string{apiKey, recipient}, []string{"@", subject})
}

func TestLookupRecord(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(3 * time.Second)
	f := newFake(t, sent(msgID, at))
	records, err := lookup(t, newAdapter(t, f), query)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.Record{{
		ID:          msgID,
		CreatedAt:   at,
		Recipient:   recipient,
		Fields:      map[string]any{"subject": subject},
		PayloadHash: query.PayloadHash,
		Excerpt:     "sendgrid message status=delivered",
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

func TestLookupRequests(t *testing.T) {
	t.Parallel()
	f := newFake(t, sent(msgID, firstAttempt.Add(time.Second)), sent("other.recvd-1", firstAttempt))
	if _, err := lookup(t, newAdapter(t, f, func(c *sendgrid.Config) { c.CustomArg = "op_key" }), query); err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{
			Method: http.MethodPost, Path: "/v3/logs", Auth: "Bearer " + apiKey, ContentType: "application/json",
			Body: `{"query":"to_email = \"` + recipient + `\" AND sg_message_id_created_at >= TIMESTAMP \"2026-03-10T13:45:00Z\"` +
				` AND sg_message_id_created_at <= TIMESTAMP \"2026-03-10T15:00:01Z\"","limit":1000}`,
		},
		{Method: http.MethodGet, Path: "/v3/logs/" + msgID, Auth: "Bearer " + apiKey},
		{Method: http.MethodGet, Path: "/v3/logs/other.recvd-1", Auth: "Bearer " + apiKey},
	}
	if diff := cmp.Diff(want, f.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// recorder is a transport that answers like an empty Email Logs and
// records where requests went.
type recorder struct {
	mu   sync.Mutex
	urls []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.Method+" "+req.URL.String())
	r.mu.Unlock()
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: http.NoBody, Request: req,
	}, nil
}

// TestRegionHosts: the global region searches api.sendgrid.com, the EU
// one api.eu.sendgrid.com — SendGrid's own hosts, as the SDK names them.
func TestRegionHosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ region, want string }{
		{"global", "POST https://api.sendgrid.com/v3/logs"},
		{"eu", "POST https://api.eu.sendgrid.com/v3/logs"},
	} {
		t.Run(tc.region, func(t *testing.T) {
			t.Parallel()
			cfg := sendgrid.Kind.NewSettings().(*sendgrid.Config)
			cfg.Region, cfg.APIKeyEnv = tc.region, "SENDGRID_API_KEY"
			rec := &recorder{}
			a, err := sendgrid.New("mailer", cfg, providertest.Env(rec, "SENDGRID_API_KEY", apiKey))
			if err != nil {
				t.Fatal(err)
			}
			a.Lookup(t.Context(), query) //nolint:errcheck // the empty body is an error; where it went is the point
			if len(rec.urls) != 1 || rec.urls[0] != tc.want {
				t.Errorf("requests %v, want [%s]", rec.urls, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(time.Minute)
	with := func(m message, edit func(*message)) message { edit(&m); return m }
	for _, tc := range []struct {
		desc     string
		messages []message
		want     []string // record ids, as listed
		noHash   bool
	}{
		{desc: "one message", messages: []message{sent("m1", at)}, want: []string{"m1"}},
		{desc: "nothing found", want: []string{}},
		{desc: "two messages with the key are both returned", messages: []message{sent("m2", at.Add(time.Second)), sent("m1", at)}, want: []string{"m2", "m1"}},
		{desc: "another operation's message is left out", messages: []message{with(sent("m2", at), func(m *message) { m.Args = map[string]string{"op_key": "order-1041-receipt"} }), sent("m1", at)}, want: []string{"m1"}},
		{desc: "the value in another case is no match", messages: []message{with(sent("m1", at), func(m *message) { m.Args = map[string]string{"op_key": strings.ToUpper(opKey)} })}, want: []string{}},
		{desc: "the argument in another case is no match", messages: []message{with(sent("m1", at), func(m *message) { m.Args = map[string]string{"OP_KEY": opKey} })}, want: []string{}},
		{desc: "no custom_args is no match", messages: []message{with(sent("m1", at), func(m *message) { m.Args = nil })}, want: []string{}},
		{desc: "a message to another address is not listed", messages: []message{with(sent("m1", at), func(m *message) { m.To = "ops@acme.example" })}, want: []string{}},
		{desc: "processed is proof", messages: []message{with(sent("m1", at), func(m *message) { m.Status = "processed" })}, want: []string{"m1"}},
		{desc: "deferred (in flight) carries the hash", messages: []message{with(sent("m1", at), func(m *message) { m.Status = "deferred" })}, want: []string{"m1"}},
		{desc: "dropped is shown, without a hash", messages: []message{with(sent("m1", at), func(m *message) { m.Status = "dropped" })}, want: []string{"m1"}, noHash: true},
		{desc: "bounced carries no hash", messages: []message{with(sent("m1", at), func(m *message) { m.Status = "bounced" })}, want: []string{"m1"}, noHash: true},
		{desc: "blocked carries no hash", messages: []message{with(sent("m1", at), func(m *message) { m.Status = "blocked" })}, want: []string{"m1"}, noHash: true},
		{desc: "no subject carries no hash", messages: []message{with(sent("m1", at), func(m *message) { m.NoSubj = true })}, want: []string{"m1"}, noHash: true},
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
				if tc.noHash != (r.PayloadHash == "") || (!tc.noHash && r.PayloadHash != hashOf(subject)) {
					t.Errorf("record %s: payload hash %q (want none: %v)", r.ID, r.PayloadHash, tc.noHash)
				}
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("record ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLookupTooMany: Email Logs has no pagination, so a full answer (1000
// messages) may be cut short, and each candidate costs a request: past
// either bound, a person decides.
func TestLookupTooMany(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		n        int
		requests int
	}{
		{desc: "a search that fills its limit", n: 1000, requests: 1},
		{desc: "more candidates than are read one by one", n: 21, requests: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var messages []message
			for i := range tc.n {
				messages = append(messages, sent(fmt.Sprintf("m%d", i), firstAttempt))
			}
			f := newFake(t, messages...)
			_, err := lookup(t, newAdapter(t, f), query)
			if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent {
				t.Errorf("Lookup: %v (%s); want a permanent error", err, class)
			}
			if n := len(f.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	m := sent(msgID, firstAttempt)
	summary := jsonOf(t, m.summary())
	detail := jsonOf(t, m.detail())
	list := func(items ...string) string { return `{"messages":[` + strings.Join(items, ",") + `]}` }
	errBody := func(msg string) string { return `{"errors":[{"field":null,"message":"` + msg + `"}]}` }
	reset := strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10)
	for _, tc := range []struct {
		desc         string
		search       bool // the answer is the search's; else the detail's (the search lists m)
		status       int
		header       map[string]string
		body         string
		class        providers.Class
		delay        time.Duration
		delayAtLeast time.Duration
	}{
		{desc: "search 401", search: true, status: 401, body: errBody("authorization required"), class: providers.ClassPermanent},
		{desc: "search 403 (a key without email logs access)", search: true, status: 403, body: errBody("access forbidden"), class: providers.ClassPermanent},
		{desc: "search 400 naming the recipient", search: true, status: 400, body: errBody("invalid to_email " + recipient), class: providers.ClassPermanent},
		{desc: "search 404: no Email Logs for the account", search: true, status: 404, body: errBody("not found"), class: providers.ClassUnsupported},
		{desc: "search 429 with Retry-After", search: true, status: 429, header: map[string]string{"Retry-After": "7"}, body: errBody("too many requests"), class: providers.ClassRateLimited, delay: 7 * time.Second},
		{desc: "search 429 with X-RateLimit-Reset", search: true, status: 429, header: map[string]string{"X-RateLimit-Reset": reset}, body: errBody("too many requests"), class: providers.ClassRateLimited, delayAtLeast: 20 * time.Second},
		{desc: "search 429 without a delay", search: true, status: 429, body: errBody("too many requests"), class: providers.ClassRateLimited, delay: time.Second},
		{desc: "search 500", search: true, status: 500, body: errBody("internal error"), class: providers.ClassTransient},
		{desc: "search 503 HTML", search: true, status: 503, body: `<html>Service Unavailable</html>`, class: providers.ClassTransient},
		{desc: "search redirect", search: true, status: 307, header: map[string]string{"Location": "https://evil.example/v3/logs"}, class: providers.ClassPermanent},
		{desc: "search 200 {}", search: true, status: 200, body: `{}`, class: providers.ClassTransient},
		{desc: "search 200 null", search: true, status: 200, body: `null`, class: providers.ClassTransient},
		{desc: "search 200 messages null", search: true, status: 200, body: `{"messages":null}`, class: providers.ClassTransient},
		{desc: "search 200 the answer twice", search: true, status: 200, body: list() + list(), class: providers.ClassTransient},
		{desc: "search 200 messages twice, the message last", search: true, status: 200, body: `{"messages":[],"messages":[` + summary + `]}`, class: providers.ClassTransient},
		{desc: "search 200 Messages and messages", search: true, status: 200, body: `{"Messages":[` + summary + `],"messages":[]}`, class: providers.ClassTransient},
		{desc: "search 200 no sg_message_id", search: true, status: 200, body: list(strings.Replace(summary, `"sg_message_id":"`+msgID+`",`, ``, 1)), class: providers.ClassTransient},
		{desc: "search 200 a date without an offset", search: true, status: 200, body: list(strings.Replace(summary, `14:00:00Z`, `14:00:00`, 1)), class: providers.ClassTransient},
		{desc: "search 200 no date", search: true, status: 200, body: list(strings.Replace(summary, `"sg_message_id_created_at":`, `"created":`, 1)), class: providers.ClassTransient},
		{desc: "search 200 TO_EMAIL alone", search: true, status: 200, body: list(strings.Replace(summary, `"to_email":`, `"TO_EMAIL":`, 1)), class: providers.ClassTransient},
		{desc: "search 200 invalid UTF-8", search: true, status: 200, body: list(strings.Replace(summary, `Your receipt`, "Your r\xe9ceipt", 1)), class: providers.ClassTransient},
		{desc: "detail 404", status: 404, body: errBody("message not found"), class: providers.ClassTransient},
		{desc: "detail 429", status: 429, header: map[string]string{"Retry-After": "3"}, body: errBody("too many requests"), class: providers.ClassRateLimited, delay: 3 * time.Second},
		{desc: "detail 200 {}", status: 200, body: `{}`, class: providers.ClassTransient},
		{desc: "detail 200 another message", status: 200, body: jsonOf(t, func() map[string]any { d := m.detail(); d["sg_message_id"] = "other"; return d }()), class: providers.ClassTransient},
		{desc: "detail 200 op_key twice", status: 200, body: strings.Replace(detail, `"op_key":"`+opKey+`"`, `"op_key":"x","op_key":"`+opKey+`"`, 1), class: providers.ClassTransient},
		{desc: "detail 200 op_key and OP_KEY", status: 200, body: strings.Replace(detail, `"op_key":"`+opKey+`"`, `"OP_KEY":"x","op_key":"`+opKey+`"`, 1), class: providers.ClassTransient},
		{desc: "detail 200 custom_args twice", status: 200, body: strings.Replace(detail, `"custom_args":`, `"custom_args":{},"x":1,"custom_args":`, 1), class: providers.ClassTransient},
		{desc: "detail 200 an op_key that is not a string", status: 200, body: strings.Replace(detail, `"op_key":"`+opKey+`"`, `"op_key":1042`, 1), class: providers.ClassTransient},
		{desc: "detail 200 Custom_Args alone", status: 200, body: strings.Replace(detail, `"custom_args":`, `"Custom_Args":`, 1), class: providers.ClassTransient},
		{desc: "detail 200 the answer twice", status: 200, body: detail + detail, class: providers.ClassTransient},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.respond = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodPost && !tc.search {
					w.Write(searchBody(m)) //nolint:errcheck // test
					return
				}
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body)) //nolint:errcheck // test
			}
			records, err := lookup(t, newAdapter(t, f), query)
			if err == nil {
				t.Fatalf("Lookup = %v, nil; want an error", records)
			}
			class, delay := providers.Classify(err)
			if class != tc.class || (tc.delayAtLeast == 0 && delay != tc.delay) || delay < tc.delayAtLeast {
				t.Errorf("classified %s %s, want %s %s: %v", class, delay, tc.class, max(tc.delay, tc.delayAtLeast), err)
			}
			if tc.class == providers.ClassUnsupported && !errors.Is(err, providers.ErrUnsupported) {
				t.Errorf("%v does not wrap providers.ErrUnsupported", err)
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
		{Desc: "no recipient", Edit: func(q *providers.Query) { q.Recipient = "" }, Want: "no recipient"},
		{Desc: "a recipient with a quote", Edit: func(q *providers.Query) { q.Recipient = `"jane doe"@example.com` }, Want: "cannot be put in a SendGrid query"},
		{Desc: "a recipient with a backslash", Edit: func(q *providers.Query) { q.Recipient = `jane\doe@example.com` }, Want: "cannot be put in a SendGrid query"},
		{Desc: "no start time", Edit: func(q *providers.Query) { q.Since = time.Time{} }, Want: "no start time"},
		{Desc: "a window that ends before it starts", Edit: func(q *providers.Query) { q.Since = q.Until.Add(time.Hour) }, Want: "ends before it starts"},
	})
}

// TestSendEndpointsRefused: the client a lookup uses lets through the
// Email Logs search, and nothing else that is not a GET — POST
// /v3/mail/send first — whether sendgrid-go builds the request or not,
// on SendGrid's hosts or api_base's (I1).
func TestSendEndpointsRefused(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	client := sendgrid.HTTPClientForTest(newAdapter(t, f).(*sendgrid.Adapter))
	sdk := &rest.Client{HTTPClient: client}
	for _, target := range []struct{ method, host, path string }{
		{http.MethodPost, "https://api.sendgrid.com", "/v3/mail/send"},
		{http.MethodPost, "https://api.eu.sendgrid.com", "/v3/mail/send"},
		{http.MethodPost, f.srv.URL, "/v3/mail/send"},
		{http.MethodPost, "https://api.sendgrid.com", "/v3/mail/batch"},
		{http.MethodPost, "https://api.sendgrid.com", "/v3/user/scheduled_sends"},
		{http.MethodPost, "https://api.sendgrid.com", "/v3/logs/" + msgID},
		{http.MethodPost, "https://api.eu.sendgrid.com", "/v3/logs"}, // another region's search
		{http.MethodPost, f.srv.URL, "/v3/logs"},                     // api_base is reached only through SendGrid's host
		{http.MethodPut, "https://api.sendgrid.com", "/v3/logs"},
		{http.MethodDelete, "https://api.sendgrid.com", "/v3/logs/" + msgID},
	} {
		req := sg.GetRequest(apiKey, target.path, target.host)
		req.Method = rest.Method(target.method)
		req.Body = []byte(`{"personalizations":[{"to":[{"email":"` + recipient + `"}]}],"from":{"email":"receipts@acme.example"},"subject":"x","content":[{"type":"text/plain","value":"x"}]}`)
		_, err := sdk.SendWithContext(t.Context(), req)
		var classified *providers.Error
		if !errors.As(err, &classified) || classified.Class != providers.ClassPermanent {
			t.Errorf("%s %s%s: %v; want refused, permanent", target.method, target.host, target.path, err)
		}
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("SendGrid received %d requests, want 0", n)
	}
}

func TestMatching(t *testing.T) {
	t.Parallel()
	l := newAdapter(t, newFake(t)).(providers.MatchingLookup)
	if got := l.Matching(); got != (providers.Matching{ByKey: true}) {
		t.Errorf("Matching = %+v, want by key", got)
	}
}
