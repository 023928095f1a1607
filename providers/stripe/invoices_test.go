package stripe_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/stripe"
)

const testCustomer = "cus_Q1"

// invoice is an Invoice as Stripe's API renders one: issued (open), for
// testCustomer, total 4200 EUR.
func invoice(id, opKey, status string, extra map[string]any) map[string]any {
	o := map[string]any{
		"id": id, "object": "invoice", "status": status, "total": 4200, "amount_due": 4200, "amount_paid": 0,
		"currency": "eur", "created": 1764410400, "livemode": false, "customer": testCustomer,
		"customer_email": testRecipient, "description": "Consulting, November", "number": "A1B2-0001",
		"metadata": map[string]string{"op_key": opKey},
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// invoiceList is a page of GET /v1/invoices: a list, paged by has_more and
// starting_after (no next_page).
func invoiceList(hasMore bool, data ...map[string]any) string {
	if data == nil {
		data = []map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"object": "list", "url": "/v1/invoices", "has_more": hasMore, "data": data})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func invoices(c *stripe.Config) { c.Objects = []string{stripe.ObjectInvoices} }

// customerQuery is query with the customer's id as the ledger's recipient.
func customerQuery(opKey string, firstAttempt time.Duration) providers.Query {
	q := query(opKey, firstAttempt)
	q.Recipient = testCustomer
	return q
}

func invoiceHash(t *testing.T) string {
	t.Helper()
	h, err := ledger.PayloadHashOf(map[string]any{"amount": 4200, "currency": "eur"})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestInvoiceStates: each status Stripe documents for an Invoice is read
// onto one state; only an issued invoice (open, paid) proves the effect.
func TestInvoiceStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc       string
		status     any
		want       providers.State
		wantStatus string
		wantHash   bool
		malformed  bool
	}{
		{desc: "a draft is in flight: it may still be finalized or deleted", status: "draft", want: providers.StateInFlight, wantStatus: "draft"},
		{desc: "an open invoice was issued: the effect", status: "open", want: providers.StateEffect, wantStatus: "open", wantHash: true},
		{desc: "a paid invoice: the effect", status: "paid", want: providers.StateEffect, wantStatus: "paid", wantHash: true},
		{desc: "a void invoice was cancelled: a failed attempt", status: "void", want: providers.StateFailed, wantStatus: "void (the invoice was cancelled)"},
		{desc: "an uncollectible invoice was issued, then written off: reversed", status: "uncollectible",
			want: providers.StateReversed, wantStatus: "uncollectible (issued, then written off)", wantHash: true},
		{desc: "an unknown status is malformed", status: "teleported", malformed: true},
		{desc: "a null status is malformed", status: nil, malformed: true},
	} {
		for _, path := range []string{"search", "list"} {
			t.Run(path+": "+tc.desc, func(t *testing.T) {
				t.Parallel()
				obj := invoice("in_1", "op-1", "", map[string]any{"status": tc.status})
				f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
					if path == "list" {
						return 200, invoiceList(false, obj)
					}
					return 200, searchResult(r.URL.Path, "", obj)
				})
				q := query("op-1", time.Hour)
				if path == "list" {
					q = customerQuery("op-1", time.Hour)
				}
				records, err := lookup(t, newLookup(t, f, invoices), q)
				if tc.malformed {
					if class, _ := providers.Classify(err); err == nil || class != providers.ClassTransient {
						t.Fatalf("Lookup = %+v, %v; want a malformed (transient) answer", records, err)
					}
					return
				}
				if err != nil || len(records) != 1 {
					t.Fatalf("Lookup = %+v, %v; want one record", records, err)
				}
				r := records[0]
				if r.State != tc.want || r.Status != tc.wantStatus {
					t.Errorf("state %q status %q, want %q %q", r.State, r.Status, tc.want, tc.wantStatus)
				}
				if got := r.PayloadHash != ""; got != tc.wantHash {
					t.Errorf("payload hash %q; want one: %v", r.PayloadHash, tc.wantHash)
				}
			})
		}
	}
}

// TestInvoicesListedForACustomer: an operation whose recipient is a
// customer id is looked up in the customer's invoices list (exact, no
// search lag) within the lookup's window; only the invoice whose metadata
// holds the op_key is its record, with the customer as recipient and
// total and currency as fields.
func TestInvoicesListedForACustomer(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, invoiceList(false,
			invoice("in_other", "op-2", "paid", nil),
			invoice("in_1", "op-1", "paid", map[string]any{"currency": "EUR"}),
			invoice("in_nokey", "", "paid", map[string]any{"metadata": map[string]string{}}))
	})
	q := customerQuery("op-1", time.Hour)
	records, err := lookup(t, newLookup(t, f, invoices), q)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.Record{{
		ID:          "in_1",
		CreatedAt:   time.Unix(1764410400, 0).UTC(),
		Recipient:   testCustomer,
		Fields:      map[string]any{"amount": int64(4200), "currency": "eur"},
		PayloadHash: invoiceHash(t),
		Excerpt:     "invoice in_1 paid 4200 EUR",
		State:       providers.StateEffect,
		Status:      "paid",
	}}
	if diff := cmp.Diff(want, records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].path != "/v1/invoices" {
		t.Fatalf("requests %+v; want one GET /v1/invoices and no search", reqs)
	}
	for k, v := range map[string]string{
		"customer": testCustomer, "limit": "100",
		"created[gte]": fmt.Sprint(q.Since.Unix()), "created[lte]": fmt.Sprint(q.Until.Unix()),
	} {
		if got := reqs[0].query.Get(k); got != v {
			t.Errorf("%s = %q, want %q (query %v)", k, got, v, reqs[0].query)
		}
	}
	if got := reqs[0].query.Get("starting_after"); got != "" {
		t.Errorf("starting_after %q on the first page", got)
	}
}

// TestInvoicesSearchedWithoutACustomer: an operation whose recipient is an
// address is looked up with the Search API, by its op_key.
func TestInvoicesSearchedWithoutACustomer(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, "", invoice("in_1", "op-1", "open", map[string]any{"customer": nil}))
	})
	records, err := lookup(t, newLookup(t, f, invoices), query("op-1", time.Hour))
	if err != nil || len(records) != 1 || records[0].Recipient != testRecipient {
		t.Fatalf("Lookup = %+v, %v; want in_1, its recipient the customer_email", records, err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].path != "/v1/invoices/search" || reqs[0].query.Get("query") != "metadata['op_key']:'op-1'" {
		t.Fatalf("requests %+v; want one invoice search by op_key", reqs)
	}
}

// TestInvoiceSearchLagSettlesLater: a fresh invoice missing from the
// lagging search index is no record (never a "not sent": the settle
// window turns it into a wait), and a later lookup finds it.
func TestInvoiceSearchLagSettlesLater(t *testing.T) {
	t.Parallel()
	indexed := make(chan struct{})
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		select {
		case <-indexed:
			return 200, searchResult(r.URL.Path, "", invoice("in_1", "op-1", "open", nil))
		default:
			return 200, searchResult(r.URL.Path, "")
		}
	})
	l := newLookup(t, f, invoices)
	records, err := lookup(t, l, query("op-1", time.Minute))
	if err != nil || len(records) != 0 {
		t.Fatalf("before indexing: Lookup = %+v, %v; want no record yet", records, err)
	}
	if stripe.Kind.SettleWindow <= 0 {
		t.Fatalf("settle window %v: an empty search answer would be final at once", stripe.Kind.SettleWindow)
	}
	close(indexed)
	records, err = lookup(t, l, query("op-1", time.Minute))
	if err != nil || len(records) != 1 || records[0].State != providers.StateEffect {
		t.Fatalf("after indexing: Lookup = %+v, %v; want the issued invoice", records, err)
	}
}

// TestInvoiceListPages: the list is followed page by page, each asking
// starting_after the last invoice of the one before.
func TestInvoiceListPages(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"":     invoiceList(true, invoice("in_a", "op-x", "paid", nil), invoice("in_b", "op-x", "paid", nil)),
		"in_b": invoiceList(true, invoice("in_c", "op-x", "paid", nil)),
		"in_c": invoiceList(false, invoice("in_1", "op-1", "paid", nil)),
	}
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		body, ok := pages[r.URL.Query().Get("starting_after")]
		if !ok {
			return 400, stripeError("invalid_request_error", "No such invoice")
		}
		return 200, body
	})
	records, err := lookup(t, newLookup(t, f, invoices), customerQuery("op-1", time.Hour))
	if err != nil || len(records) != 1 || records[0].ID != "in_1" {
		t.Fatalf("Lookup = %+v, %v; want in_1 from the third page", records, err)
	}
	var after []string
	for _, r := range f.requests() {
		after = append(after, r.query.Get("starting_after"))
	}
	if diff := cmp.Diff([]string{"", "in_b", "in_c"}, after); diff != "" {
		t.Errorf("starting_after (-want +got):\n%s", diff)
	}
}

// TestInvoiceListBadAnswers: a list answer the adapter cannot follow or
// read is a failed lookup, never "found none".
func TestInvoiceListBadAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc      string
		answer    func(after string) (int, string, http.Header)
		wantClass providers.Class
		wantDelay time.Duration
	}{
		{desc: "has_more on an empty page", answer: func(string) (int, string, http.Header) { return 200, invoiceList(true), nil },
			wantClass: providers.ClassTransient},
		{desc: "has_more, the same last invoice again", answer: func(string) (int, string, http.Header) {
			return 200, invoiceList(true, invoice("in_a", "op-x", "paid", nil)), nil
		}, wantClass: providers.ClassTransient},
		{desc: "more pages than the bound", answer: func(after string) (int, string, http.Header) {
			return 200, invoiceList(true, invoice("in_after_"+strings.TrimPrefix(after, "in_after_")+"x", "op-x", "paid", nil)), nil
		}, wantClass: providers.ClassPermanent},
		{desc: "a next_page cursor the list does not have", answer: func(string) (int, string, http.Header) {
			return 200, `{"object":"list","url":"/v1/invoices","has_more":false,"next_page":null,"data":[]}`, nil
		}, wantClass: providers.ClassTransient},
		{desc: "a search result where a list was asked for", answer: func(string) (int, string, http.Header) {
			return 200, searchResult("/v1/invoices", ""), nil
		}, wantClass: providers.ClassTransient},
		{desc: "no has_more", answer: func(string) (int, string, http.Header) {
			return 200, `{"object":"list","url":"/v1/invoices","data":[]}`, nil
		}, wantClass: providers.ClassTransient},
		{desc: "a duplicate data key", answer: func(string) (int, string, http.Header) {
			return 200, `{"object":"list","url":"/v1/invoices","has_more":false,"data":[],"data":[]}`, nil
		}, wantClass: providers.ClassTransient},
		{desc: "429 with Retry-After is rate limited", answer: func(string) (int, string, http.Header) {
			return 429, stripeError("invalid_request_error", "Too many requests"), http.Header{"Retry-After": {"7"}}
		}, wantClass: providers.ClassRateLimited, wantDelay: 7 * time.Second},
		{desc: "403: a key without invoice access", answer: func(string) (int, string, http.Header) {
			return 403, stripeError("invalid_request_error", "The provided key does not have access to invoices"), nil
		}, wantClass: providers.ClassPermanent},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) (int, string) {
				status, body, header := tc.answer(r.URL.Query().Get("starting_after"))
				for k, v := range header {
					w.Header()[k] = v
				}
				return status, body
			})
			records, err := lookup(t, newLookup(t, f, invoices), customerQuery("op-1", time.Hour))
			class, delay := providers.Classify(err)
			if err == nil || class != tc.wantClass || delay != tc.wantDelay {
				t.Fatalf("Lookup = %+v, %v (class %s, delay %v); want class %s, delay %v", records, err, class, delay, tc.wantClass, tc.wantDelay)
			}
		})
	}
}

// TestInvoiceLivemodeMismatch: a live invoice answered to a test key (a
// list or a search) is a permanent misconfiguration, never proof.
func TestInvoiceLivemodeMismatch(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		live := invoice("in_1", "op-1", "paid", map[string]any{"livemode": true})
		if strings.HasSuffix(r.URL.Path, "/search") {
			return 200, searchResult(r.URL.Path, "", live)
		}
		return 200, invoiceList(false, live)
	})
	l := newLookup(t, f, invoices)
	for _, q := range []providers.Query{customerQuery("op-1", time.Hour), query("op-1", time.Hour)} {
		records, err := lookup(t, l, q)
		if class, _ := providers.Classify(err); class != providers.ClassPermanent || !strings.Contains(fmt.Sprint(err), "misconfigured") {
			t.Errorf("recipient %s: Lookup = %+v, %v; want a permanent misconfiguration", q.Recipient, records, err)
		}
	}
}

// TestInvoiceBatchOneRecordOneOperation: in a batch, the operations of a
// customer are listed once, over the union of their windows, and the
// others searched in one query; each invoice goes to the operation whose
// op_key it holds and to no other, though three operations share a list.
func TestInvoiceBatchOneRecordOneOperation(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/search") {
			return 200, searchResult(r.URL.Path, "", invoice("in_3", "op-3", "paid", nil))
		}
		return 200, invoiceList(false,
			invoice("in_1", "op-1", "paid", nil), invoice("in_2", "op-2", "open", nil), invoice("in_9", "op-9", "paid", nil))
	})
	q2 := customerQuery("op-2", 3*time.Hour) // an older operation: the list reaches back to it
	qs := []providers.Query{customerQuery("op-1", time.Hour), q2, query("op-3", time.Hour), customerQuery("op-4", time.Hour)}
	answers, err := newLookup(t, f, invoices).(providers.BatchLookup).LookupBatch(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"in_1", "in_2", "in_3", ""} {
		var got []string
		for _, r := range answers[i].Records {
			got = append(got, r.ID)
		}
		if answers[i].Err != nil || (want == "") != (len(got) == 0) || (want != "" && !cmp.Equal(got, []string{want})) {
			t.Errorf("operation %s: %v, %v; want %q alone", qs[i].OpKey, got, answers[i].Err, want)
		}
	}
	var searches []string
	var lists []request
	for _, r := range f.requests() {
		switch r.path {
		case "/v1/invoices/search":
			searches = append(searches, r.query.Get("query"))
		case "/v1/invoices":
			lists = append(lists, r)
		}
	}
	if diff := cmp.Diff([]string{"metadata['op_key']:'op-3'"}, searches); diff != "" {
		t.Errorf("searches (-want +got):\n%s; want one search, for the operation without a customer", diff)
	}
	if len(lists) != 1 {
		t.Fatalf("%d lists; want one for the one customer of three operations", len(lists))
	}
	if got, want := lists[0].query.Get("created[gte]"), fmt.Sprint(q2.Since.Unix()); got != want {
		t.Errorf("created[gte] %s, want %s: the earliest operation's window", got, want)
	}
	if got, want := lists[0].query.Get("created[lte]"), fmt.Sprint(qs[3].Until.Unix()); got < want {
		t.Errorf("created[lte] %s, want at least %s: the latest operation's window", got, want)
	}
}

// TestInvoiceConformance runs the kit against invoices, searched (the
// kit's recipient is an address) and listed (a customer id).
func TestInvoiceConformance(t *testing.T) {
	q := providertest.Query()
	errorBody := func(status int) []byte {
		typ := "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
		return fmt.Appendf(nil, `{"error":{"type":%q,"message":"%s (key %s)"}}`, typ, http.StatusText(status), providertest.Secret)
	}
	newKit := func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
		env.Getenv = providertest.Vars("KIT_STRIPE_KEY", secret)
		return providertest.NewLookup(t, stripe.Kind, "kit", env, func(c *stripe.Config) {
			c.SecretKeyEnv = "KIT_STRIPE_KEY"
			c.APIBase = baseURL
			c.Objects = []string{stripe.ObjectInvoices}
		})
	}
	found := `{"id":"in_kit_1","object":"invoice","total":1299,"amount_due":1299,"currency":"usd","status":"paid","created":1764410400,` +
		`"customer":"cus_KIT1","customer_email":"` + providertest.Recipient + `","livemode":false,"metadata":{"op_key":"` + q.OpKey + `"}}`
	t.Run("search", func(t *testing.T) {
		providertest.Run(t, providertest.Harness{
			New:       newKit,
			Empty:     []byte(`{"object":"search_result","url":"/v1/invoices/search","has_more":false,"next_page":null,"data":[]}`),
			Found:     []byte(`{"object":"search_result","url":"/v1/invoices/search","has_more":false,"next_page":null,"data":[` + found + `]}`),
			FoundID:   "in_kit_1",
			ErrorBody: errorBody,
		})
	})
	t.Run("list", func(t *testing.T) {
		providertest.Run(t, providertest.Harness{
			New:       newKit,
			Recipient: "cus_KIT1",
			Empty:     []byte(`{"object":"list","url":"/v1/invoices","has_more":false,"data":[]}`),
			Found:     []byte(`{"object":"list","url":"/v1/invoices","has_more":false,"data":[` + found + `]}`),
			FoundID:   "in_kit_1",
			ErrorBody: errorBody,
		})
	})
}
