package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/xero"
)

// The trackers app gives each provider take it down at once until the time
// it gave (providers.OutUntil): Xero's day limit reached.
var _ providers.DownUntil = (*health.Tracker)(nil)

// TestDayLimitIsTheProvidersOutage: Xero answers a 429 for its day limit,
// with a Retry-After of ten hours. The first request that sees it takes
// the provider down for the cluster at once — not after outage_after
// different operations — with its next probe ten hours away (not the hour
// a 429's wait is held to, nor the probe backoff's minute); the sweep
// asks Xero nothing more, opens no ticket, and leaves every operation
// pending, waiting in the provider's outage.
func TestDayLimitIsTheProvidersOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tenant = "3d5e8f0a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"
	var invoices, other atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/connections":
			fmt.Fprintf(w, `[{"id":"e1eede29-f875-4a5d-8470-17f6a29a88b1","authEventId":"d99ecdfe-391d-43d2-b834-17636ba90e8d","tenantId":"%s","tenantType":"ORGANISATION","tenantName":"Demo Company (NZ)","createdDateUtc":"2019-07-09T23:40:30.1833130","updatedDateUtc":"2020-05-15T01:35:13.8491980"}]`, tenant)
		case r.Method == http.MethodGet && r.URL.Path == "/api.xro/2.0/Invoices":
			invoices.Add(1)
			w.Header().Set("Retry-After", "36000")
			w.Header().Set("X-Rate-Limit-Problem", "day")
			w.Header().Set("X-DayLimit-Remaining", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			other.Add(1)
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(srv.Close)

	getenv := func(k string) string { return map[string]string{"DAY_XERO_TOKEN": "xero-access-secret"}[k] }
	text := baseConfig + fmt.Sprintf(`
[providers.books]
kind = "xero"
tenant_id = %q
access_token_env = "DAY_XERO_TOKEN"
api_base = %q
stale_after = "1m"
settle_window = "0s"
lookup_timeout = "2s"
lookup_budget = "5s"
rate_limit = 1000.0
concurrency = 1
outage_after = 5
`, tenant, srv.URL)
	all := append(append(providers.Kinds{}, kinds...), xero.Kind)
	cfg, err := config.Parse(text, all, getenv)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	provs, err := app.BuildProviders(cfg, all, getenv, logger)
	if err != nil {
		t.Fatal(err)
	}
	books := map[string]*providers.Provider{"books": provs["books"]}
	if err := app.ReadNamespaces(ctx, cfg, books, logger); err != nil {
		t.Fatal(err)
	}
	b := setup(t, baseConfig, books)
	if err := b.sweeper.WriteNamespaces(ctx); err != nil {
		t.Fatal(err)
	}
	b.sweeper.TrackHealth()
	for i := range 4 {
		b.claim(t, fmt.Sprintf("INV-%d", i), "books", stale)
	}

	sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{MaxPaced: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Tickets) != 0 || sum.Done != 0 || sum.LeftPending != 4 {
		t.Errorf("the pass: %+v; want no ticket, nothing done, all four left pending", sum)
	}
	if n := invoices.Load(); n != 1 {
		t.Errorf("Xero was asked %d times for invoices, want once: its day limit is everyone's", n)
	}
	st, err := health.Read(ctx, b.pool, "books")
	if err != nil || st.Up {
		t.Fatalf("health %+v, %v; want down", st, err)
	}
	if want := time.Now().Add(10 * time.Hour); st.ProbeAt.Before(want.Add(-time.Minute)) || st.ProbeAt.After(want.Add(time.Minute)) {
		t.Errorf("next probe at %s, want about %s: when Xero said its calls are back", st.ProbeAt, want)
	}
	if other.Load() != 0 {
		t.Errorf("%d requests other than the reads", other.Load())
	}
}
