package stripe_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/stripe"
)

// searchedKeys reads the op_keys of a search query made of OR-joined
// metadata['op_key']:'…' clauses, as Stripe's query language reads them; ok
// is false for any other query.
func searchedKeys(query string) (keys []string, ok bool) {
	const prefix = "metadata['op_key']:'"
	for rest := query; ; {
		if !strings.HasPrefix(rest, prefix) {
			return nil, false
		}
		rest = rest[len(prefix):]
		var key strings.Builder
		closed := false
		for i := 0; i < len(rest); i++ {
			switch c := rest[i]; {
			case c == '\\' && i+1 < len(rest):
				i++
				key.WriteByte(rest[i])
			case c == '\'':
				rest, closed = rest[i+1:], true
			default:
				key.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return nil, false
		}
		keys = append(keys, key.String())
		if rest == "" {
			return keys, true
		}
		if !strings.HasPrefix(rest, " OR ") {
			return nil, false
		}
		rest = rest[len(" OR "):]
	}
}

// worldStripe is a fake of Stripe's PaymentIntent search holding w: like
// Stripe, it matches metadata values without regard to letter case, takes
// at most ten clauses, and pages its results two objects at a time.
func worldStripe(t *testing.T, w providertest.World) *fakeStripe {
	return newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		if r.URL.Path != "/v1/payment_intents/search" {
			return 404, stripeError("invalid_request_error", "Unrecognized request URL")
		}
		keys, ok := searchedKeys(r.URL.Query().Get("query"))
		if !ok || len(keys) > stripe.MaxClauses {
			return 400, stripeError("invalid_request_error", "Invalid search query")
		}
		var data []map[string]any
		for _, h := range w.Holdings {
			if w.Strangers || slices.ContainsFunc(keys, func(k string) bool { return strings.EqualFold(k, h.OpKey) }) {
				data = append(data, paymentIntent(h.ID, h.OpKey, map[string]any{"created": h.CreatedAt.Unix()}))
			}
		}
		start := 0
		if p := r.URL.Query().Get("page"); p != "" {
			start, _ = strconv.Atoi(strings.TrimPrefix(p, "page-"))
		}
		end := min(start+2, len(data))
		next := ""
		if end < len(data) {
			next = fmt.Sprintf("page-%d", end)
		}
		return 200, searchResult(r.URL.Path, next, data[start:end]...)
	})
}

func TestBatchConformance(t *testing.T) {
	providertest.RunBatch(t, providertest.BatchHarness{
		New: func(t *testing.T, w providertest.World) providers.BatchLookup {
			return newLookup(t, worldStripe(t, w), nil).(providers.BatchLookup)
		},
		IDs: true, Hostile: true,
	})
}

func TestBatchSearch(t *testing.T) {
	t.Parallel()
	keys := []string{"op-0", `op-'1'`, `op-\2`, "op-3", "op-4", "op-5", "op-6", "op-7", "op-8", "OP-0"}
	var w providertest.World
	for i, k := range keys[:9] {
		w.Holdings = append(w.Holdings, providertest.Holding{OpKey: k, ID: fmt.Sprintf("pi_%d", i), CreatedAt: time.Now()})
	}
	f := worldStripe(t, w)
	a := newLookup(t, f, nil).(providers.BatchLookup)
	if a.MaxBatch() != stripe.MaxClauses {
		t.Fatalf("MaxBatch = %d, want %d", a.MaxBatch(), stripe.MaxClauses)
	}
	qs := make([]providers.Query, len(keys))
	for i, k := range keys {
		qs[i] = query(k, time.Hour)
	}
	answers, err := a.LookupBatch(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ans := range answers {
		want := []string{fmt.Sprintf("pi_%d", i)}
		if i == 9 {
			want = nil // OP-0: Stripe returns op-0's object, whose metadata is not OP-0
		}
		if ans.Err != nil || !slices.Equal(ids(ans.Records), want) {
			t.Errorf("%s: %v, %v; want %v", keys[i], ids(ans.Records), ans.Err, want)
		}
	}
	// One search, every page of it: nine objects two to a page.
	reqs := f.requests()
	if len(reqs) != 5 {
		t.Errorf("%d requests, want 5 pages of one search", len(reqs))
	}
	got, ok := searchedKeys(reqs[0].query.Get("query"))
	if !ok || !slices.Equal(got, keys) {
		t.Errorf("query %q searches %q, want %q", reqs[0].query.Get("query"), got, keys)
	}
	for _, r := range reqs[1:] {
		if r.query.Get("query") != reqs[0].query.Get("query") {
			t.Errorf("page %s searched another query", r.query.Get("page"))
		}
	}
}

func TestBatchWithoutOpKey(t *testing.T) {
	t.Parallel()
	f := worldStripe(t, providertest.World{Holdings: []providertest.Holding{{OpKey: "op-1", ID: "pi_1", CreatedAt: time.Now()}}})
	a := newLookup(t, f, nil).(providers.BatchLookup)
	answers, err := a.LookupBatch(t.Context(), []providers.Query{query("op-1", time.Hour), query("", time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if answers[0].Err != nil || !slices.Equal(ids(answers[0].Records), []string{"pi_1"}) {
		t.Errorf("op-1: %v, %v", ids(answers[0].Records), answers[0].Err)
	}
	if class, _ := providers.Classify(answers[1].Err); answers[1].Err == nil || class != providers.ClassPermanent {
		t.Errorf("no op_key: %v; want permanent", answers[1].Err)
	}
}

func TestBatchErrorFailsTheRequest(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) (int, string) {
		w.Header().Set("Retry-After", "3")
		return 429, stripeError("invalid_request_error", "Too many requests")
	})
	a := newLookup(t, f, nil).(providers.BatchLookup)
	answers, err := a.LookupBatch(t.Context(), []providers.Query{query("op-1", time.Hour), query("op-2", time.Hour)})
	if class, delay := providers.Classify(err); err == nil || class != providers.ClassRateLimited || delay != 3*time.Second {
		t.Errorf("LookupBatch = %v, %v; want rate-limited 3s for the request", answers, err)
	}
}

func TestBatchConfig(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, stripe.MaxClauses + 1} {
		cfg := stripe.Kind.NewSettings().(*stripe.Config)
		cfg.MaxBatch = n
		if errs := cfg.Validate(); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "max_batch: must be between 1 and 10") {
			t.Errorf("max_batch = %d: %v", n, errs)
		}
	}
}
