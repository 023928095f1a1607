package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/providers"
)

// healthRuns are the two ways a pass runs: `sweep --once` in the
// foreground, and the daemon's River jobs.
var healthRuns = []string{"sweep --once", "River jobs"}

// run settles keys the way named, within a minute.
func (b *bundle) run(t *testing.T, how string, keys []string) {
	t.Helper()
	switch how {
	case "sweep --once":
		sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{MaxPaced: 3 * time.Second})
		if err != nil || sum.Errors != 0 || sum.LeftPending != 0 {
			t.Errorf("sweep --once: %+v, %v; want nothing left pending", sum, err)
		}
	default:
		client := b.startClient(t)
		b.sweep(t, client)
		b.waitSettled(t, keys, time.Minute)
	}
}

// neverDown checks that provider was never down: no health row says so,
// no incident was opened.
func (b *bundle) neverDown(t *testing.T, provider string) {
	t.Helper()
	if n := b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = $1`, provider); n != 0 {
		var last string
		_ = b.pool.QueryRow(context.Background(), `SELECT state || ': ' || coalesce(last_error, '') FROM sweeper.provider_health WHERE provider = $1`, provider).Scan(&last)
		t.Errorf("provider %s was taken down (%s); want never", provider, last)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.incidents WHERE provider = $1`, provider); n != 0 {
		t.Errorf("%d incident(s) of %s; want none", n, provider)
	}
}

// TestPoisonedOperationsFailAlone: a provider answers twenty operations
// normally and two with records sweeper cannot hold — an id holding NUL, a
// 9,000-byte id — every time they are asked. Those answers are the two
// operations' problem: the provider is never down (its other lookups never
// pause), and the two end in lookup_failed tickets within their budget,
// saying why; the twenty are done.
func TestPoisonedOperationsFailAlone(t *testing.T) {
	t.Parallel()
	for _, how := range healthRuns {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			poisoned := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
				func(_ context.Context, q providers.Query) ([]providers.Record, error) {
					rec := providers.Record{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}
					switch q.OpKey {
					case "poison-nul":
						rec.ID = "rec\x00nul"
					case "poison-long":
						rec.ID = strings.Repeat("r", 9000)
					}
					return []providers.Record{rec}, nil
				},
			}}
			// Four asks each (0s, 1s, 3s, 7s; the next at 15s is past it):
			// eight failures of two operations, six of them at least after
			// the twenty answers.
			const budget = 10 * time.Second
			b := setup(t, baseConfig, map[string]*providers.Provider{"poisoned": fakeProvider("poisoned", poisoned, budget)})
			b.sweeper.TrackHealth()
			var keys []string
			for i := range 20 {
				keys = append(keys, b.claim(t, fmt.Sprintf("healthy-%02d", i), "poisoned", stale).OpKey)
			}
			keys = append(keys, b.claim(t, "poison-nul", "poisoned", stale).OpKey, b.claim(t, "poison-long", "poisoned", stale).OpKey)

			start := time.Now()
			b.run(t, how, keys)
			took := time.Since(start)

			if diff := cmp.Diff(map[string]int{"done": 20, "lookup_failed": 2}, b.outcomes(t)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			b.neverDown(t, "poisoned")
			for _, key := range []string{"poison-nul", "poison-long"} {
				tk, ev := b.ticketOf(t, key)
				if tk.Reason != "lookup_failed" {
					t.Errorf("%s: ticket %s, want lookup_failed", key, tk.Reason)
				}
				if len(ev.Errors) < 2 || !strings.Contains(string(tk.Evidence), "malformed answer") {
					t.Errorf("%s: the ticket does not list the retried malformed answers: %s", key, tk.Evidence)
				}
			}
			if took > budget+10*time.Second {
				t.Errorf("took %s: the budget (%s) ends a poisoned operation", took, budget)
			}
		})
	}
}

// unreadableProvider is shaped like the generic http lookup protocol
// (GET ?op_key=…, 200 {"matches": [...]}): it holds a record for every
// "ok-" operation, and answers three others badly, every time: HTTP 500,
// an HTML page with status 200, and {} (no matches field).
type unreadableProvider struct {
	mu     sync.Mutex
	hashes map[string]string
	asked  map[string]int
}

func (f *unreadableProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("op_key")
	f.mu.Lock()
	f.asked[key]++
	hash := f.hashes[key]
	f.mu.Unlock()
	if strings.HasPrefix(key, "bad-") {
		// After the others' answers, so that nothing but the three bad
		// answers comes between them.
		time.Sleep(200 * time.Millisecond)
	}
	switch key {
	case "bad-500":
		http.Error(w, "internal error", http.StatusInternalServerError)
	case "bad-html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><body><h1>Scheduled maintenance</h1></body></html>")
	case "bad-empty":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	default:
		// Sent a second after the first attempt: the window starts 15
		// minutes before it.
		since, _ := time.Parse(time.RFC3339, r.URL.Query().Get("since"))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"matches": []map[string]string{{ //nolint:errcheck // the client sees a cut answer
			"id": "msg_" + key, "created_at": since.Add(15*time.Minute + time.Second).UTC().Format(time.RFC3339),
			"recipient": r.URL.Query().Get("recipient"), "payload_hash": hash,
		}}})
	}
}

// TestUnreadableAnswersAreNoOutage: a provider answers most operations
// normally, one with HTTP 500, one with an HTML page and one with {} —
// every time, under a three-second budget. The 500 is the provider's
// failure, but for one operation only, with answers in between; the HTML
// page and {} are answers that cannot be read. The provider is never
// down, and the three end as lookup_failed tickets.
func TestUnreadableAnswersAreNoOutage(t *testing.T) {
	t.Parallel()
	for _, how := range healthRuns {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			fake := &unreadableProvider{hashes: map[string]string{}, asked: map[string]int{}}
			server := httptest.NewServer(fake)
			t.Cleanup(server.Close)
			b := setup(t, baseConfig+fmt.Sprintf(`
[providers.answers]
kind = "http"
url = %q
stale_after = "10m"
lookup_timeout = "1s"
lookup_budget = "3s"
rate_limit = 1000.0
concurrency = 20
`, server.URL+"/lookup"), nil)
			b.sweeper.TrackHealth()
			keys := []string{"bad-500", "bad-html", "bad-empty"}
			for i := range 20 {
				keys = append(keys, fmt.Sprintf("ok-%02d", i))
			}
			for _, key := range keys {
				op := b.claim(t, key, "answers", stale)
				fake.mu.Lock()
				fake.hashes[key] = op.PayloadHash
				fake.mu.Unlock()
			}

			b.run(t, how, keys)

			if diff := cmp.Diff(map[string]int{"done": 20, "lookup_failed": 3}, b.outcomes(t)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			b.neverDown(t, "answers")
			fake.mu.Lock()
			defer fake.mu.Unlock()
			for _, key := range keys[:3] {
				if fake.asked[key] < 2 {
					t.Errorf("%s asked %d time(s); want retried within its budget", key, fake.asked[key])
				}
			}
		})
	}
}
