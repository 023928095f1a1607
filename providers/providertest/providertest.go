// Package providertest is the conformance kit every HTTP lookup adapter
// runs. It points the adapter at a fake of its provider and checks what no
// adapter may get wrong:
//
//   - a search that found nothing is zero records, and nothing else is:
//     malformed, truncated, oversized or hostile bodies are errors, never
//     "zero records", and never a panic;
//   - cancellation is honoured promptly, and a timeout is transient;
//   - 429 with Retry-After is rate-limited with that delay, 5xx is
//     transient, 401 and 403 are permanent;
//   - no credential and no recipient appears in an error, a log line or a
//     record's excerpt;
//   - no request other than a GET or HEAD — or a search endpoint the
//     harness declares, a POST that only reads — ever reaches the
//     provider (I1).
//
// Use it from the adapter's tests:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Harness{
//			New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup { … },
//			Empty: []byte(`{"matches":[]}`),
//		})
//	}
package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// Secret is the credential the kit gives the adapter; it must never show.
const Secret = "sk_test_KIT-SECRET-51Hx9"

// Recipient is the recipient of the kit's query; it must never show either.
const Recipient = "kit.recipient+secret@example.com"

// Harness describes the adapter under test.
type Harness struct {
	// New returns the adapter configured against the fake provider at
	// baseURL, with secret as its credential (every credential it needs),
	// logging to env.Logger.
	New func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup
	// Empty is the 200 body with which the provider says "searched, found
	// nothing" for any query. The kit checks it gives zero records and no
	// error: the control that makes the failure checks meaningful.
	Empty []byte
	// Found, if set, is a 200 body holding exactly one record with id
	// FoundID for the kit's query.
	Found   []byte
	FoundID string
	// RecordsAt, if set, is the path of keys from Found's top to the array
	// that holds its record, for a provider that nests its records
	// (QuickBooks' ["QueryResponse", "Invoice"]); the kit's duplicate and
	// case-variant keys are then written there. Default: the first
	// top-level key of Found holding an array where Empty holds [].
	RecordsAt []string
	// ErrorBody, if set, returns the provider's error body for a status
	// (Stripe and Twilio send JSON errors); default a short text.
	ErrorBody func(status int) []byte
	// ContentType of the bodies; default application/json.
	ContentType string
	// Recipient, if set, is the recipient of the kit's query instead of
	// [Recipient], for a provider that searches one kind of address (a
	// phone number). It must never show either, in any form.
	Recipient string
	// Searches, if set, are the provider's search endpoints that take a
	// POST and only read, as "METHOD /path" ("POST /v3/logs"): the fake
	// answers them like GETs. Any other request but a GET or HEAD is still
	// a write, and fails the test.
	Searches []string
	// Answer, if set, is the 200 body for request r when the kit serves
	// body (Empty, Found or a hostile body), for a provider whose lookup
	// reads answers of more than one shape — a search, then each record's
	// details: it returns body for the request the kit's bodies are shaped
	// for, and the provider's answer for the others. Errors and other
	// statuses are served to every request as they are.
	Answer func(r *http.Request, body []byte) []byte
}

// query is the kit's query, with the harness's recipient.
func (h Harness) query() providers.Query {
	q := Query()
	if h.Recipient != "" {
		q.Recipient = h.Recipient
	}
	return q
}

// Query is the query the kit sends.
func Query() providers.Query {
	now := time.Now().UTC().Truncate(time.Second)
	return providers.Query{
		OpKey:          "kit-op-0001",
		Recipient:      Recipient,
		Action:         "send",
		PayloadHash:    strings.Repeat("ab", 32),
		FirstAttemptAt: now.Add(-2 * time.Hour),
		Since:          now.Add(-2*time.Hour - 15*time.Minute),
		Until:          now,
	}
}

// fake is the provider: each test sets how it answers, and it counts what
// it is asked.
type fake struct {
	t       *testing.T
	harness Harness
	respond func(w http.ResponseWriter, r *http.Request)
	gets    atomic.Int64
	writes  atomic.Int64 // anything but GET/HEAD: a create or a send
	methods sync.Map
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !slices.Contains(f.harness.Searches, r.Method+" "+r.URL.Path) {
		f.writes.Add(1)
		f.methods.Store(r.Method+" "+r.URL.Path, true)
		http.Error(w, "sweeper must never create or send", http.StatusMethodNotAllowed)
		return
	}
	f.gets.Add(1)
	// A search's body is read first: until it is, the server would not
	// notice the client going away, and a handler that waits for that
	// would hold the test.
	io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)) //nolint:errcheck // only to drain it
	f.respond(w, r)
}

func (f *fake) body(w http.ResponseWriter, status int, body []byte) {
	ct := f.harness.ContentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // the client may be gone
}

// ok serves body with 200, as Harness.Answer shapes it for r.
func (f *fake) ok(w http.ResponseWriter, r *http.Request, body []byte) {
	if f.harness.Answer != nil {
		body = f.harness.Answer(r, body)
	}
	f.body(w, http.StatusOK, body)
}

func (f *fake) errorBody(status int) []byte {
	if f.harness.ErrorBody != nil {
		return f.harness.ErrorBody(status)
	}
	return []byte(http.StatusText(status))
}

// setup starts a fake and an adapter against it. The logs buffer collects
// the adapter's log lines.
func setup(t *testing.T, h Harness, respond func(*fake, http.ResponseWriter, *http.Request)) (*fake, providers.Lookup, *syncBuffer) {
	t.Helper()
	f := &fake{t: t, harness: h}
	f.respond = func(w http.ResponseWriter, r *http.Request) { respond(f, w, r) }
	server := httptest.NewServer(f)
	t.Cleanup(server.Close)
	logs := &syncBuffer{}
	env := providers.Env{
		Getenv: func(string) string { return "" },
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	adapter := h.New(t, server.URL, Secret, env)
	t.Cleanup(func() {
		if n := f.writes.Load(); n != 0 {
			var methods []string
			f.methods.Range(func(k, _ any) bool { methods = append(methods, k.(string)); return true })
			t.Errorf("I1: the adapter sent %d request(s) that could create or send: %v", n, methods)
		}
		checkLeaks(t, h, "a log line", logs.String())
	})
	return f, adapter, logs
}

// hang answers nothing until the request ends (30 seconds at most),
// closing reached when the first request is in: the moment a test ends
// the lookup's context.
func hang(reached chan struct{}) func(*fake, http.ResponseWriter, *http.Request) {
	in := sync.OnceFunc(func() { close(reached) })
	return func(_ *fake, _ http.ResponseWriter, r *http.Request) {
		in()
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}
}

// checkLeaks fails when text holds the secret or the query's recipient, as
// is or escaped the way URLs and JSON escape them.
func checkLeaks(t *testing.T, h Harness, what, text string) {
	t.Helper()
	lower := strings.ToLower(text)
	for _, form := range leakForms(Secret) {
		if strings.Contains(text, form) {
			t.Errorf("the credential appears in %s: %q", what, text)
		}
	}
	for _, form := range leakForms(h.query().Recipient) {
		if strings.Contains(lower, strings.ToLower(form)) {
			t.Errorf("the recipient appears in %s: %q", what, text)
		}
	}
}

// leakForms lists how a value shows up in text: raw, query-escaped,
// path-escaped, with "+" read as a space, and, for a phone number, its
// digits alone.
func leakForms(v string) []string {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(v, "+", " ")}
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, v)
	if len(digits) >= 7 && strings.Trim(v, "+0123456789 ()-.") == "" {
		forms = append(forms, digits)
	}
	return forms
}

// lookup runs the kit's query with a bound on time.
func lookup(t *testing.T, h Harness, adapter providers.Lookup, timeout time.Duration) ([]providers.Record, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return lookupIn(ctx, t, h, adapter)
}

// lookupIn runs the kit's query under ctx, and checks that nothing it
// returns shows the secret or the recipient.
func lookupIn(ctx context.Context, t *testing.T, h Harness, adapter providers.Lookup) ([]providers.Record, error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("the adapter panicked: %v", r)
		}
	}()
	records, err := adapter.Lookup(ctx, h.query())
	if err != nil {
		checkLeaks(t, h, "an error", err.Error())
	}
	for _, r := range records {
		checkLeaks(t, h, "a record's excerpt", r.Excerpt)
	}
	return records, err
}

// Run runs the conformance checks as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Empty == nil {
		t.Fatal("providertest: Harness needs New and Empty")
	}

	t.Run("searched and found nothing is zero records", func(t *testing.T) {
		t.Parallel()
		f, adapter, _ := setup(t, h, func(f *fake, w http.ResponseWriter, r *http.Request) { f.ok(w, r, h.Empty) })
		records, err := lookup(t, h, adapter, 10*time.Second)
		if err != nil || len(records) != 0 {
			t.Fatalf("Lookup = %v, %v; want no records and no error", records, err)
		}
		if f.gets.Load() == 0 {
			t.Error("the adapter answered without asking the provider")
		}
	})

	if h.Found != nil {
		t.Run("one record", func(t *testing.T) {
			t.Parallel()
			_, adapter, _ := setup(t, h, func(f *fake, w http.ResponseWriter, r *http.Request) { f.ok(w, r, h.Found) })
			records, err := lookup(t, h, adapter, 10*time.Second)
			if err != nil || len(records) != 1 || records[0].ID != h.FoundID {
				t.Fatalf("Lookup = %+v, %v; want one record %s", records, err, h.FoundID)
			}
		})
	}

	t.Run("cancellation is honoured promptly", func(t *testing.T) {
		t.Parallel()
		reached := make(chan struct{})
		_, adapter, _ := setup(t, h, hang(reached))
		start := time.Now()
		records, err := adapter.Lookup(testwait.CancelWhen(t, reached), h.query())
		if err == nil {
			t.Fatalf("Lookup after cancellation = %v, nil; want an error", records)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Lookup returned %s after cancellation", d)
		}
	})

	t.Run("a timeout is transient", func(t *testing.T) {
		t.Parallel()
		reached := make(chan struct{})
		_, adapter, _ := setup(t, h, hang(reached))
		start := time.Now()
		records, err := lookupIn(testwait.DeadlineWhen(t, reached), t, h, adapter)
		if err == nil {
			t.Fatalf("Lookup past its deadline = %v, nil; want an error", records)
		}
		if class, _ := providers.Classify(err); class != providers.ClassTransient {
			t.Errorf("timeout classified %s, want transient: %v", class, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Lookup returned %s after start, its deadline passing once the provider was asked", d)
		}
	})

	t.Run("429 with Retry-After is rate-limited with that delay", func(t *testing.T) {
		t.Parallel()
		_, adapter, _ := setup(t, h, func(f *fake, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "7")
			f.body(w, http.StatusTooManyRequests, f.errorBody(http.StatusTooManyRequests))
		})
		_, err := lookup(t, h, adapter, 10*time.Second)
		class, delay := providers.Classify(err)
		if err == nil || class != providers.ClassRateLimited || delay != 7*time.Second {
			t.Errorf("429: class %s delay %s (%v); want rate_limited 7s", class, delay, err)
		}
	})

	for _, tc := range []struct {
		status int
		want   providers.Class
	}{
		{500, providers.ClassTransient}, {502, providers.ClassTransient}, {503, providers.ClassTransient},
		{504, providers.ClassTransient}, {401, providers.ClassPermanent}, {403, providers.ClassPermanent},
	} {
		t.Run(fmt.Sprintf("HTTP %d is %s", tc.status, tc.want), func(t *testing.T) {
			t.Parallel()
			_, adapter, _ := setup(t, h, func(f *fake, w http.ResponseWriter, _ *http.Request) {
				f.body(w, tc.status, f.errorBody(tc.status))
			})
			records, err := lookup(t, h, adapter, 10*time.Second)
			if err == nil {
				t.Fatalf("HTTP %d: Lookup = %v, nil; want an error", tc.status, records)
			}
			if class, _ := providers.Classify(err); class != tc.want {
				t.Errorf("HTTP %d classified %s, want %s: %v", tc.status, class, tc.want, err)
			}
		})
	}

	for _, tc := range hostileBodies(t, h) {
		t.Run("hostile 200 body: "+tc.desc, func(t *testing.T) {
			t.Parallel()
			_, adapter, _ := setup(t, h, func(f *fake, w http.ResponseWriter, r *http.Request) { f.ok(w, r, tc.body) })
			records, err := lookup(t, h, adapter, 20*time.Second)
			if err == nil {
				t.Fatalf("Lookup = %d records, nil error; a body that is not the provider's answer must be an error, never records nor zero records\nbody: %s", len(records), truncate(tc.body, 2000))
			}
			if class, _ := providers.Classify(err); class != providers.ClassTransient {
				t.Errorf("a malformed answer classified %s, want transient (looked up again, then lookup_failed): %v", class, err)
			}
		})
	}

	t.Run("a dropped connection is transient", func(t *testing.T) {
		t.Parallel()
		_, adapter, _ := setup(t, h, func(_ *fake, w http.ResponseWriter, _ *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		})
		records, err := lookup(t, h, adapter, 10*time.Second)
		if err == nil {
			t.Fatalf("Lookup = %v, nil; want an error", records)
		}
		if class, _ := providers.Classify(err); class != providers.ClassTransient {
			t.Errorf("dropped connection classified %s, want transient: %v", class, err)
		}
	})
}

type hostileBody struct {
	desc string
	body []byte
}

// hostileBodies are the bodies no adapter may read as an answer: broken
// ones, and ones built from the harness's Empty and Found bodies that a
// lenient JSON reader would read as records or as none — a duplicate key
// (encoding/json keeps the last), a key in another letter case or a Unicode
// fold of it (encoding/json takes either for a struct field).
func hostileBodies(t *testing.T, h Harness) []hostileBody {
	t.Helper()
	empty := h.Empty
	huge := bytes.Repeat([]byte(" "), 8<<20)
	bodies := []hostileBody{
		{"empty", []byte{}},
		{"an empty object", []byte(`{}`)},
		{"null", []byte(`null`)},
		{"an array", []byte(`[]`)},
		{"truncated", empty[:len(empty)/2]},
		{"malformed", []byte(`{"matches": [}`)},
		{"HTML error page", []byte(`<html><body><h1>502 Bad Gateway</h1></body></html>`)},
		{"invalid UTF-8", []byte("{\"\xff\xfe\": 1}")},
		{"deeply nested", append(bytes.Repeat([]byte("["), 100000), bytes.Repeat([]byte("]"), 100000)...)},
		{"8 MiB of whitespace before the answer", append(huge, empty...)},
		{"the answer twice", append(append([]byte{}, empty...), empty...)},
	}
	if h.Found == nil {
		return bodies
	}
	return append(bodies, keyBodies(t, h.Empty, h.Found, h.RecordsAt)...)
}

// keyBodies builds the hostile bodies with duplicate and case-variant keys
// from the provider's empty answer and its answer with one record: the
// array at path in found (by default the first top-level key whose value
// differs between them and is an array: "matches", "data", "messages")
// holds the answer, and its first element the record. The keys are
// varied in the object that holds that array; an Empty that has no such
// array (QuickBooks answers an empty QueryResponse) stands for none with
// Found's object holding [] instead.
func keyBodies(t *testing.T, empty, found []byte, path []string) []hostileBody {
	t.Helper()
	e, err := parseJSON(empty)
	if err != nil || e.kind != '{' {
		t.Fatalf("providertest: Harness.Empty is not a JSON object: %v", err)
	}
	f, err := parseJSON(found)
	if err != nil || f.kind != '{' {
		t.Fatalf("providertest: Harness.Found is not a JSON object: %v", err)
	}
	key, up := "", []string(nil)
	if len(path) == 0 {
		for _, m := range f.object {
			if m.value.kind != '[' || len(m.value.array) == 0 {
				continue
			}
			if ev, ok := e.get(m.key); ok && ev.kind == '[' && len(ev.array) == 0 {
				key = m.key
				break
			}
		}
		if key == "" {
			t.Fatal("providertest: no key of Harness.Found holds an array of records where Harness.Empty holds []")
		}
	} else {
		key, up = path[len(path)-1], path[:len(path)-1]
	}
	fParent, ok := f.at(up)
	if !ok || fParent.kind != '{' {
		t.Fatalf("providertest: Harness.Found has no object at %s", strings.Join(up, "."))
	}
	one, ok := fParent.get(key)
	if !ok || one.kind != '[' || len(one.array) == 0 {
		t.Fatalf("providertest: Harness.Found holds no array of records at %s", strings.Join(path, "."))
	}
	none := jsonValue{kind: '['}
	// noneParent is the object holding the array, answering none.
	noneParent, ok := e.at(up)
	if ev, has := noneParent.get(key); !ok || noneParent.kind != '{' || !has || ev.kind != '[' || len(ev.array) != 0 {
		noneParent = fParent.without(key).plus(key, none)
	}
	record := one.array[0]
	if record.kind != '{' || len(record.object) == 0 {
		t.Fatalf("providertest: Harness.Found's %s[0] is not an object", key)
	}
	// inNone and inFound put an object back where the array's holder was,
	// in Empty's body and in Found's.
	inNone := func(p jsonValue) []byte { return e.withAt(up, p).encode() }
	inFound := func(p jsonValue) []byte { return f.withAt(up, p).encode() }
	withRecord := func(r jsonValue) []byte {
		answer := one
		answer.array = append([]jsonValue{r}, one.array[1:]...)
		return inFound(fParent.with(key, answer))
	}

	bodies := []hostileBody{
		{"duplicate " + key + ": none, then the record", inNone(noneParent.plus(key, one))},
		{"duplicate " + key + ": the record, then none", inFound(fParent.plus(key, none))},
		{"a case variant of " + key + " holding the record", inNone(noneParent.plus(upperFirst(key), one))},
		{"the record's first key twice", withRecord(record.plus(record.object[0].key, record.object[0].value))},
		{"the record's first key twice, in another letter case", withRecord(record.plus(strings.ToUpper(record.object[0].key), record.object[0].value))},
	}
	if folded, ok := unicodeFold(key); ok {
		bodies = append(bodies, hostileBody{"a Unicode fold of " + key + " holding the record", inNone(noneParent.plus(folded, one))})
	}
	if r, ok := record.withFoldedKey(); ok {
		bodies = append(bodies, hostileBody{"a record's key and its Unicode fold (KELVIN SIGN, LONG S)", withRecord(r)})
	}
	return bodies
}

// upperFirst is k with its first letter upper-cased.
func upperFirst(k string) string {
	for i, r := range k {
		if unicode.IsLower(r) {
			return k[:i] + string(unicode.ToUpper(r)) + k[i+utf8.RuneLen(r):]
		}
	}
	return strings.ToUpper(k)
}

// unicodeFold is k with its first k turned into KELVIN SIGN, or failing
// that its first s into LONG S: a key strings.EqualFold and encoding/json
// take for k, which no ASCII lower- or upper-casing gives.
func unicodeFold(k string) (string, bool) {
	for _, sub := range []struct{ from, to string }{{"k", "\u212a"}, {"K", "\u212a"}, {"s", "\u017f"}, {"S", "\u017f"}} {
		if strings.Contains(k, sub.from) {
			return strings.Replace(k, sub.from, sub.to, 1), true
		}
	}
	return "", false
}

// jsonValue is a JSON value that keeps its objects' keys in order, so that
// bodies with repeated keys can be written.
type jsonValue struct {
	kind   byte // '{', '[' or 's' (a scalar)
	raw    []byte
	array  []jsonValue
	object []member
}

type member struct {
	key   string
	value jsonValue
}

func parseJSON(data []byte) (jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readJSON(dec)
	if err != nil {
		return jsonValue{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jsonValue{}, fmt.Errorf("data after the value")
	}
	return v, nil
}

func readJSON(dec *json.Decoder) (jsonValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return jsonValue{}, err
	}
	switch tok {
	case json.Delim('['):
		v := jsonValue{kind: '['}
		for dec.More() {
			e, err := readJSON(dec)
			if err != nil {
				return jsonValue{}, err
			}
			v.array = append(v.array, e)
		}
		_, err := dec.Token()
		return v, err
	case json.Delim('{'):
		v := jsonValue{kind: '{'}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return jsonValue{}, err
			}
			e, err := readJSON(dec)
			if err != nil {
				return jsonValue{}, err
			}
			v.object = append(v.object, member{k.(string), e})
		}
		_, err := dec.Token()
		return v, err
	}
	raw, err := json.Marshal(tok)
	return jsonValue{kind: 's', raw: raw}, err
}

func (v jsonValue) encode() []byte {
	var b bytes.Buffer
	v.write(&b)
	return b.Bytes()
}

func (v jsonValue) write(b *bytes.Buffer) {
	switch v.kind {
	case '[':
		b.WriteByte('[')
		for i, e := range v.array {
			if i > 0 {
				b.WriteByte(',')
			}
			e.write(b)
		}
		b.WriteByte(']')
	case '{':
		b.WriteByte('{')
		for i, m := range v.object {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.key)
			b.Write(k)
			b.WriteByte(':')
			m.value.write(b)
		}
		b.WriteByte('}')
	default:
		b.Write(v.raw)
	}
}

func (v jsonValue) get(key string) (jsonValue, bool) {
	for _, m := range v.object {
		if m.key == key {
			return m.value, true
		}
	}
	return jsonValue{}, false
}

// at is the value at path (keys of nested objects) in v; v itself for an
// empty path.
func (v jsonValue) at(path []string) (jsonValue, bool) {
	for _, k := range path {
		next, ok := v.get(k)
		if !ok {
			return jsonValue{}, false
		}
		v = next
	}
	return v, true
}

// withAt is v with the value at path replaced by value; value itself for
// an empty path.
func (v jsonValue) withAt(path []string, value jsonValue) jsonValue {
	if len(path) == 0 {
		return value
	}
	inner, _ := v.get(path[0])
	return v.with(path[0], inner.withAt(path[1:], value))
}

// without is the object v without key.
func (v jsonValue) without(key string) jsonValue {
	members := make([]member, 0, len(v.object))
	for _, m := range v.object {
		if m.key != key {
			members = append(members, m)
		}
	}
	v.object = members
	return v
}

// plus is the object v with key: value added after its members.
func (v jsonValue) plus(key string, value jsonValue) jsonValue {
	v.object = append(append([]member{}, v.object...), member{key, value})
	return v
}

// with is the object v with key's value replaced.
func (v jsonValue) with(key string, value jsonValue) jsonValue {
	members := append([]member{}, v.object...)
	for i := range members {
		if members[i].key == key {
			members[i].value = value
		}
	}
	v.object = members
	return v
}

// withFoldedKey adds, beside the first key (depth first) that has a
// Unicode fold, that fold holding the same value.
func (v jsonValue) withFoldedKey() (jsonValue, bool) {
	if v.kind != '{' {
		return v, false
	}
	for _, m := range v.object {
		if folded, ok := unicodeFold(m.key); ok && strings.ContainsAny(m.key, "kK") {
			return v.plus(folded, m.value), true
		}
	}
	for i, m := range v.object {
		if inner, ok := m.value.withFoldedKey(); ok {
			return v.with(v.object[i].key, inner), true
		}
	}
	for _, m := range v.object {
		if folded, ok := unicodeFold(m.key); ok {
			return v.plus(folded, m.value), true
		}
	}
	return v, false
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:n:n], "…"...)
}

// syncBuffer is a bytes.Buffer safe for the adapter's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FixedBody is a transport that answers every request with 200 and the
// same body, without a network: a provider whose list or search returns one
// page over and over, for fuzzing an adapter's parsing of that page. It
// counts the requests that are not GETs (there must be none).
type FixedBody struct {
	Body []byte
	// Header is the response's header; Content-Type application/json when
	// nil.
	Header http.Header
	NonGET *atomic.Int64
}

// RoundTrip implements http.RoundTripper.
func (f FixedBody) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && f.NonGET != nil {
		f.NonGET.Add(1)
	}
	header := f.Header
	if header == nil {
		header = http.Header{"Content-Type": {"application/json"}}
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header.Clone(),
		Body:          io.NopCloser(bytes.NewReader(f.Body)),
		ContentLength: int64(len(f.Body)),
		Request:       req,
	}, nil
}

// sameAnswer fails t unless a second lookup of the same page, again, gives
// what the first gave: the same records, or an error with the same text.
func sameAnswer(t testing.TB, records []providers.Record, err error, again func() ([]providers.Record, error)) {
	t.Helper()
	records2, err2 := again()
	switch {
	case (err == nil) != (err2 == nil):
		t.Fatalf("the same body gave %v, then %v", err, err2)
	case err != nil:
		if err.Error() != err2.Error() {
			t.Errorf("the same body gave %q, then %q", err, err2)
		}
	default:
		if diff := cmp.Diff(records, records2); diff != "" {
			t.Errorf("the same body read twice (-first +second):\n%s", diff)
		}
	}
}
