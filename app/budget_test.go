package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOnceAndJobsSpendTheBudgetAlike: `sweep --once` and the River jobs
// follow one budget rule (settle.Budget.Next). A provider rate-limits an
// operation's first ask, then fails every later one transiently, under a
// three-second budget: both runs end in a lookup_failed ticket whose
// evidence lists the transient failures only, numbered from the first —
// the rate-limited ask spent budget, not an attempt — and whose detail
// counts them.
func TestOnceAndJobsSpendTheBudgetAlike(t *testing.T) {
	t.Parallel()
	for _, how := range healthRuns {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			asked := 0
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				asked++
				first := asked == 1
				mu.Unlock()
				if first {
					w.Header().Set("Retry-After", "1")
					http.Error(w, "slow down", http.StatusTooManyRequests)
					return
				}
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
			}))
			t.Cleanup(server.Close)
			b := setup(t, baseConfig+fmt.Sprintf(`
[providers.flaky]
kind = "http"
url = %q
stale_after = "10m"
lookup_timeout = "1s"
lookup_budget = "3s"
rate_limit = 1000.0
concurrency = 1
`, server.URL+"/lookup"), nil)
			key := b.claim(t, "limited-then-failing", "flaky", stale).OpKey

			b.run(t, how, []string{key})

			if diff := cmp.Diff(map[string]int{"done": 0, "lookup_failed": 1}, b.outcomes(t)); diff != "" {
				t.Fatalf("outcomes (-want +got):\n%s", diff)
			}
			tk, ev := b.ticketOf(t, key)
			if len(ev.Errors) == 0 {
				t.Fatalf("the ticket lists no attempt: %s", tk.Evidence)
			}
			for i, e := range ev.Errors {
				if e.Attempt != i+1 || e.Class != "transient" {
					t.Errorf("error %d: attempt %d, %s; want attempt %d, transient (the rate-limited ask is no attempt): %s",
						i, e.Attempt, e.Class, i+1, tk.Evidence)
				}
			}
			if want := fmt.Sprintf("%d attempt(s) failed within lookup_budget 3s", len(ev.Errors)); !strings.HasPrefix(ev.Detail, want) {
				t.Errorf("detail %q, want it to begin %q", ev.Detail, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked < 2 {
				t.Errorf("asked %d time(s); want asked again after the rate limit", asked)
			}
		})
	}
}
