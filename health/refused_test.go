package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// refusingAdapter asks url for an operation through the read-only
// transport and reads the answer as an HTTP adapter does.
type refusingAdapter struct{ url string }

func (a refusingAdapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"?op_key="+q.OpKey, nil)
	if err != nil {
		return nil, providers.Permanent(err)
	}
	resp, err := (&http.Client{Transport: providers.ReadOnlyTransport{}}).Do(req)
	if err != nil {
		return nil, providers.Transient(err)
	}
	if _, err := (providers.HTTPAnswer{Name: "mailer", MaxBody: 1 << 10}).Read(ctx, resp); err != nil {
		return nil, err
	}
	return nil, nil
}

// TestRefusedForeverGoesDown: a provider that answers every request with
// a 429 goes down for the cluster once outage_after different operations
// were refused again after the wait their first 429 asked for — and not
// before: each operation's first 429, honoured, counts for nothing.
func TestRefusedForeverGoesDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(server.Close)
	pool := dbtest.NewPool(t)
	const outageAfter = 3
	tracker := health.NewTracker(pool, "mailer", outageAfter, time.Minute)
	p := providers.NewProvider("mailer", "http", refusingAdapter{server.URL}, providers.Limits{
		StaleAfter: time.Minute, LookupTimeout: time.Minute, LookupBudget: time.Hour,
		RateLimit: 1000, Concurrency: 4, OutageAfter: outageAfter,
	})
	p.SetHealth(tracker)
	ask := func(op string) {
		t.Helper()
		_, err := p.Lookup(ctx, providers.Query{OpKey: op, Action: "send_email"})
		if class, _ := providers.Classify(err); class != providers.ClassRateLimited {
			t.Fatalf("Lookup(%s) = %v; want rate limited", op, err)
		}
	}
	up := func() bool {
		t.Helper()
		st, err := health.Read(ctx, pool, "mailer")
		if err != nil {
			t.Fatal(err)
		}
		return st.Up
	}

	ops := []string{"op-1", "op-2", "op-3", "op-4", "op-5"}
	for _, op := range ops {
		ask(op)
	}
	if !up() {
		t.Fatal("down after 429s that were each an operation's first")
	}
	time.Sleep(1100 * time.Millisecond)
	for _, op := range ops[:outageAfter-1] {
		ask(op)
	}
	if !up() {
		t.Fatalf("down after %d operations refused again; want %d", outageAfter-1, outageAfter)
	}
	ask(ops[outageAfter-1])
	st, err := health.Read(ctx, pool, "mailer")
	if err != nil || st.Up {
		t.Fatalf("after %d operations refused again past their Retry-After: %+v, %v; want down", outageAfter, st, err)
	}
	if !strings.Contains(st.LastError, "HTTP 429") || health.Cause(st.LastError) != "rate_limited" {
		t.Errorf("last_error %q (cause %s); want the 429, rate_limited", st.LastError, health.Cause(st.LastError))
	}
}
