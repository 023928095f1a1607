package httplookup_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/providertest"
)

// worldEndpoint is an endpoint speaking the batch form, answering from w.
func worldEndpoint(t *testing.T, w providertest.World, requests *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("%s request: sweeper must only read", r.Method)
			http.Error(rw, "no", http.StatusMethodNotAllowed)
			return
		}
		if requests != nil {
			requests.Add(1)
		}
		asked := r.URL.Query()["op_key"]
		type entry struct {
			OpKey   string           `json:"op_key"`
			Matches []map[string]any `json:"matches,omitempty"`
			Error   string           `json:"error,omitempty"`
		}
		var results []entry
		keys := slices.Clone(asked)
		if w.Strangers {
			for _, h := range w.Holdings {
				if !slices.Contains(keys, h.OpKey) {
					keys = append(keys, h.OpKey)
				}
			}
		}
		for _, k := range keys {
			if slices.Contains(w.Omit, k) {
				continue
			}
			if slices.Contains(w.Failing, k) {
				results = append(results, entry{OpKey: k, Error: "upstream timeout for " + k})
				continue
			}
			e := entry{OpKey: k, Matches: []map[string]any{}}
			for _, h := range w.Holdings {
				if h.OpKey == k {
					e.Matches = append(e.Matches, map[string]any{"id": h.ID, "created_at": h.CreatedAt.Format(time.RFC3339), "payload_hash": h.PayloadHash})
				}
			}
			results = append(results, e)
		}
		body, _ := json.Marshal(map[string]any{"results": results})
		// omitempty drops an empty matches array: put it back.
		body = []byte(strings.ReplaceAll(string(body), `"}`, `","matches":[]}`))
		rw.Header().Set("Content-Type", "application/json")
		rw.Write(body) //nolint:errcheck // the client may be gone
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBatchConformance(t *testing.T) {
	providertest.RunBatch(t, providertest.BatchHarness{
		New: func(t *testing.T, w providertest.World) providers.BatchLookup {
			srv := worldEndpoint(t, w, nil)
			return newAdapter(t, "kit", &httplookup.Config{URL: srv.URL + "/lookup", MaxBatch: 20}, token, nil)
		},
		IDs: true, FailedKeys: true, Hostile: true, Entries: true,
	})
}

// The batch form's single lookups pass the conformance kit too: an
// endpoint that speaks it is asked for one operation as a batch of one.
func TestConformanceBatchForm(t *testing.T) {
	q := providertest.Query()
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_TOKEN", secret)
			return providertest.NewLookup(t, httplookup.Kind, "kit", env, func(c *httplookup.Config) {
				c.URL, c.TokenEnv, c.MaxBatch = baseURL+"/lookup", "KIT_TOKEN", 20
			})
		},
		Empty: []byte(`{"results":[{"op_key":"` + q.OpKey + `","matches":[]}]}`),
	})
}

func batchQueries(n int) []providers.Query {
	qs := make([]providers.Query, n)
	for i := range qs {
		qs[i] = query
		qs[i].OpKey = fmt.Sprintf("ord-%d", i)
		qs[i].Recipient = fmt.Sprintf("customer%d@example.com", i)
	}
	return qs
}

func TestBatchRequest(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply(200, `{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`))
	a := newAdapter(t, "orders", &httplookup.Config{URL: f.srv.URL + "/lookup?tenant=7", MaxBatch: 5}, token, nil)
	qs := batchQueries(3)
	qs[1].Since = query.Since.Add(-time.Hour)
	qs[2].Until = query.Until.Add(time.Hour)

	answers, err := a.LookupBatch(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ans := range answers {
		if ans.Err != nil || ans.Records == nil || len(ans.Records) != 0 {
			t.Errorf("answer %d = %+v; want zero records", i, ans)
		}
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	got := reqs[0].Query
	if !slices.Equal(got["op_key"], []string{"ord-0", "ord-1", "ord-2"}) {
		t.Errorf("op_key = %q, want every op_key in order", got["op_key"])
	}
	if got.Get("since") != qs[1].Since.UTC().Format(time.RFC3339) || got.Get("until") != qs[2].Until.UTC().Format(time.RFC3339) {
		t.Errorf("since, until = %s, %s; want the span of every window", got.Get("since"), got.Get("until"))
	}
	if got.Get("tenant") != "7" || got.Has("recipient") || got.Has("action") {
		t.Errorf("query = %v; want the url's own parameters kept, and no recipient or action", got)
	}
	if reqs[0].Authorization != "Bearer "+token {
		t.Errorf("Authorization = %q", reqs[0].Authorization)
	}
}

func TestBatchSplitsLongURLs(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := worldEndpoint(t, providertest.World{}, &requests)
	a := newAdapter(t, "orders", &httplookup.Config{URL: srv.URL, MaxBatch: httplookup.MaxMaxBatch}, "", nil)
	qs := batchQueries(httplookup.MaxMaxBatch)
	for i := range qs {
		qs[i].OpKey = fmt.Sprintf("%03d-%s", i, strings.Repeat("é", 100)) // 200 bytes, 600 escaped
	}
	answers, err := a.LookupBatch(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ans := range answers {
		if ans.Err != nil {
			t.Errorf("answer %d: %v", i, ans.Err)
		}
	}
	// 50 keys of 600 escaped bytes: ten to a 6 KiB URL.
	if n := requests.Load(); n < 5 || n > 6 {
		t.Errorf("%d requests, want the batch split to keep each URL within %d bytes", n, httplookup.MaxURL)
	}
}

func TestBatchAnswers(t *testing.T) {
	t.Parallel()
	const hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	rec := func(id string) string { return `{"id":"` + id + `","payload_hash":"` + hash + `"}` }
	tests := []struct {
		desc       string
		body       string
		wholeError bool
		// failed lists the queries whose answers are errors.
		failed []int
	}{
		{desc: "every key answered", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[` + rec("c") + `]}]}`},
		{desc: "entries in another order", body: `{"results":[{"op_key":"ord-2","matches":[` + rec("c") + `]},{"op_key":"ord-0","matches":[` + rec("a") + `]},{"op_key":"ord-1","matches":[]}]}`},
		{desc: "the endpoint's error for one key", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `]},{"op_key":"ord-1","error":"timeout for customer1@example.com"},{"op_key":"ord-2","matches":[` + rec("c") + `]}]}`, failed: []int{1}},
		{desc: "a key missing", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `]},{"op_key":"ord-2","matches":[` + rec("c") + `]}]}`, failed: []int{1}},
		{desc: "a key twice", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-1","matches":[` + rec("b") + `]},{"op_key":"ord-2","matches":[` + rec("c") + `]}]}`, failed: []int{1}},
		{desc: "a key in another letter case is not asked", body: `{"results":[{"op_key":"ORD-0","matches":[` + rec("a") + `]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, wholeError: true},
		{desc: "a key not asked", body: `{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]},{"op_key":"ord-9","matches":[` + rec("z") + `]}]}`, wholeError: true},
		{desc: "an entry without op_key", body: `{"results":[{"matches":[` + rec("a") + `]}]}`, wholeError: true},
		{desc: "an entry with matches and an error", body: `{"results":[{"op_key":"ord-0","matches":[],"error":"x"},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, failed: []int{0}},
		{desc: "an entry with neither", body: `{"results":[{"op_key":"ord-0"},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, failed: []int{0}},
		{desc: "a bad match fails its key only", body: `{"results":[{"op_key":"ord-0","matches":[{"id":""}]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, failed: []int{0}},
		{desc: "the single form", body: `{"matches":[]}`, wholeError: true},
		{desc: "results null", body: `{"results":null}`, wholeError: true},
		{desc: "results twice", body: `{"results":[],"results":[{"op_key":"ord-0","matches":[]}]}`, wholeError: true},
		{desc: "Results in another case", body: `{"Results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, wholeError: true},
		{desc: "op_key in another case", body: `{"results":[{"OP_KEY":"ord-0","matches":[]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, wholeError: true},
		// The batch form has no pages either, and its top level and its
		// entries hold only what the protocol names.
		{desc: "has_more at the top", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}],"has_more":true}`, wholeError: true},
		{desc: "next_cursor and total at the top", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}],"next_cursor":"c2","total":4}`, wholeError: true},
		{desc: "an unknown key at the top", body: `{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}],"meta":{}}`, wholeError: true},
		{desc: "has_more in an entry", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `],"has_more":true},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[` + rec("c") + `]}]}`, failed: []int{0}},
		{desc: "next_page_token in an entry", body: `{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[` + rec("b") + `],"next_page_token":"CAE"},{"op_key":"ord-2","matches":[]}]}`, failed: []int{1}},
		{desc: "a count above the records in an entry", body: `{"results":[{"op_key":"ord-0","matches":[` + rec("a") + `],"count":2},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, failed: []int{0}},
		{desc: "an unknown key in an entry", body: `{"results":[{"op_key":"ord-0","matches":[],"note":"x"},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[]}]}`, failed: []int{0}},
		{desc: "a record carrying another op_key", body: `{"results":[{"op_key":"ord-0","matches":[{"id":"a","op_key":"ord-1"}]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[{"id":"c","op_key":"ord-2"}]}]}`, failed: []int{0}},
		{desc: "a record with an unknown state", body: `{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[]},{"op_key":"ord-2","matches":[{"id":"c","state":"sent"}]}]}`, failed: []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply(200, tc.body))
			a := newAdapter(t, "orders", &httplookup.Config{URL: f.srv.URL, MaxBatch: 5}, token, nil)
			answers, err := a.LookupBatch(t.Context(), batchQueries(3))
			if tc.wholeError {
				if err == nil {
					t.Fatalf("LookupBatch = %+v, nil; want an error for the request", answers)
				}
				if class, _ := providers.Classify(err); class != providers.ClassTransient {
					t.Errorf("classified %s, want transient: %v", class, err)
				}
				checkNoSecrets(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, ans := range answers {
				if slices.Contains(tc.failed, i) {
					if ans.Err == nil || ans.Records != nil {
						t.Errorf("answer %d = %+v; want an error and no records", i, ans)
					} else if class, _ := providers.Classify(ans.Err); class != providers.ClassTransient {
						t.Errorf("answer %d classified %s, want transient", i, class)
					}
					if ans.Err != nil && strings.Contains(ans.Err.Error(), "customer1@example.com") {
						t.Errorf("answer %d shows a recipient: %v", i, ans.Err)
					}
					continue
				}
				if ans.Err != nil {
					t.Errorf("answer %d: %v", i, ans.Err)
				}
			}
		})
	}
}

func TestBatchConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  httplookup.Config
		want string
	}{
		{httplookup.Config{URL: "https://x.example/l", MaxBatch: 20}, ""},
		{httplookup.Config{URL: "https://x.example/l", MaxBatch: -1}, "max_batch: must be between 1 and 50"},
		{httplookup.Config{URL: "https://x.example/l", MaxBatch: 51}, "max_batch: must be between 1 and 50"},
		{httplookup.Config{URL: "https://x.example/l", MaxBatch: 2, SearchBy: "resemblance"}, "max_batch: an endpoint that searches by resemblance"},
	} {
		errs := tc.cfg.Validate()
		switch {
		case tc.want == "" && len(errs) != 0:
			t.Errorf("%+v: %v", tc.cfg, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want)):
			t.Errorf("%+v: %v; want %q", tc.cfg, errs, tc.want)
		}
	}
	if n := newAdapter(t, "x", &httplookup.Config{URL: "https://x.example/l"}, "", nil).MaxBatch(); n != 1 {
		t.Errorf("default MaxBatch = %d, want 1 (the single form)", n)
	}
}

func TestBatchOfTheSingleForm(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply(200, `{"matches":[]}`))
	a := newAdapter(t, "orders", &httplookup.Config{URL: f.srv.URL}, token, nil)
	answers, err := a.LookupBatch(t.Context(), batchQueries(2))
	if err != nil || len(answers) != 2 || answers[0].Err != nil || answers[1].Err != nil {
		t.Fatalf("LookupBatch = %+v, %v; want two answers", answers, err)
	}
	for i, r := range f.requests() {
		if got := r.Query["op_key"]; len(got) != 1 || !r.Query.Has("recipient") {
			t.Errorf("request %d: %v; want the single form", i, r.Query)
		}
	}
}

// A record of the batch form carries its state and status, and its
// op_key when the endpoint gives it, as in the single form.
func TestBatchRecordFields(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply(200, `{"results":[{"op_key":"ord-0","matches":[{"id":"a","op_key":"ord-0","state":"in_flight","status":"scheduled"}]},{"op_key":"ord-1","matches":[{"id":"b","state":"failed","status":"bounced"}]}]}`))
	a := newAdapter(t, "orders", &httplookup.Config{URL: f.srv.URL, MaxBatch: 5}, token, nil)
	answers, err := a.LookupBatch(t.Context(), batchQueries(2))
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.BatchAnswer{
		{Records: []providers.Record{{ID: "a", State: providers.StateInFlight, Status: "scheduled", Excerpt: "orders id=a"}}},
		{Records: []providers.Record{{ID: "b", State: providers.StateFailed, Status: "bounced", Excerpt: "orders id=b"}}},
	}
	if fmt.Sprint(answers) != fmt.Sprint(want) {
		t.Errorf("answers = %+v, want %+v", answers, want)
	}
}

// A Link header with rel="next" on a batch answer fails the request.
func TestBatchRefusesLinkPages(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", `<https://lookup.example.com/lookup?page=2>; rel="next"`)
		reply(200, `{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","matches":[]}]}`)(w, nil)
	})
	a := newAdapter(t, "orders", &httplookup.Config{URL: f.srv.URL, MaxBatch: 5}, token, nil)
	answers, err := a.LookupBatch(t.Context(), batchQueries(2))
	if err == nil || answers != nil {
		t.Fatalf("LookupBatch = %+v, %v; want an error for the request", answers, err)
	}
	if class, _ := providers.Classify(err); class != providers.ClassTransient {
		t.Errorf("classified %s, want transient: %v", class, err)
	}
}

// TestBatchEndpointErrorKeepsNoProviderText: the endpoint's error for one
// operation is its free text — it can quote a code or a link of the
// customer's — and the answer's error keeps it only as a length and a
// digest, beside the adapter's own words.
func TestBatchEndpointErrorKeepsNoProviderText(t *testing.T) {
	t.Parallel()
	const said = "Your Acme code is G-482913, see https://acme.example/l/9fQ2xZ7kLmN0pR"
	f := newFake(t, reply(200, `{"results":[{"op_key":"ord-0","matches":[]},{"op_key":"ord-1","error":"`+said+`"}]}`))
	a := newAdapter(t, "orders", &httplookup.Config{URL: f.srv.URL, MaxBatch: 5}, token, nil)
	answers, err := a.LookupBatch(t.Context(), batchQueries(2))
	if err != nil {
		t.Fatal(err)
	}
	got := answers[1].Err
	if got == nil {
		t.Fatalf("answer 1 = %+v; want the endpoint's error", answers[1])
	}
	for _, secret := range []string{"G-482913", "acme.example", "9fQ2xZ7kLmN0pR"} {
		if strings.Contains(got.Error(), secret) {
			t.Errorf("error %q quotes the endpoint's text %q", got, secret)
		}
	}
	if want := "orders: the endpoint failed for this operation: [provider text: 69 characters, digest "; !strings.HasPrefix(got.Error(), want) {
		t.Errorf("error %q; want it to start %q", got, want)
	}
	var text *providers.ProviderText
	if !errors.As(got, &text) || text.Text() != said {
		t.Errorf("error %v does not carry the endpoint's text apart", got)
	}
}
