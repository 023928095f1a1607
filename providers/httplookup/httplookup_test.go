package httplookup_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/testkit/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The token and recipient must never appear in an error message (I7).
const (
	token     = "tok-SECRET-123"
	recipient = "jane.doe@example.com"
)

var query = providers.Query{
	OpKey:       "ord-42",
	Recipient:   recipient,
	Action:      "send_email",
	PayloadHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	Since:       time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*60*60)),
	Until:       time.Date(2024, 5, 1, 11, 30, 0, 0, time.UTC),
}

// seenRequest is what the fake provider was asked.
type seenRequest struct {
	Method        string
	Path          string
	Query         url.Values
	Authorization string
	Accept        string
}

// fakeProvider is an httptest server shaped like the lookup protocol. It
// counts requests that are not GETs — sweeper must never send one (I1) —
// and fails the test at cleanup if there were any.
type fakeProvider struct {
	srv     *httptest.Server
	stop    chan struct{} // closed at cleanup, so hanging handlers return
	nonGET  atomic.Int64
	mu      sync.Mutex
	seen    []seenRequest
	respond http.HandlerFunc
}

func newFake(t *testing.T, respond http.HandlerFunc) *fakeProvider {
	t.Helper()
	f := &fakeProvider{stop: make(chan struct{}), respond: respond}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	t.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
		if n := f.nonGET.Load(); n != 0 {
			t.Errorf("provider received %d non-GET requests, want 0", n)
		}
	})
	return f
}

func (f *fakeProvider) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		f.nonGET.Add(1)
		w.WriteHeader(http.StatusCreated)
		return
	}
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{
		Method:        r.Method,
		Path:          r.URL.Path,
		Query:         r.URL.Query(),
		Authorization: r.Header.Get("Authorization"),
		Accept:        r.Header.Get("Accept"),
	})
	f.mu.Unlock()
	f.respond(w, r)
}

func (f *fakeProvider) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// adapter returns an adapter for the fake's /lookup endpoint, whose URL
// carries a query parameter of its own.
func (f *fakeProvider) adapter(t testing.TB, token string) *httplookup.Adapter {
	cfg := &httplookup.Config{URL: f.srv.URL + "/lookup?tenant=acme"}
	return newAdapter(t, "orders", cfg, token, f.srv.Client().Transport)
}

// newAdapter returns an adapter for cfg whose bearer token, when not
// empty, is read from the environment as token_env names it, and whose
// requests go to transport.
func newAdapter(t testing.TB, name string, cfg *httplookup.Config, token string, transport http.RoundTripper) *httplookup.Adapter {
	t.Helper()
	env := providertest.Env(transport)
	if token != "" {
		cfg.TokenEnv = "ORDERS_TOKEN"
		env = providertest.Env(transport, "ORDERS_TOKEN", token)
	}
	a, err := httplookup.New(name, cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// reply answers every request with status and body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// checkNoSecrets fails the test when err's message carries the token or
// the recipient, in any form a URL would hold them.
func checkNoSecrets(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, secret := range []string{token, recipient, url.QueryEscape(recipient), "jane.doe"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q carries %q", msg, secret)
		}
	}
}

func TestLookupRequest(t *testing.T) {
	t.Parallel()

	wantQuery := url.Values{
		"tenant":    {"acme"},
		"op_key":    {"ord-42"},
		"recipient": {recipient},
		"action":    {"send_email"},
		"since":     {"2024-05-01T10:00:00Z"},
		"until":     {"2024-05-01T11:30:00Z"},
	}
	tests := []struct {
		desc     string
		token    string
		wantAuth string
	}{
		{desc: "with a token, a bearer header", token: token, wantAuth: "Bearer " + token},
		{desc: "without a token, no Authorization header", token: "", wantAuth: ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply(http.StatusOK, `{"matches":[]}`))

			if _, err := f.adapter(t, tt.token).Lookup(t.Context(), query); err != nil {
				t.Fatalf("Lookup: %v", err)
			}

			want := []seenRequest{{
				Method:        http.MethodGet,
				Path:          "/lookup",
				Query:         wantQuery,
				Authorization: tt.wantAuth,
				Accept:        "application/json",
			}}
			if diff := cmp.Diff(want, f.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupRecords(t *testing.T) {
	t.Parallel()

	// exactlyMaxBody is a valid answer of exactly 1 MiB, the most read.
	// The answer's top level holds matches only: white space pads it.
	exactlyMaxBody := `{"matches":[]` + strings.Repeat(" ", 1<<20-len(`{"matches":[]}`)) + `}`
	tests := []struct {
		desc string
		body string
		want []providers.Record
	}{
		{
			desc: "one match, every field",
			body: `{"matches":[{"id":"msg_1","created_at":"2024-05-01T10:00:05+02:00","recipient":"jane.doe@example.com","payload_hash":"abc"}]}`,
			want: []providers.Record{{
				ID:          "msg_1",
				CreatedAt:   time.Date(2024, 5, 1, 8, 0, 5, 0, time.UTC),
				Recipient:   recipient,
				PayloadHash: "abc",
				Excerpt:     "orders id=msg_1",
			}},
		},
		{
			desc: "two matches, the second with only an id",
			body: `{"matches":[{"id":"msg_1","created_at":"2024-05-01T10:00:05Z","payload_hash":"abc"},{"id":"msg_2"}]}`,
			want: []providers.Record{
				{ID: "msg_1", CreatedAt: time.Date(2024, 5, 1, 10, 0, 5, 0, time.UTC), PayloadHash: "abc", Excerpt: "orders id=msg_1"},
				{ID: "msg_2", Excerpt: "orders id=msg_2"},
			},
		},
		{
			desc: "long id truncated in the excerpt only",
			body: `{"matches":[{"id":"` + strings.Repeat("a", 70) + `"}]}`,
			want: []providers.Record{{ID: strings.Repeat("a", 70), Excerpt: "orders id=" + strings.Repeat("a", 64) + "…"}},
		},
		{
			desc: "a record's unknown fields ignored",
			body: `{"matches":[{"id":"msg_1","subject":"Your receipt","provider":{"region":"eu"}}]}`,
			want: []providers.Record{{ID: "msg_1", Excerpt: "orders id=msg_1"}},
		},
		{desc: "empty matches: searched, found none", body: `{"matches":[]}`, want: nil},
		{desc: "whitespace around the answer", body: "\n  {\"matches\": [ ]}\n", want: nil},
		{desc: "body of exactly 1 MiB", body: exactlyMaxBody, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply(http.StatusOK, tt.body))

			got, err := f.adapter(t, token).Lookup(t.Context(), query)

			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// anyClass is for failures whose class the protocol leaves open.
const anyClass providers.Class = -1

func TestLookupFailures(t *testing.T) {
	t.Parallel()

	hugeBody := `{"matches":[],"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	htmlPage := `<!DOCTYPE html><html><body><h1>Internal error</h1><p>No account for jane.doe@example.com (Bearer tok-SECRET-123)</p></body></html>`
	retryAt := func(d time.Duration) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", time.Now().Add(d).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}
	tooMany := func(retryAfter string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}

	// redirect sends /lookup elsewhere, where an empty answer waits.
	redirect := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/lookup" {
				reply(200, `{"matches":[]}`)(w, r)
				return
			}
			http.Redirect(w, r, "/elsewhere?"+r.URL.RawQuery, status)
		}
	}

	type failure struct {
		desc      string
		respond   http.HandlerFunc
		wantClass providers.Class
		// The delay Classify reports lies in [minDelay, maxDelay].
		minDelay, maxDelay time.Duration
		wantMsg            string // a substring of the message, when set
	}
	tests := []failure{
		// 200 bodies that are no answer.
		{desc: "no matches field", respond: reply(200, `{}`)},
		{desc: "null matches", respond: reply(200, `{"matches":null}`)},
		{desc: "null matches with spaces", respond: reply(200, `{ "matches" :  null  }`)},
		{desc: "matches under another case", respond: reply(200, `{"Matches":[]}`)},
		{desc: "matches not an array", respond: reply(200, `{"matches":"jane.doe@example.com"}`)},
		{desc: "matches an object", respond: reply(200, `{"matches":{"id":"msg_1"}}`)},
		{desc: "null body", respond: reply(200, `null`)},
		{desc: "array body", respond: reply(200, `[]`)},
		{desc: "empty body", respond: reply(200, ``)},
		{desc: "malformed JSON", respond: reply(200, `{"matches":[}`)},
		{desc: "truncated JSON", respond: reply(200, `{"matches":[{"id":"msg_1"`)},
		{desc: "trailing data after the answer", respond: reply(200, `{"matches":[]} {"matches":[{"id":"msg_1"}]}`)},
		{desc: "trailing garbage after the answer", respond: reply(200, `{"matches":[]}tok-SECRET-123`)},
		{desc: "body over 1 MiB", respond: reply(200, hugeBody), wantMsg: "larger than 1048576 bytes"},
		{desc: "match without id", respond: reply(200, `{"matches":[{"recipient":"jane.doe@example.com","payload_hash":"abc"}]}`)},
		{desc: "match with a blank id", respond: reply(200, `{"matches":[{"id":"msg_1"},{"id":"  "}]}`)},
		{desc: "null match", respond: reply(200, `{"matches":[null]}`)},
		{desc: "match not an object", respond: reply(200, `{"matches":["jane.doe@example.com"]}`)},
		{desc: "bad created_at", respond: reply(200, `{"matches":[{"id":"msg_1","created_at":"jane.doe@example.com tok-SECRET-123"}]}`)},
		{desc: "created_at not RFC 3339", respond: reply(200, `{"matches":[{"id":"msg_1","created_at":"01/05/2024"}]}`)},
		// Keys a lenient reader would take one way or another: the last of
		// duplicates, any letter case of a field's name.
		{desc: "payload_hash twice, the right one last", respond: reply(200, `{"matches":[{"id":"r","payload_hash":"wrong","payload_hash":"abc"}]}`),
			wantClass: providers.ClassTransient, wantMsg: `duplicate key "payload_hash" at matches[0]`},
		{desc: "payload_hash and a case variant of it", respond: reply(200, `{"matches":[{"id":"r","payload_hash":"wrong","Payload_Hash":"abc"}]}`),
			wantClass: providers.ClassTransient, wantMsg: `keys "payload_hash" and "Payload_Hash" at matches[0] differ only in letter case`},
		{desc: "matches twice, the record last", respond: reply(200, `{"matches":[],"matches":[{"id":"r","payload_hash":"abc"}]}`),
			wantClass: providers.ClassTransient, wantMsg: `duplicate key "matches"`},
		{desc: "matches twice, none last", respond: reply(200, `{"matches":[{"id":"r","payload_hash":"abc"}],"matches":[]}`),
			wantClass: providers.ClassTransient, wantMsg: `duplicate key "matches"`},
		{desc: "matches and a case variant of it", respond: reply(200, `{"matches":[],"MATCHES":[{"id":"r"}]}`), wantClass: providers.ClassTransient},
		{desc: "Payload_Hash alone", respond: reply(200, `{"matches":[{"id":"r","Payload_Hash":"abc"}]}`),
			wantClass: providers.ClassTransient, wantMsg: `key "Payload_Hash" at matches[0] is not "payload_hash"`},
		{desc: "ID alone", respond: reply(200, `{"matches":[{"ID":"r"}]}`), wantClass: providers.ClassTransient, wantMsg: `key "ID" at matches[0] is not "id"`},
		{desc: "a KELVIN SIGN in a key", respond: reply(200, `{"matches":[{"id":"r","payload_hash":"abc","\u212aey":"x","key":"y"}]}`), wantClass: providers.ClassTransient},
		{desc: "invalid UTF-8 in a value", respond: reply(200, "{\"matches\":[{\"id\":\"r\xff\"}]}"), wantClass: providers.ClassTransient, wantMsg: "not valid UTF-8"},
		{desc: "HTML error page with 200", respond: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, htmlPage)
		}},
		{desc: "complete answer cut short of its Content-Length", respond: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			fmt.Fprint(w, `{"matches":[]}`)
		}, wantMsg: "read body"},
		// Statuses other than 200, even with a well-formed answer.
		{desc: "204 is no answer", respond: reply(204, ``), wantClass: providers.ClassPermanent},
		{desc: "201 is no answer", respond: reply(201, `{"matches":[]}`), wantClass: providers.ClassPermanent},
		{desc: "400", respond: reply(400, `{"error":"bad recipient jane.doe@example.com"}`), wantClass: providers.ClassPermanent},
		{desc: "401", respond: reply(401, `{"error":"token tok-SECRET-123 rejected"}`), wantClass: providers.ClassPermanent},
		{desc: "403", respond: reply(403, ``), wantClass: providers.ClassPermanent},
		{desc: "404", respond: reply(404, `{"matches":[]}`), wantClass: providers.ClassPermanent},
		{desc: "410", respond: reply(410, ``), wantClass: providers.ClassPermanent},
		{desc: "408", respond: reply(408, ``), wantClass: providers.ClassTransient},
		{desc: "500", respond: reply(500, `{"matches":[]}`), wantClass: providers.ClassTransient},
		{desc: "502 HTML page", respond: reply(502, htmlPage), wantClass: providers.ClassTransient},
		{desc: "503", respond: reply(503, ``), wantClass: providers.ClassTransient},
		{desc: "504", respond: reply(504, ``), wantClass: providers.ClassTransient},
		{desc: "429 Retry-After seconds", respond: tooMany("7"), wantClass: providers.ClassRateLimited, minDelay: 7 * time.Second, maxDelay: 7 * time.Second},
		{desc: "429 Retry-After HTTP date", respond: retryAt(30 * time.Second), wantClass: providers.ClassRateLimited, minDelay: 28 * time.Second, maxDelay: 30 * time.Second},
		{desc: "429 Retry-After date past", respond: retryAt(-time.Minute), wantClass: providers.ClassRateLimited},
		{desc: "429 without Retry-After", respond: tooMany(""), wantClass: providers.ClassRateLimited, minDelay: time.Second, maxDelay: time.Second},
		{desc: "429 unreadable Retry-After", respond: tooMany("soon"), wantClass: providers.ClassRateLimited, minDelay: time.Second, maxDelay: time.Second},
		{desc: "429 negative Retry-After", respond: tooMany("-5"), wantClass: providers.ClassRateLimited, minDelay: time.Second, maxDelay: time.Second},
		{desc: "429 Retry-After capped at an hour", respond: tooMany("7200"), wantClass: providers.ClassRateLimited, minDelay: time.Hour, maxDelay: time.Hour},
		{desc: "429 Retry-After past int64 nanoseconds", respond: tooMany("99999999999"), wantClass: providers.ClassRateLimited, minDelay: time.Hour, maxDelay: time.Hour},
		{desc: "429 Retry-After wrapping to a negative delay", respond: tooMany("9223372037"), wantClass: providers.ClassRateLimited, minDelay: time.Hour, maxDelay: time.Hour},
		{desc: "429 Retry-After wrapping to a short delay", respond: tooMany("18446744074"), wantClass: providers.ClassRateLimited, minDelay: time.Hour, maxDelay: time.Hour},
		// A redirect is not followed: the fake's cleanup and the request
		// count below show the target was never asked.
		{desc: "302 redirect", respond: redirect(http.StatusFound), wantClass: anyClass},
		{desc: "307 redirect", respond: redirect(http.StatusTemporaryRedirect), wantClass: anyClass},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tt.respond)

			got, err := f.adapter(t, token).Lookup(t.Context(), query)

			if err == nil {
				t.Fatalf("Lookup = %v, nil; want an error, never an empty success", got)
			}
			if got != nil {
				t.Errorf("records = %v alongside error %v, want none", got, err)
			}
			class, delay := providers.Classify(err)
			if tt.wantClass != anyClass && class != tt.wantClass {
				t.Errorf("Classify(%v) = %s, want %s", err, class, tt.wantClass)
			}
			if delay < tt.minDelay || delay > tt.maxDelay {
				t.Errorf("Classify(%v) delay = %s, want between %s and %s", err, delay, tt.minDelay, tt.maxDelay)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
			checkNoSecrets(t, err)
			if n := len(f.requests()); n != 1 {
				t.Errorf("provider asked %d times, want once (no retry, no redirect)", n)
			}
		})
	}
}

func TestLookupConnectionErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		desc string
		// start returns an adapter whose provider fails the connection.
		start func(t *testing.T) *httplookup.Adapter
	}{
		{
			desc: "connection refused",
			start: func(t *testing.T) *httplookup.Adapter {
				f := newFake(t, reply(200, `{"matches":[]}`))
				a := f.adapter(t, token)
				f.srv.Close()
				return a
			},
		},
		{
			desc: "connection dropped before the response",
			start: func(t *testing.T) *httplookup.Adapter {
				return newFake(t, func(w http.ResponseWriter, _ *http.Request) {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Errorf("hijack: %v", err)
						return
					}
					conn.Close()
				}).adapter(t, token)
			},
		},
		{
			desc: "not an HTTP server",
			start: func(t *testing.T) *httplookup.Adapter {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				t.Cleanup(func() { ln.Close(); <-done })
				go func() {
					defer close(done)
					for {
						conn, err := ln.Accept()
						if err != nil {
							return
						}
						fmt.Fprint(conn, "SSH-2.0-OpenSSH_9.6\r\n")
						conn.Close()
					}
				}()
				tr := &http.Transport{}
				t.Cleanup(tr.CloseIdleConnections)
				return newAdapter(t, "orders", &httplookup.Config{URL: "http://" + ln.Addr().String() + "/lookup"}, token, tr)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			a := tt.start(t)

			got, err := a.Lookup(t.Context(), query)

			if err == nil || got != nil {
				t.Fatalf("Lookup = %v, %v; want no records and an error", got, err)
			}
			if class, _ := providers.Classify(err); class != providers.ClassTransient {
				t.Errorf("Classify(%v) = %s, want transient", err, class)
			}
			checkNoSecrets(t, err)
		})
	}
}

func TestLookupContext(t *testing.T) {
	t.Parallel()

	// hang answers nothing until the lookup gives up; it calls reached
	// once the request is in.
	hang := func(f **fakeProvider, reached func()) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			reached()
			select {
			case <-r.Context().Done():
			case <-(*f).stop:
			}
		}
	}
	// hangMidBody sends the start of an answer and hangs; it calls
	// reached once that start is sent.
	hangMidBody := func(f **fakeProvider, reached func()) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"matches":[`)
			http.NewResponseController(w).Flush() //nolint:errcheck // best effort
			reached()
			select {
			case <-r.Context().Done():
			case <-(*f).stop:
			}
		}
	}
	tests := []struct {
		desc    string
		respond func(f **fakeProvider, reached func()) http.HandlerFunc
		// ctx returns the lookup's context; reached is closed once the
		// fake has got as far as the case is about.
		ctx          func(t *testing.T, reached <-chan struct{}) context.Context
		wantErr      error // errors.Is, when set
		wantRequests int
	}{
		{
			desc:    "cancelled before the call",
			respond: hang,
			ctx: func(t *testing.T, _ <-chan struct{}) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			wantErr: context.Canceled,
		},
		{
			desc:         "cancelled while the provider hangs",
			respond:      hang,
			ctx:          func(t *testing.T, reached <-chan struct{}) context.Context { return testwait.CancelWhen(t, reached) },
			wantErr:      context.Canceled,
			wantRequests: 1,
		},
		{
			desc:         "deadline passes while the provider hangs",
			respond:      hang,
			ctx:          func(t *testing.T, reached <-chan struct{}) context.Context { return testwait.DeadlineWhen(t, reached) },
			wantErr:      context.DeadlineExceeded,
			wantRequests: 1,
		},
		{
			desc:         "deadline passes while the body is read",
			respond:      hangMidBody,
			ctx:          func(t *testing.T, reached <-chan struct{}) context.Context { return testwait.DeadlineWhen(t, reached) },
			wantRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			reached := make(chan struct{})
			var f *fakeProvider
			f = newFake(t, tt.respond(&f, sync.OnceFunc(func() { close(reached) })))

			start := time.Now()
			got, err := f.adapter(t, token).Lookup(tt.ctx(t, reached), query)
			elapsed := time.Since(start)

			if err == nil || got != nil {
				t.Fatalf("Lookup = %v, %v; want no records and an error", got, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if elapsed > 5*time.Second {
				t.Errorf("Lookup returned after %s, want soon after ctx is done", elapsed)
			}
			checkNoSecrets(t, err)
			if n := len(f.requests()); n != tt.wantRequests {
				t.Errorf("provider asked %d times, want %d", n, tt.wantRequests)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()

	const absolute = "url: must be an absolute http or https URL"
	// Want is the whole message: the credentials case names token_env,
	// never the token.
	providertest.ConfigCases(t, httplookup.Kind, nil, []providertest.ConfigCase[*httplookup.Config]{
		{Desc: "https", Block: `url = "https://lookup.example.com/v1/lookup"`},
		{Desc: "http with port and query", Block: `url = "http://127.0.0.1:5678/webhook/lookup?tenant=acme"`},
		{Desc: "missing", Want: []string{"url: required"}},
		{Desc: "relative", Block: `url = "/lookup"`, Want: []string{absolute}},
		{Desc: "no host", Block: `url = "http:///lookup"`, Want: []string{absolute}},
		{Desc: "another scheme", Block: `url = "ftp://lookup.example.com/"`, Want: []string{absolute}},
		{Desc: "unparsable", Block: `url = "http://[::1"`, Want: []string{absolute}},
		{Desc: "credentials in the URL", Block: `url = "https://bot:` + token + `@lookup.example.com/"`, Want: []string{"url: must not carry credentials; use token_env"}},
	})
}

func TestSecretEnvs(t *testing.T) {
	t.Parallel()

	tests := []struct {
		desc     string
		tokenEnv string
		want     []providers.SecretEnv
	}{
		{desc: "token_env set: required", tokenEnv: "ORDERS_LOOKUP_TOKEN", want: []providers.SecretEnv{{Key: "token_env", Name: "ORDERS_LOOKUP_TOKEN", Required: true}}},
		{desc: "no token_env: nothing required", tokenEnv: "", want: []providers.SecretEnv{{Key: "token_env", Name: "", Required: false}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var holder providers.SecretHolder = &httplookup.Config{URL: "https://x.example.com", TokenEnv: tt.tokenEnv}
			if diff := cmp.Diff(tt.want, holder.SecretEnvs()); diff != "" {
				t.Errorf("SecretEnvs() (-want +got):\n%s", diff)
			}
		})
	}
}

type otherSettings struct{}

func (otherSettings) Validate() []error { return nil }

func TestKind(t *testing.T) {
	t.Parallel()

	env := func(vars map[string]string) providers.Env {
		return providers.Env{Getenv: func(k string) string { return vars[k] }}
	}
	tests := []struct {
		desc     string
		settings providers.Settings
		env      providers.Env
		wantErr  string // empty: no error
		wantAuth string
	}{
		{desc: "token from the environment", settings: &httplookup.Config{TokenEnv: "ORDERS_TOKEN"}, env: env(map[string]string{"ORDERS_TOKEN": token}), wantAuth: "Bearer " + token},
		{desc: "no token_env, no token", settings: &httplookup.Config{}, env: env(map[string]string{"ORDERS_TOKEN": token})},
		{desc: "token_env unset", settings: &httplookup.Config{TokenEnv: "ORDERS_TOKEN"}, env: env(nil), wantErr: "token_env: environment variable ORDERS_TOKEN is not set (nor ORDERS_TOKEN_FILE)"},
		{desc: "foreign settings", settings: otherSettings{}, env: env(nil), wantErr: "http: settings are httplookup_test.otherSettings"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if httplookup.Kind.Name != "http" {
				t.Errorf("Kind.Name = %q, want http", httplookup.Kind.Name)
			}
			if _, ok := httplookup.Kind.NewSettings().(*httplookup.Config); !ok {
				t.Errorf("NewSettings() = %T, want *httplookup.Config", httplookup.Kind.NewSettings())
			}
			f := newFake(t, reply(200, `{"matches":[]}`))
			if cfg, ok := tt.settings.(*httplookup.Config); ok {
				cfg.URL = f.srv.URL + "/lookup"
			}
			// Kind.New uses http.DefaultTransport.
			t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)

			lookup, err := httplookup.Kind.New("orders", tt.settings, tt.env)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("Kind.New err = %v, want %q", err, tt.wantErr)
				}
				checkNoSecrets(t, err)
				return
			}
			if err != nil {
				t.Fatalf("Kind.New: %v", err)
			}
			if _, err := lookup.Lookup(t.Context(), query); err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if reqs := f.requests(); len(reqs) != 1 || reqs[0].Authorization != tt.wantAuth {
				t.Errorf("requests = %+v, want one with Authorization %q", reqs, tt.wantAuth)
			}
		})
	}
}

// agreeing is a record that agrees with query in every field the decision
// compares: on its own it would prove the operation done.
const agreeing = `{"id":"msg_1","created_at":"2024-05-01T10:30:00Z","recipient":"jane.doe@example.com","payload_hash":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}`

// TestLookupRefusesPartialAnswers: the protocol has no pages, so an answer
// that says or hints there is more than it holds is half an answer, and
// half an answer is never read as the whole: each is a failed lookup
// (transient), never records. The top level holds matches and nothing
// else, so a key sweeper does not know — which could be some paging
// scheme's — is refused too.
func TestLookupRefusesPartialAnswers(t *testing.T) {
	t.Parallel()
	withLink := func(link, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Link", link)
			reply(200, body)(w, nil)
		}
	}
	tests := []struct {
		desc    string
		respond http.HandlerFunc
		wantMsg string
	}{
		{desc: "has_more true, with a cursor and a total (the first page of two)",
			respond: reply(200, `{"matches":[`+agreeing+`],"has_more":true,"next_cursor":"c2","total":2}`), wantMsg: "has no pages"},
		{desc: "has_more true", respond: reply(200, `{"matches":[`+agreeing+`],"has_more":true}`), wantMsg: `"has_more"`},
		{desc: "has_more false", respond: reply(200, `{"matches":[`+agreeing+`],"has_more":false}`), wantMsg: `"has_more"`},
		{desc: "next, a URL", respond: reply(200, `{"matches":[`+agreeing+`],"next":"https://lookup.example.com/lookup?page=2"}`), wantMsg: `"next"`},
		{desc: "next null", respond: reply(200, `{"matches":[`+agreeing+`],"next":null}`), wantMsg: `"next"`},
		{desc: "next_cursor", respond: reply(200, `{"matches":[`+agreeing+`],"next_cursor":"c2"}`), wantMsg: `"next_cursor"`},
		{desc: "next_cursor null", respond: reply(200, `{"matches":[`+agreeing+`],"next_cursor":null}`), wantMsg: `"next_cursor"`},
		{desc: "cursor", respond: reply(200, `{"matches":[`+agreeing+`],"cursor":"c2"}`), wantMsg: `"cursor"`},
		{desc: "next_page", respond: reply(200, `{"matches":[`+agreeing+`],"next_page":2}`), wantMsg: `"next_page"`},
		{desc: "next_page_token", respond: reply(200, `{"matches":[`+agreeing+`],"next_page_token":"CAE"}`), wantMsg: `"next_page_token"`},
		{desc: "a total above the records given", respond: reply(200, `{"matches":[`+agreeing+`],"total":2}`), wantMsg: `"total"`},
		{desc: "a total equal to the records given", respond: reply(200, `{"matches":[`+agreeing+`],"total":1}`), wantMsg: `"total"`},
		{desc: "a count above the records given", respond: reply(200, `{"matches":[`+agreeing+`],"count":5}`), wantMsg: `"count"`},
		{desc: "an empty first page with has_more", respond: reply(200, `{"matches":[],"has_more":true}`), wantMsg: `"has_more"`},
		{desc: "a paging object", respond: reply(200, `{"matches":[`+agreeing+`],"paging":{"next":"https://lookup.example.com/lookup?page=2"}}`), wantMsg: `unknown key "paging"`},
		{desc: "an unknown key", respond: reply(200, `{"matches":[`+agreeing+`],"meta":{}}`), wantMsg: `unknown key "meta"`},
		{desc: "an unknown key that is not plain text", respond: reply(200, `{"matches":[`+agreeing+`],"jane.doe@example.com":1}`), wantMsg: "an unknown key"},
		{desc: `a Link header with rel="next"`, respond: withLink(`<https://lookup.example.com/lookup?page=2>; rel="next"`, `{"matches":[`+agreeing+`]}`), wantMsg: "Link"},
		{desc: "a Link header with rel=next among others", respond: withLink(`<https://lookup.example.com/lookup?page=1>; rel="first", <https://lookup.example.com/lookup?a=1,2>; rel=next`, `{"matches":[`+agreeing+`]}`), wantMsg: "Link"},
		{desc: "a Link header with next among rel types, upper case", respond: withLink(`<https://lookup.example.com/lookup?page=2>; REL="last NEXT"`, `{"matches":[`+agreeing+`]}`), wantMsg: "Link"},
		{desc: `a Link header with rel="prev": a later page`, respond: withLink(`<https://lookup.example.com/lookup?page=1>; rel="prev"`, `{"matches":[`+agreeing+`]}`), wantMsg: "Link"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tt.respond)

			got, err := f.adapter(t, token).Lookup(t.Context(), query)

			if err == nil || got != nil {
				t.Fatalf("Lookup = %v, %v; want no records and an error", got, err)
			}
			if class, _ := providers.Classify(err); class != providers.ClassTransient {
				t.Errorf("Classify(%v) = %s, want transient", err, class)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
			checkNoSecrets(t, err)
		})
	}
}

// A Link header that is no pagination leaves the answer whole.
func TestLookupOtherLinksAreNoPages(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", `<https://lookup.example.com/docs>; rel="describedby", <https://lookup.example.com/next-steps>; rel="help"`)
		reply(200, `{"matches":[`+agreeing+`]}`)(w, nil)
	})
	got, err := f.adapter(t, token).Lookup(t.Context(), query)
	if err != nil || len(got) != 1 {
		t.Fatalf("Lookup = %v, %v; want the one record", got, err)
	}
}

// TestLookupStates: a record's optional state says where it stands at the
// endpoint — effect (the default), in_flight or failed — and its optional
// status is the endpoint's own word for people. Any other state is a
// malformed answer, never a record read as the effect.
func TestLookupStates(t *testing.T) {
	t.Parallel()
	rec := func(extra string) string {
		return `{"matches":[{"id":"msg_1"` + extra + `}]}`
	}
	tests := []struct {
		desc       string
		body       string
		wantState  providers.State
		wantStatus string
		wantErr    string // empty: records
	}{
		{desc: "no state: the effect", body: rec(``)},
		{desc: "state null: the effect", body: rec(`,"state":null`)},
		{desc: "effect", body: rec(`,"state":"effect","status":"delivered"`), wantState: providers.StateEffect, wantStatus: "delivered"},
		{desc: "in_flight", body: rec(`,"state":"in_flight","status":"scheduled"`), wantState: providers.StateInFlight, wantStatus: "scheduled"},
		{desc: "failed", body: rec(`,"state":"failed","status":"undelivered"`), wantState: providers.StateFailed, wantStatus: "undelivered"},
		{desc: "a status alone", body: rec(`,"status":"queued"`), wantStatus: "queued"},
		{desc: "a long status is cut short", body: rec(`,"status":"` + strings.Repeat("é", 150) + `"`), wantStatus: strings.Repeat("é", 100) + "…"},
		{desc: "reversed is not the protocol's", body: rec(`,"state":"reversed"`), wantErr: "state"},
		{desc: "an unknown state", body: rec(`,"state":"delivered"`), wantErr: "state"},
		{desc: "a state in another case", body: rec(`,"state":"EFFECT"`), wantErr: "state"},
		{desc: "an empty state", body: rec(`,"state":""`), wantErr: "state"},
		{desc: "a state that is not a string", body: rec(`,"state":1`), wantErr: "malformed"},
		{desc: "a status that is not a string", body: rec(`,"status":{"code":1}`), wantErr: "malformed"},
		{desc: "State in another case", body: rec(`,"State":"failed"`), wantErr: "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply(200, tt.body))

			got, err := f.adapter(t, token).Lookup(t.Context(), query)

			if tt.wantErr != "" {
				if err == nil || got != nil {
					t.Fatalf("Lookup = %v, %v; want no records and an error", got, err)
				}
				if class, _ := providers.Classify(err); class != providers.ClassTransient {
					t.Errorf("Classify(%v) = %s, want transient", err, class)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %q, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			want := []providers.Record{{ID: "msg_1", State: tt.wantState, Status: tt.wantStatus, Excerpt: "orders id=msg_1"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLookupRecordOpKey: a record may carry the op_key it is held under.
// From an endpoint that searches by op_key, a record carrying another one
// (in any letter case, or empty) is a malformed answer: the endpoint did
// not select by the key it was asked. From one that searches by
// resemblance, records of other operations are what it may find.
func TestLookupRecordOpKey(t *testing.T) {
	t.Parallel()
	rec := func(opKey string) string { return `{"matches":[{"id":"msg_1","op_key":` + opKey + `}]}` }
	tests := []struct {
		desc     string
		searchBy string
		body     string
		wantErr  bool
	}{
		{desc: "by key: the op_key asked", body: rec(`"ord-42"`)},
		{desc: "by key: op_key null, none carried", body: rec(`null`)},
		{desc: "by key: another op_key", body: rec(`"ord-43"`), wantErr: true},
		{desc: "by key: the op_key in another case", body: rec(`"ORD-42"`), wantErr: true},
		{desc: "by key: an empty op_key", body: rec(`""`), wantErr: true},
		{desc: "by key, declared: another op_key", searchBy: httplookup.SearchByKey, body: rec(`"ord-43"`), wantErr: true},
		{desc: "by key: one of two records with another op_key", body: `{"matches":[{"id":"a","op_key":"ord-42"},{"id":"b","op_key":"ord-4"}]}`, wantErr: true},
		{desc: "by resemblance: another op_key", searchBy: httplookup.SearchByResemblance, body: rec(`"ord-43"`)},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply(200, tt.body))
			a := newAdapter(t, "orders", &httplookup.Config{URL: f.srv.URL + "/lookup", SearchBy: tt.searchBy}, token, nil)

			got, err := a.Lookup(t.Context(), query)

			if tt.wantErr {
				if err == nil || got != nil {
					t.Fatalf("Lookup = %v, %v; want no records and an error", got, err)
				}
				if class, _ := providers.Classify(err); class != providers.ClassTransient || !strings.Contains(err.Error(), "op_key") {
					t.Errorf("err = %v (%s), want a transient error naming op_key", err, class)
				}
				checkNoSecrets(t, err)
				return
			}
			if err != nil || len(got) == 0 {
				t.Fatalf("Lookup = %v, %v; want records", got, err)
			}
		})
	}
}
