package stripe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/stripe"
	"github.com/sweeper/sweeper/testkit/testwait"
)

const (
	testKey       = "sk_test_FAKE-51Hx9-do-not-show"
	testKeyEnv    = "TEST_STRIPE_KEY"
	testRecipient = "jane.doe+billing@example.com"
)

// request is what the fake saw of one request.
type request struct {
	method string
	path   string
	query  url.Values
	auth   string
}

// fakeStripe answers like Stripe's search endpoints and records what it is
// asked. Anything but a GET is counted as a write: there must be none (I1).
type fakeStripe struct {
	srv    *httptest.Server
	answer func(w http.ResponseWriter, r *http.Request) (status int, body string)
	writes atomic.Int64
	mu     sync.Mutex
	reqs   []request
}

func newFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request) (int, string)) *fakeStripe {
	t.Helper()
	f := &fakeStripe{answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			f.writes.Add(1)
			http.Error(w, "sweeper must never create or send", http.StatusMethodNotAllowed)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, request{method: r.Method, path: r.URL.Path, query: r.URL.Query(), auth: r.Header.Get("Authorization")})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_fake")
		status, body := f.answer(w, r)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(func() {
		f.srv.Close()
		if n := f.writes.Load(); n != 0 {
			t.Errorf("I1: %d request(s) other than GET reached Stripe", n)
		}
	})
	return f
}

func (f *fakeStripe) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// newLookup builds the adapter through Kind, as cmd/sweeper does, against f.
func newLookup(t *testing.T, f *fakeStripe, configure func(*stripe.Config)) providers.Lookup {
	t.Helper()
	return newLookupKey(t, f, testKey, configure)
}

// newLookupKey is newLookup with key as the secret key.
func newLookupKey(t *testing.T, f *fakeStripe, key string, configure func(*stripe.Config)) providers.Lookup {
	t.Helper()
	cfg := stripe.Kind.NewSettings().(*stripe.Config)
	cfg.SecretKeyEnv = testKeyEnv
	cfg.APIBase = f.srv.URL
	if configure != nil {
		configure(cfg)
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	lookup, err := stripe.Kind.New("payments", cfg, providers.Env{Getenv: func(k string) string {
		if k == testKeyEnv {
			return key
		}
		return ""
	}})
	if err != nil {
		t.Fatalf("Kind.New: %v", err)
	}
	return lookup
}

// query is an operation first attempted firstAttempt ago.
func query(opKey string, firstAttempt time.Duration) providers.Query {
	now := time.Now()
	return providers.Query{
		OpKey:          opKey,
		Recipient:      testRecipient,
		Action:         "charge",
		PayloadHash:    strings.Repeat("ab", 32),
		FirstAttemptAt: now.Add(-firstAttempt),
		Since:          now.Add(-firstAttempt - 15*time.Minute),
		Until:          now,
	}
}

// lookup runs q and checks what no answer may carry.
func lookup(t *testing.T, l providers.Lookup, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	records, err := l.Lookup(ctx, q)
	if err != nil {
		for _, secret := range []string{testKey, testRecipient} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error carries %q: %v", secret, err)
			}
		}
	}
	for _, r := range records {
		if strings.Contains(r.Excerpt, "@") {
			t.Errorf("excerpt carries an email: %q", r.Excerpt)
		}
	}
	return records, err
}

// object is a Stripe object as its API returns it (the fields the adapter
// reads, and a few it does not).
func object(kind, id, opKey string, amount int, status string, extra map[string]any) map[string]any {
	o := map[string]any{
		"id": id, "object": kind, "amount": amount, "currency": "usd", "status": status,
		"created": 1764410400, "livemode": false, "customer": nil, "receipt_email": nil,
		"description": "Order 1234", "metadata": map[string]string{"op_key": opKey},
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

func paymentIntent(id, opKey string, extra map[string]any) map[string]any {
	return object("payment_intent", id, opKey, 1299, "succeeded", extra)
}

// charge is a captured Charge that succeeded, neither refunded nor
// disputed, as Stripe renders one.
func charge(id, opKey string, extra map[string]any) map[string]any {
	c := map[string]any{"captured": true, "refunded": false, "amount_refunded": 0, "disputed": false}
	for k, v := range extra {
		c[k] = v
	}
	return object("charge", id, opKey, 1299, "succeeded", c)
}

// searchResult is a page of a Stripe search; next is "" on the last page.
func searchResult(path, next string, data ...map[string]any) string {
	if data == nil {
		data = []map[string]any{}
	}
	page := map[string]any{"object": "search_result", "url": path, "has_more": next != "", "next_page": nil, "data": data}
	if next != "" {
		page["next_page"] = next
	}
	b, err := json.Marshal(page)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func stripeError(typ, message string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": typ, "message": message}})
	return string(b)
}

func wantHash(t *testing.T) string {
	t.Helper()
	h, err := ledger.PayloadHashOf(map[string]any{"amount": 1299, "currency": "usd"})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLookupOneMatch(t *testing.T) {
	t.Parallel()
	const opKey = "order-1234-charge"
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, "", paymentIntent("pi_3Nx1", opKey, map[string]any{
			"customer": "cus_Q1", "receipt_email": testRecipient, "currency": "USD",
		}))
	})
	records, err := lookup(t, newLookup(t, f, nil), query(opKey, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.Record{{
		ID:          "pi_3Nx1",
		CreatedAt:   time.Unix(1764410400, 0).UTC(),
		Recipient:   "cus_Q1",
		Fields:      map[string]any{"amount": int64(1299), "currency": "usd"},
		PayloadHash: wantHash(t),
		Excerpt:     "payment_intent pi_3Nx1 succeeded 1299 USD",
		State:       providers.StateEffect,
		Status:      "succeeded",
	}}
	if diff := cmp.Diff(want, records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}

	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if reqs[0].path != "/v1/payment_intents/search" {
		t.Errorf("path %s", reqs[0].path)
	}
	if got, want := reqs[0].query.Get("query"), "metadata['op_key']:'order-1234-charge'"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
	if got := reqs[0].query.Get("limit"); got != "100" {
		t.Errorf("limit %q, want 100", got)
	}
	if got := reqs[0].auth; got != "Bearer "+testKey {
		t.Errorf("Authorization %q, want the key as a bearer token", got)
	}
}

func TestLookupRecipientIsReceiptEmailWithoutCustomer(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, "", paymentIntent("pi_1", "op-1", map[string]any{"receipt_email": testRecipient}))
	})
	records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Recipient != testRecipient {
		t.Fatalf("records %+v; want one with the receipt email as recipient", records)
	}
}

func TestLookupTwoMatches(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, "", paymentIntent("pi_1", "op-1", nil), paymentIntent("pi_2", "op-1", nil))
	})
	records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(records); !cmp.Equal(got, []string{"pi_1", "pi_2"}) {
		t.Errorf("ids %v, want [pi_1 pi_2]", got)
	}
	for _, r := range records {
		if r.PayloadHash != wantHash(t) {
			t.Errorf("%s: payload hash %s, want %s", r.ID, r.PayloadHash, wantHash(t))
		}
	}
}

func TestLookupChargesAndPaymentIntents(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		switch r.URL.Path {
		case "/v1/payment_intents/search":
			return 200, searchResult(r.URL.Path, "", paymentIntent("pi_A", "op-1", nil))
		case "/v1/charges/search":
			return 200, searchResult(r.URL.Path, "",
				// A legacy charge, made without a PaymentIntent.
				charge("ch_B", "op-1", map[string]any{"payment_intent": nil, "receipt_email": testRecipient}),
				// pi_A's own charge: the same payment, not a second one.
				charge("ch_C", "op-1", map[string]any{"payment_intent": "pi_A"}))
		}
		return 404, stripeError("invalid_request_error", "Unrecognized request URL")
	})
	l := newLookup(t, f, func(c *stripe.Config) { c.Objects = []string{"payment_intents", "charges"} })
	records, err := lookup(t, l, query("op-1", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(records); !cmp.Equal(got, []string{"pi_A", "ch_B"}) {
		t.Errorf("ids %v, want [pi_A ch_B]", got)
	}
	for _, r := range records {
		if r.PayloadHash != wantHash(t) {
			t.Errorf("%s: payload hash %s, want %s", r.ID, r.PayloadHash, wantHash(t))
		}
		if r.ID == "ch_B" && (r.Recipient != testRecipient || r.Excerpt != "charge ch_B succeeded 1299 usd") {
			t.Errorf("ch_B: recipient %q excerpt %q", r.Recipient, r.Excerpt)
		}
	}
	var paths []string
	for _, r := range f.requests() {
		paths = append(paths, r.path)
	}
	if want := []string{"/v1/payment_intents/search", "/v1/charges/search"}; !cmp.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
}

func TestLookupPages(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		switch r.URL.Query().Get("page") {
		case "":
			return 200, searchResult(r.URL.Path, "cursor-2", paymentIntent("pi_1", "op-1", nil))
		case "cursor-2":
			return 200, searchResult(r.URL.Path, "cursor-3")
		case "cursor-3":
			return 200, searchResult(r.URL.Path, "", paymentIntent("pi_2", "op-1", nil), paymentIntent("pi_1", "op-1", nil))
		}
		return 400, stripeError("invalid_request_error", "Invalid page")
	})
	records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// pi_1 shows on two pages (the index moved): it is one record.
	if got := ids(records); !cmp.Equal(got, []string{"pi_1", "pi_2"}) {
		t.Errorf("ids %v, want [pi_1 pi_2]", got)
	}
	var pages []string
	for _, r := range f.requests() {
		pages = append(pages, r.query.Get("page"))
		if got := r.query.Get("query"); got != "metadata['op_key']:'op-1'" {
			t.Errorf("page %q: query %q", r.query.Get("page"), got)
		}
	}
	if want := []string{"", "cursor-2", "cursor-3"}; !cmp.Equal(pages, want) {
		t.Errorf("pages requested %q, want %q", pages, want)
	}
}

func TestLookupTooManyPages(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, fmt.Sprintf("cursor-%d", n.Add(1)), paymentIntent(fmt.Sprintf("pi_%d", n.Load()), "op-1", nil))
	})
	records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
	if err == nil {
		t.Fatalf("Lookup = %d records, nil; want an error past the page cap", len(records))
	}
	if class, _ := providers.Classify(err); class != providers.ClassPermanent {
		t.Errorf("class %s, want permanent: %v", class, err)
	}
	if got := len(f.requests()); got != 10 {
		t.Errorf("%d pages read, want 10", got)
	}
}

func TestLookupQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc        string
		opKey       string
		metadataKey string
		want        string
	}{
		{desc: "plain", opKey: "order-1234", metadataKey: "op_key", want: `metadata['op_key']:'order-1234'`},
		{desc: "a quote is escaped", opKey: `o'brien-1`, metadataKey: "op_key", want: `metadata['op_key']:'o\'brien-1'`},
		{desc: "a backslash is escaped", opKey: `a\b`, metadataKey: "op_key", want: `metadata['op_key']:'a\\b'`},
		{desc: "an injection stays one value", opKey: `x' OR status:'succeeded`, metadataKey: "op_key", want: `metadata['op_key']:'x\' OR status:\'succeeded'`},
		{desc: "another metadata key", opKey: "k-1", metadataKey: "sweeper.op", want: `metadata['sweeper.op']:'k-1'`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) { return 200, searchResult(r.URL.Path, "") })
			l := newLookup(t, f, func(c *stripe.Config) {
				c.MetadataKey = tc.metadataKey
				c.Objects = []string{"charges"}
			})
			if _, err := lookup(t, l, query(tc.opKey, time.Hour)); err != nil {
				t.Fatal(err)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			if reqs[0].path != "/v1/charges/search" {
				t.Errorf("path %s, want /v1/charges/search", reqs[0].path)
			}
			if got := reqs[0].query.Get("query"); got != tc.want {
				t.Errorf("query %s, want %s", got, tc.want)
			}
		})
	}
}

// TestLookupLeavesOutOtherOperations: Stripe's search matches metadata more
// loosely than equality; only an object whose metadata holds the op_key,
// exactly, is the operation's. The metadata key itself may be in another
// letter case (a workflow that wrote OP_KEY).
func TestLookupLeavesOutOtherOperations(t *testing.T) {
	t.Parallel()
	meta := func(m map[string]string) map[string]any { return map[string]any{"metadata": m} }
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, "",
			paymentIntent("pi_other", "ORDER-10", nil),
			paymentIntent("pi_mine", "order-10", nil),
			paymentIntent("pi_unkeyed", "", meta(map[string]string{})),
			paymentIntent("pi_other_key", "", meta(map[string]string{"order": "order-10"})),
			paymentIntent("pi_upper_key_other", "", meta(map[string]string{"OP_KEY": "ORDER-10"})),
			paymentIntent("pi_upper_key_mine", "", meta(map[string]string{"OP_KEY": "order-10"})),
			paymentIntent("pi_spaced", "", meta(map[string]string{"op_key": "order-10 "})))
	})
	records, err := lookup(t, newLookup(t, f, nil), query("order-10", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(records), []string{"pi_mine", "pi_upper_key_mine"}; !cmp.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}

// TestLookupMetadataKeyCase: metadata {"OP_KEY": "order-10"} is not proof
// for the operation ORDER-10 — the key is found in any letter case, the
// value compared exactly — and an object without the key is no match, so
// after the settle window zero records is "not found".
func TestLookupMetadataKeyCase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		metadata map[string]string
		opKey    string
		want     []string
	}{
		{desc: "a key in upper case, the value in another case", metadata: map[string]string{"OP_KEY": "order-10"}, opKey: "ORDER-10", want: []string{}},
		{desc: "the key, the value in another case", metadata: map[string]string{"op_key": "order-10"}, opKey: "ORDER-10", want: []string{}},
		{desc: "a key in upper case, the same value", metadata: map[string]string{"OP_KEY": "ORDER-10"}, opKey: "ORDER-10", want: []string{"pi_1"}},
		{desc: "no key", metadata: map[string]string{"note": "ORDER-10"}, opKey: "ORDER-10", want: []string{}},
		{desc: "no metadata", metadata: nil, opKey: "ORDER-10", want: []string{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
				return 200, searchResult(r.URL.Path, "", paymentIntent("pi_1", "", map[string]any{"metadata": tc.metadata}))
			})
			records, err := lookup(t, newLookup(t, f, nil), query(tc.opKey, time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(records); !cmp.Equal(got, tc.want, cmpopts.EquateEmpty()) {
				t.Errorf("ids %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLookupSameObjectTwice: an object listed twice (the index moved
// between pages) is one record when both copies agree.
func TestLookupSameObjectTwice(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, "", paymentIntent("pi_1", "op-1", nil), paymentIntent("pi_1", "op-1", nil))
	})
	records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(records); !cmp.Equal(got, []string{"pi_1"}) {
		t.Errorf("ids %v, want [pi_1]", got)
	}
}

// pi is a payment intent as JSON.
func pi(t *testing.T, id, opKey string, extra map[string]any) string {
	t.Helper()
	b, err := json.Marshal(paymentIntent(id, opKey, extra))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupPayloadProof(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		obj      map[string]any
		wantHash bool
	}{
		{desc: "succeeded", obj: paymentIntent("pi_1", "op-1", nil), wantHash: true},
		{desc: "processing", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "processing"}), wantHash: true},
		{desc: "awaiting capture", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_capture"}), wantHash: true},
		{desc: "declined", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_payment_method"})},
		{desc: "canceled", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "canceled"})},
		{desc: "no currency", obj: paymentIntent("pi_1", "op-1", map[string]any{"currency": nil})},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
				return 200, searchResult(r.URL.Path, "", tc.obj)
			})
			records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if len(records) != 1 {
				t.Fatalf("%d records, want 1", len(records))
			}
			if got := records[0].PayloadHash != ""; got != tc.wantHash {
				t.Errorf("record carries a payload hash: %v, want %v (%+v)", got, tc.wantHash, records[0])
			}
			if tc.wantHash && records[0].PayloadHash != wantHash(t) {
				t.Errorf("payload hash %s, want %s", records[0].PayloadHash, wantHash(t))
			}
		})
	}
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	leakyMessage := "Invalid API Key provided: " + testKey + " for " + testRecipient +
		" at https://api.stripe.com/v1/payment_intents/search?query=metadata%5B%27op_key%27%5D"
	for _, tc := range []struct {
		desc      string
		status    int
		body      string
		header    map[string]string
		wantClass providers.Class
		wantDelay time.Duration
	}{
		{desc: "401 echoing the key", status: 401, body: stripeError("invalid_request_error", leakyMessage), wantClass: providers.ClassPermanent},
		{desc: "403", status: 403, body: stripeError("invalid_request_error", "The provided key does not have access to charges"), wantClass: providers.ClassPermanent},
		{desc: "400 invalid query", status: 400, body: stripeError("invalid_request_error", "Invalid search query"), wantClass: providers.ClassPermanent},
		{desc: "404", status: 404, body: stripeError("invalid_request_error", "Unrecognized request URL"), wantClass: providers.ClassPermanent},
		{desc: "429 with Retry-After", status: 429, body: stripeError("invalid_request_error", "Too many requests"), header: map[string]string{"Retry-After": "7"},
			wantClass: providers.ClassRateLimited, wantDelay: 7 * time.Second},
		{desc: "429 without Retry-After waits 1s", status: 429, body: stripeError("invalid_request_error", "Too many requests"),
			wantClass: providers.ClassRateLimited, wantDelay: time.Second},
		{desc: "429 from a proxy, not Stripe's JSON", status: 429, body: "slow down", header: map[string]string{"Retry-After": "3"},
			wantClass: providers.ClassRateLimited, wantDelay: 3 * time.Second},
		{desc: "500", status: 500, body: stripeError("api_error", "Something went wrong"), wantClass: providers.ClassTransient},
		{desc: "502 HTML from a proxy", status: 502, body: "<html><h1>502 Bad Gateway</h1></html>", wantClass: providers.ClassTransient},
		{desc: "503 empty", status: 503, wantClass: providers.ClassTransient},
		{desc: "409 lock timeout", status: 409, body: stripeError("invalid_request_error", "lock_timeout"), wantClass: providers.ClassTransient},
		{desc: "redirect", status: 302, header: map[string]string{"Location": "https://evil.example/"}, wantClass: providers.ClassPermanent},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request) (int, string) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				return tc.status, tc.body
			})
			records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
			if err == nil {
				t.Fatalf("Lookup = %v, nil; want an error", records)
			}
			t.Logf("error: %v", err)
			class, delay := providers.Classify(err)
			if class != tc.wantClass || delay != tc.wantDelay {
				t.Errorf("class %s delay %s, want %s %s: %v", class, delay, tc.wantClass, tc.wantDelay, err)
			}
			if strings.Contains(err.Error(), "?query=") || strings.Contains(err.Error(), "%5B") {
				t.Errorf("error carries a URL with its query: %v", err)
			}
		})
	}
}

func TestLookupBadBodies(t *testing.T) {
	t.Parallel()
	const path = "/v1/payment_intents/search"
	for _, tc := range []struct {
		desc string
		body string
	}{
		{desc: "empty object", body: `{}`},
		{desc: "null", body: `null`},
		{desc: "a list, not a search result", body: `{"object":"list","data":[],"has_more":false}`},
		{desc: "no data", body: `{"object":"search_result","has_more":false,"next_page":null}`},
		{desc: "data null", body: `{"object":"search_result","data":null,"has_more":false}`},
		{desc: "data not an array", body: `{"object":"search_result","data":{},"has_more":false}`},
		{desc: "no has_more", body: `{"object":"search_result","data":[]}`},
		{desc: "has_more without next_page", body: `{"object":"search_result","data":[],"has_more":true,"next_page":null}`},
		{desc: "DATA instead of data", body: `{"object":"search_result","DATA":[],"has_more":false}`},
		{desc: "trailing data", body: searchResult(path, "") + `{"object":"search_result"}`},
		{desc: "an id instead of an object", body: `{"object":"search_result","data":["pi_1"],"has_more":false}`},
		{desc: "a charge in a payment intent search", body: searchResult(path, "", charge("ch_1", "op-1", nil))},
		{desc: "an object without an id", body: searchResult(path, "", paymentIntent("", "op-1", nil))},
		{desc: "an amount that is not a number", body: searchResult(path, "", paymentIntent("pi_1", "op-1", map[string]any{"amount": "12.99", "receipt_email": testRecipient}))},
		{desc: "5 MiB", body: `{"object":"search_result","has_more":false,"data":[],"pad":"` + strings.Repeat("x", 5<<20) + `"}`},
		// Keys a lenient reader (the SDK's encoding/json) would take one way
		// or another: the last of duplicates, any letter case of a name.
		{desc: "data twice, the object last", body: `{"object":"search_result","has_more":false,"data":[],"data":[` + pi(t, "pi_1", "op-1", nil) + `]}`},
		{desc: "data twice, none last", body: `{"object":"search_result","has_more":false,"data":[` + pi(t, "pi_1", "op-1", nil) + `],"data":[]}`},
		{desc: "data and DATA", body: `{"object":"search_result","has_more":false,"data":[],"DATA":[` + pi(t, "pi_1", "op-1", nil) + `]}`},
		{desc: "Has_More alone", body: `{"object":"search_result","Has_More":false,"data":[]}`},
		{desc: "an amount twice", body: `{"object":"search_result","has_more":false,"data":[` + strings.Replace(pi(t, "pi_1", "op-1", nil), `"amount":1299`, `"amount":1,"amount":1299`, 1) + `]}`},
		{desc: "amount and Amount", body: `{"object":"search_result","has_more":false,"data":[` + strings.Replace(pi(t, "pi_1", "op-1", nil), `"amount":1299`, `"amount":1,"Amount":1299`, 1) + `]}`},
		{desc: "ID alone", body: `{"object":"search_result","has_more":false,"data":[` + strings.Replace(pi(t, "pi_1", "op-1", nil), `"id":`, `"ID":`, 1) + `]}`},
		{desc: "Status alone", body: `{"object":"search_result","has_more":false,"data":[` + strings.Replace(pi(t, "pi_1", "op-1", map[string]any{"status": "canceled"}), `"status":`, `"Status":`, 1) + `]}`},
		{desc: "the op_key twice in metadata", body: searchResult(path, "", paymentIntent("pi_1", "op-1", map[string]any{"metadata": json.RawMessage(`{"op_key":"op-2","op_key":"op-1"}`)}))},
		{desc: "op_key and OP_KEY in metadata", body: searchResult(path, "", paymentIntent("pi_1", "op-1", map[string]any{"metadata": json.RawMessage(`{"op_key":"op-1","OP_KEY":"op-2"}`)}))},
		{desc: "op_key and its KELVIN SIGN fold in metadata", body: searchResult(path, "", paymentIntent("pi_1", "op-1", map[string]any{"metadata": json.RawMessage(`{"op_\u212aey":"op-2","op_key":"op-1"}`)}))},
		{desc: "invalid UTF-8", body: strings.Replace(searchResult(path, "", paymentIntent("pi_1", "op-1", nil)), "Order 1234", "Order \xff", 1)},
		{desc: "one object twice with different amounts", body: searchResult(path, "", paymentIntent("pi_1", "op-1", nil), paymentIntent("pi_1", "op-1", map[string]any{"amount": 1}))},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(http.ResponseWriter, *http.Request) (int, string) { return 200, tc.body })
			records, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
			if err == nil {
				t.Fatalf("Lookup = %d records, nil; a body that is not a search result must be an error", len(records))
			}
			t.Logf("error: %v", err)
			if class, _ := providers.Classify(err); class != providers.ClassTransient {
				t.Errorf("class %s, want transient: %v", class, err)
			}
		})
	}
}

func TestLookupNetworkError(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) { return 200, searchResult(r.URL.Path, "") })
	l := newLookup(t, f, nil)
	f.srv.Close() // nothing listens any more
	records, err := lookup(t, l, query("op-1", time.Hour))
	if err == nil {
		t.Fatalf("Lookup = %v, nil; want an error", records)
	}
	t.Logf("error: %v", err)
	if class, _ := providers.Classify(err); class != providers.ClassTransient {
		t.Errorf("class %s, want transient: %v", class, err)
	}
	if strings.Contains(err.Error(), "query=") || strings.Contains(err.Error(), "op-1") {
		t.Errorf("error carries the request URL: %v", err)
	}
}

func TestLookupWithoutOpKey(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) { return 200, searchResult(r.URL.Path, "") })
	_, err := lookup(t, newLookup(t, f, nil), query("", time.Hour))
	if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent {
		t.Fatalf("Lookup without op_key: %v (%s); want a permanent error", err, class)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests for an operation without op_key", n)
	}
}

func TestLookupCancelled(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	reached := make(chan struct{})
	in := sync.OnceFunc(func() { close(reached) })
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		in()
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return 200, searchResult(r.URL.Path, "")
	})
	t.Cleanup(func() { close(release) })
	l := newLookup(t, f, nil)
	start := time.Now()
	_, err := l.Lookup(testwait.CancelWhen(t, reached), query("op-1", time.Hour))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Lookup after cancellation: %v; want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned %s after cancellation", d)
	}
}

func TestLookupNeverWrites(t *testing.T) {
	t.Parallel()
	// Whatever the adapter is asked, the fake counts no write (checked in
	// newFake's cleanup); here every answer kind is asked for in one place.
	var calls atomic.Int64
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		switch calls.Add(1) % 4 {
		case 0:
			return 500, stripeError("api_error", "boom")
		case 1:
			return 200, searchResult(r.URL.Path, "")
		case 2:
			return 200, searchResult(r.URL.Path, "", paymentIntent("pi_1", "op-1", nil))
		}
		return 429, stripeError("invalid_request_error", "slow")
	})
	l := newLookup(t, f, func(c *stripe.Config) { c.Objects = []string{"charges", "payment_intents"} })
	for range 8 {
		lookup(t, l, query("op-1", time.Hour)) //nolint:errcheck // only the requests matter
	}
	for _, r := range f.requests() {
		if r.method != http.MethodGet {
			t.Errorf("%s %s", r.method, r.path)
		}
	}
}

func ids(records []providers.Record) []string {
	var out []string
	for _, r := range records {
		out = append(out, r.ID)
	}
	return out
}

// TestLookupErrorKeepsNoProviderText: Stripe's message in an error body is
// the provider's free text — it can quote a code or a link of the
// customer's — and the error keeps it only as a length and a digest; the
// status, Stripe's error type and the adapter's words stay readable.
func TestLookupErrorKeepsNoProviderText(t *testing.T) {
	t.Parallel()
	const message = "Your Acme code is G-482913, see https://acme.example/l/9fQ2xZ7kLmN0pR"
	for _, status := range []int{400, 500} {
		f := newFake(t, func(http.ResponseWriter, *http.Request) (int, string) {
			return status, stripeError("invalid_request_error", message)
		})
		_, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour))
		if err == nil {
			t.Fatalf("HTTP %d: no error", status)
		}
		text := err.Error()
		for _, secret := range []string{"G-482913", "acme.example", "9fQ2xZ7kLmN0pR", "Your Acme code"} {
			if strings.Contains(text, secret) {
				t.Errorf("HTTP %d: error %q quotes the provider's text %q", status, text, secret)
			}
		}
		want := fmt.Sprintf("search payment_intents: HTTP %d invalid_request_error: [provider text: %d characters, digest ", status, len(message))
		if !strings.Contains(text, want) {
			t.Errorf("HTTP %d: error %q; want it to hold %q", status, text, want)
		}
		var said *providers.ProviderText
		if !errors.As(err, &said) || said.Text() != message {
			t.Errorf("HTTP %d: error %v does not carry the provider's text apart", status, err)
		}
	}
}
