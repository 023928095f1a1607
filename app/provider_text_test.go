package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/stripe"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// stripeAnswering is a Stripe adapter named name over a fake Stripe that
// answers every search with status and Stripe's error JSON holding
// message.
func stripeAnswering(t *testing.T, name string, status int, message string, limits providers.Limits) *providers.Provider {
	t.Helper()
	body, err := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": message}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("%s %s reached Stripe: only GET may", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body) //nolint:errcheck // the test's fake
	}))
	t.Cleanup(srv.Close)
	cfg := stripe.Kind.NewSettings().(*stripe.Config)
	cfg.SecretKeyEnv = "TEST_STRIPE_KEY"
	cfg.APIBase = srv.URL
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	adapter, err := stripe.Kind.New(name, cfg, providers.Env{Getenv: func(k string) string {
		if k == cfg.SecretKeyEnv {
			return "sk_test_FAKE-51Hx9"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	return providers.NewProvider(name, stripe.Kind.Name, adapter, limits)
}

// TestProviderTextNeverStored: Stripe's error message — the provider's
// free text, holding a one-time code and a login link here — reaches
// neither a ticket's evidence nor its events nor its alerts nor the
// provider's health, whichever way the lookup ends: a permanent error (a
// 400), a budget run out on 500s ("last: …", and the error history), and
// an outage past max_outage ("its last failure: …"). What a reviewer
// needs stays: the status, Stripe's error type, the adapter's words.
func TestProviderTextNeverStored(t *testing.T) {
	t.Parallel()
	const said = "Your Acme code is G-482913, sign in at https://acme.example/l/9fQ2xZ7kLmN0pR"
	leaks := []string{"G-482913", "482913", "acme.example", "9fQ2xZ7kLmN0pR", "Your Acme code"}
	ctx := context.Background()
	limits := func(budget time.Duration, outageAfter int, maxOutage time.Duration) providers.Limits {
		return providers.Limits{StaleAfter: 10 * time.Minute, LookupTimeout: 2 * time.Second, LookupBudget: budget,
			RateLimit: 1000, Concurrency: 10, OutageAfter: outageAfter, MaxOutage: maxOutage}
	}
	const maxOutage = 2 * time.Second
	b := setup(t, baseConfig, map[string]*providers.Provider{
		"refusing": stripeAnswering(t, "refusing", http.StatusBadRequest, said, limits(time.Minute, 0, 0)),
		"flaky":    stripeAnswering(t, "flaky", http.StatusInternalServerError, said, limits(3*time.Second, 0, 0)),
		"down":     stripeAnswering(t, "down", http.StatusInternalServerError, said, limits(time.Hour, 1, maxOutage)),
	})
	b.sweeper.TrackHealth()
	keys := []string{"text-refusing", "text-flaky", "text-down"}
	for _, key := range keys {
		b.claim(t, key, strings.TrimPrefix(key, "text-"), time.Hour)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	testwait.Until(t, 30*time.Second, "the refused and the flaky operations in review, the provider down", func() bool {
		return b.count(t, `SELECT count(*) FROM sweeper.tickets`) == 2 &&
			b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = 'down' AND state = 'down'`) == 1
	})
	var lastError string
	if err := b.pool.QueryRow(ctx, `SELECT last_error FROM sweeper.provider_health WHERE provider = 'down'`).Scan(&lastError); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "max_outage to pass", func() bool {
		return b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = 'down' AND since <= now() - $1::interval`, maxOutage) == 1
	})
	b.sweep(t, client)
	b.waitSettled(t, keys, time.Minute)

	stored := map[string]string{"provider_health.last_error": lastError}
	for _, key := range keys {
		tk, ev := b.ticketOf(t, key)
		stored[key+" evidence"] = string(tk.Evidence)
		var events string
		if err := b.pool.QueryRow(ctx, `SELECT coalesce(string_agg(details::text, ' '), '') FROM sweeper.ticket_events
			WHERE ticket_id = $1`, tk.ID).Scan(&events); err != nil {
			t.Fatal(err)
		}
		stored[key+" events"] = events
		var alerts string
		if err := b.pool.QueryRow(ctx, `SELECT coalesce(string_agg(o::text, ' '), '') FROM sweeper.outbox o
			WHERE ticket_id = $1`, tk.ID).Scan(&alerts); err != nil {
			t.Fatal(err)
		}
		stored[key+" alerts"] = alerts
		if !strings.Contains(ev.Detail, "HTTP ") || !strings.Contains(ev.Detail, "invalid_request_error") ||
			!strings.Contains(ev.Detail, "search payment_intents") || !strings.Contains(ev.Detail, "[provider text: 76 characters, digest ") {
			t.Errorf("%s: detail %q; want the status, Stripe's error type, the adapter's words and the text's length and digest", key, ev.Detail)
		}
	}
	_, ev := b.ticketOf(t, "text-flaky")
	if !strings.Contains(ev.Detail, "last: flaky: search payment_intents: HTTP 500") || len(ev.Errors) == 0 {
		t.Errorf("flaky: detail %q, %d errors; want the budget run out on the 500s, with their history", ev.Detail, len(ev.Errors))
	}
	if _, ev := b.ticketOf(t, "text-down"); !strings.Contains(ev.Detail, "max_outage") || !strings.Contains(ev.Detail, "its last failure: down: search payment_intents: HTTP 500") {
		t.Errorf("down: detail %q; want the outage and its last failure", ev.Detail)
	}
	if !strings.Contains(lastError, "HTTP 500") {
		t.Errorf("last_error %q; want the status", lastError)
	}
	for where, text := range stored {
		for _, leak := range leaks {
			if strings.Contains(text, leak) {
				t.Errorf("%s holds the provider's text %q:\n%s", where, leak, text)
			}
		}
	}
}
