package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/hubspot"
	"github.com/sweeper/sweeper/providers/stripe"
	"github.com/sweeper/sweeper/review"
)

// laggingIndex is a provider's search index that has not yet seen the
// records created: a search lists a record only once the test says the
// index caught up. The records themselves exist from the start.
type laggingIndex struct {
	mu      sync.Mutex
	created map[string]time.Time // op_key → when the provider created it
	indexed atomic.Bool
	// searches counts the searches; other counts every request that is
	// neither a search nor the account read (there must be none).
	searches, other atomic.Int64
}

// visible returns the op_keys among keys the search lists now.
func (ix *laggingIndex) visible(keys []string) map[string]time.Time {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := map[string]time.Time{}
	if !ix.indexed.Load() {
		return out
	}
	for _, k := range keys {
		if at, ok := ix.created[k]; ok {
			out[k] = at
		}
	}
	return out
}

// hubspotSearch serves HubSpot's account details and its CRM search of
// contacts (POST /crm/v3/objects/contacts/search, EQ filters OR-joined by
// filter group) as the v3 API answers them.
func (ix *laggingIndex) hubspotSearch(email string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/account-info/v3/details":
			fmt.Fprint(w, `{"portalId":2519445,"accountType":"STANDARD","timeZone":"US/Eastern","companyCurrency":"USD","additionalCurrencies":[],"utcOffset":"-05:00","utcOffsetMilliseconds":-18000000,"uiDomain":"app.hubspot.com","dataHostingLocation":"na1"}`)
		case r.Method == http.MethodPost && r.URL.Path == "/crm/v3/objects/contacts/search":
			ix.searches.Add(1)
			var req struct {
				FilterGroups []struct {
					Filters []struct{ PropertyName, Operator, Value string }
				}
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"status":"error","message":"bad","correlationId":"c","category":"VALIDATION_ERROR"}`)
				return
			}
			var keys []string
			for _, g := range req.FilterGroups {
				for _, f := range g.Filters {
					if f.PropertyName == "op_key" && f.Operator == "EQ" {
						keys = append(keys, f.Value)
					}
				}
			}
			results := []map[string]any{}
			n := 0
			for key, at := range ix.visible(keys) {
				n++
				stamp := at.UTC().Format("2006-01-02T15:04:05.000Z")
				results = append(results, map[string]any{
					"id":         fmt.Sprint(51000 + n),
					"properties": map[string]any{"op_key": key, "email": email, "hs_object_id": fmt.Sprint(51000 + n), "createdate": stamp},
					"createdAt":  stamp, "updatedAt": stamp, "archived": false,
				})
			}
			json.NewEncoder(w).Encode(map[string]any{"total": len(results), "results": results}) //nolint:errcheck // a test's answer
		default:
			ix.other.Add(1)
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}
}

// stripeMetadataRE is one clause of Stripe's search query on the op_key.
var stripeMetadataRE = regexp.MustCompile(`metadata\['op_key'\]:'([^'\\]*)'`)

// stripeInvoiceSearch serves Stripe's account and its invoice search
// (GET /v1/invoices/search?query=metadata['op_key']:'…' OR …) as the API
// answers them.
func (ix *laggingIndex) stripeInvoiceSearch(email string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_fake")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/account":
			fmt.Fprint(w, `{"id":"acct_1Lagging","object":"account"}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/invoices/search":
			ix.searches.Add(1)
			var keys []string
			for _, m := range stripeMetadataRE.FindAllStringSubmatch(r.URL.Query().Get("query"), -1) {
				keys = append(keys, m[1])
			}
			data := []map[string]any{}
			for key, at := range ix.visible(keys) {
				data = append(data, map[string]any{
					"id": "in_" + key, "object": "invoice", "status": "open", "total": 4200, "amount_due": 4200, "amount_paid": 0,
					"currency": "eur", "created": at.Unix(), "livemode": false, "customer": nil, "customer_email": email,
					"metadata": map[string]string{"op_key": key},
				})
			}
			json.NewEncoder(w).Encode(map[string]any{"object": "search_result", "url": "/v1/invoices/search", "has_more": false, "next_page": nil, "data": data}) //nolint:errcheck // a test's answer
		default:
			ix.other.Add(1)
			w.WriteHeader(http.StatusMethodNotAllowed)
			fmt.Fprint(w, `{"error":{"type":"invalid_request_error","message":"sweeper must never create"}}`)
		}
	}
}

// TestLaggingSearchSettlesByRelookup: HubSpot's CRM search and Stripe's
// invoice search are eventually consistent. A record the index does not
// list yet, for an operation still inside its settle_window, proves
// nothing either way: the operation is left pending. Past the window, the
// empty search becomes a not_found ticket, never done and never a resend;
// once the index lists the record, the ticket's scheduled re-lookup finds
// it and settles the operation as done with the provider's record, the
// ticket resolved by sweeper. The real adapters ask fakes shaped like each
// API, and nothing but the documented search reaches either.
func TestLaggingSearchSettlesByRelookup(t *testing.T) {
	t.Parallel()
	const email = "jane.doe@example.com"
	for _, tc := range []struct {
		desc, block string
		serve       func(*laggingIndex) http.HandlerFunc
		payload     string
		action      string
		wantRecord  func(key string) *regexp.Regexp
	}{
		{
			desc: "hubspot contact search", block: `kind = "hubspot"
object = "contacts"
access_token_env = "LAG_HUBSPOT_TOKEN"
settle_window = "5m"`,
			serve:   func(ix *laggingIndex) http.HandlerFunc { return ix.hubspotSearch(email) },
			payload: `{"email":"` + email + `"}`, action: "create_contact",
			wantRecord: func(string) *regexp.Regexp { return regexp.MustCompile(`^510[0-9]+$`) },
		},
		{
			desc: "stripe invoice search", block: `kind = "stripe"
objects = ["invoices"]
secret_key_env = "LAG_STRIPE_KEY"
settle_window = "5m"
max_batch = 10`,
			serve:   func(ix *laggingIndex) http.HandlerFunc { return ix.stripeInvoiceSearch(email) },
			payload: `{"amount":4200,"currency":"eur"}`, action: "issue_invoice",
			wantRecord: func(key string) *regexp.Regexp { return regexp.MustCompile(`^in_` + regexp.QuoteMeta(key) + `$`) },
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ix := &laggingIndex{created: map[string]time.Time{}}
			srv := httptest.NewServer(tc.serve(ix))
			t.Cleanup(srv.Close)

			getenv := func(k string) string {
				return map[string]string{"LAG_HUBSPOT_TOKEN": "pat-na1-lagging-secret", "LAG_STRIPE_KEY": "sk_test_lagging"}[k]
			}
			blockText := baseConfig + fmt.Sprintf(`
[providers.lagging]
%s
api_base = %q
stale_after = "1m"
lookup_timeout = "2s"
lookup_budget = "5s"
rate_limit = 1000.0
concurrency = 4
`, tc.block, srv.URL)
			adapters := providers.Kinds{hubspot.Kind, stripe.Kind}
			cfg, err := config.Parse(blockText, append(append(providers.Kinds{}, kinds...), adapters...), getenv)
			if err != nil {
				t.Fatal(err)
			}
			logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
			provs, err := app.BuildProviders(cfg, append(append(providers.Kinds{}, kinds...), adapters...), getenv, logger)
			if err != nil {
				t.Fatal(err)
			}
			if err := app.ReadNamespaces(ctx, cfg, map[string]*providers.Provider{"lagging": provs["lagging"]}, logger); err != nil {
				t.Fatal(err)
			}
			b := setupEscalation(t, escalationConfig, map[string]*providers.Provider{"lagging": provs["lagging"]})
			if err := b.sweeper.WriteNamespaces(ctx); err != nil {
				t.Fatal(err)
			}

			claim := func(key string, age time.Duration) ledger.Operation {
				op := b.claimAs(t, ledger.Attempt{OpKey: key, Workflow: "billing", Provider: "lagging", Action: tc.action,
					Recipient: email, Payload: json.RawMessage(tc.payload)}, age)
				ix.mu.Lock()
				ix.created[key] = op.FirstAttemptAt.Add(2 * time.Second)
				ix.mu.Unlock()
				return op
			}
			fresh := claim("lag-fresh-1", 2*time.Minute)
			claim("lag-old-1", time.Hour)

			sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{MaxPaced: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[proof.Reason]int{proof.ReasonNotFound: 1}, sum.Tickets); diff != "" || sum.Done != 0 || sum.LeftPending != 1 {
				t.Fatalf("first pass: %+v; tickets (-want +got):\n%s\nwant one not_found ticket, none done, one left pending", sum, diff)
			}
			if op := b.status(t, fresh.OpKey); op.Status != ledger.StatusPending {
				t.Errorf("inside its settle_window %s is %s, want pending: an empty search proves nothing yet", fresh.OpKey, op.Status)
			}
			tk, _ := b.ticketOf(t, "lag-old-1")
			if tk.Reason != proof.ReasonNotFound || tk.State != review.StateOpen {
				t.Fatalf("lag-old-1's ticket is %s %s, want an open not_found", tk.State, tk.Reason)
			}
			if op := b.status(t, "lag-old-1"); op.Status != ledger.StatusReview {
				t.Fatalf("lag-old-1 is %s, want review", op.Status)
			}

			// Not indexed yet: the re-lookup asks, finds nothing, writes nothing.
			b.clock.set(b.clock.Now().Add(61 * time.Second))
			before := ix.searches.Load()
			rs, err := b.sweeper.RelookupOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(app.RelookupSummary{Due: 1, Relooked: 1}, rs); diff != "" || ix.searches.Load() == before {
				t.Fatalf("re-lookup before the index caught up (-want +got):\n%s(searches %d → %d)", diff, before, ix.searches.Load())
			}

			ix.indexed.Store(true)
			b.clock.set(b.clock.Now().Add(2*time.Minute + time.Second))
			rs, err = b.sweeper.RelookupOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(app.RelookupSummary{Due: 1, Resolved: 1}, rs); diff != "" {
				t.Fatalf("re-lookup once indexed (-want +got):\n%s", diff)
			}
			op := b.status(t, "lag-old-1")
			if op.Status != ledger.StatusDone || !tc.wantRecord("lag-old-1").MatchString(op.ProviderRecordID) {
				t.Errorf("lag-old-1 is %s with record %q, want done with the provider's record", op.Status, op.ProviderRecordID)
			}
			resolved, err := b.sweeper.Reviews().Get(ctx, tk.ID)
			if err != nil || resolved.State != review.StateResolved || resolved.ResolvedBy != review.ActorSweeper {
				t.Errorf("lag-old-1's ticket %+v, %v; want resolved by sweeper", resolved, err)
			}
			if n := ix.other.Load(); n != 0 {
				t.Errorf("I1: %d requests other than the search and the account read reached the provider", n)
			}
		})
	}
}
