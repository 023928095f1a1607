package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// TestDecisionLineJSON: a dry run's decision prints every field of
// proof.Decision, under a snake_case key, with <, > and & as written. A
// field added to proof.Decision fails here until the JSON shows it.
func TestDecisionLineJSON(t *testing.T) {
	t.Parallel()
	var d proof.Decision
	v := reflect.ValueOf(&d).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("<x> & y")
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"<a>"}))
		default:
			t.Fatalf("proof.Decision.%s: a %s; teach this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	// As the CLI prints it: an encoder that leaves <, > and & alone.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(app.DecisionLine{OpKey: "op-1", Provider: "sim", Decision: d}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	var got struct {
		OpKey    string         `json:"op_key"`
		Provider string         `json:"provider"`
		Decision map[string]any `json:"decision"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.OpKey != "op-1" || got.Provider != "sim" || len(got.Decision) != v.NumField() {
		t.Errorf("JSON %s: want op_key, provider and %d decision fields", b, v.NumField())
	}
	for _, key := range []string{"done", "provider_record_id", "reason", "detail", "record_ids", "differing_fields", "candidates"} {
		if _, ok := got.Decision[key]; !ok {
			t.Errorf("decision lacks %q: %s", key, b)
		}
	}
	if strings.Contains(string(b), `\u003c`) {
		t.Errorf("HTML-escaped: %s", b)
	}
}

// TestDryRunWritesNothing: three operations whose lookups answer the same
// record. A dry run decides as the real pass does — one done, two
// multiple_matches, by the database's own one-record rule, across the
// pass — and writes nothing: no row moves, no ticket, event, outbox row or
// lookup claim is left, and a second dry run decides the same.
func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		shared := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
			func(_ context.Context, q providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "rec_shared", CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
			},
		}}
		b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", shared, 5*time.Second)})
		for _, k := range []string{"twin-a", "twin-b", "twin-c"} {
			b.claim(t, k, "fake", stale)
		}
		want := map[string]int{"done": 1, string(proof.ReasonMultipleMatches): 2}
		for _, run := range []string{"first dry run", "second dry run"} {
			dry, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{DryRun: true})
			if err != nil || dry.Errors != 0 || !dry.DryRun {
				t.Fatalf("%s: %+v, %v", run, dry, err)
			}
			if diff := cmp.Diff(want, passOutcomes(dry)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", run, diff)
			}
			if len(dry.Decisions) != 3 {
				t.Errorf("%s lists %d decisions, want 3", run, len(dry.Decisions))
			}
			written := map[string]int{
				"moved":  b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:status} <> {w:pending}`)),
				"ticket": b.count(t, `SELECT count(*) FROM sweeper.tickets`),
				"event":  b.count(t, `SELECT count(*) FROM sweeper.ticket_events`),
				"outbox": b.count(t, `SELECT count(*) FROM sweeper.outbox`),
				"claim":  b.count(t, `SELECT count(*) FROM sweeper.lookup_claims`),
			}
			if diff := cmp.Diff(map[string]int{"moved": 0, "ticket": 0, "event": 0, "outbox": 0, "claim": 0}, written); diff != "" {
				t.Errorf("%s wrote (-want +got):\n%s", run, diff)
			}
		}
		real, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, passOutcomes(real)); diff != "" {
			t.Errorf("real pass (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, b.outcomes(t)); diff != "" {
			t.Errorf("database after the real pass (-want +got):\n%s", diff)
		}
	})
}

// passOutcomes is a pass's decisions by outcome: done, or the tickets'
// reasons.
func passOutcomes(sum app.PassCounts) map[string]int {
	got := map[string]int{"done": sum.Done}
	for r, n := range sum.Tickets {
		got[string(r)] = n
	}
	return got
}

// TestSweepOnceSpendsTheLookupBudget: `sweep --once` follows the lookup
// budget (settle.Budget.Next, as the lookup job does). A provider
// rate-limits an operation's first ask, then fails every later one
// transiently, under a three-second budget: the pass ends in a
// lookup_failed ticket whose evidence lists the transient failures only,
// numbered from the first — the rate-limited ask spent budget, not an
// attempt — and whose detail counts them.
func TestSweepOnceSpendsTheLookupBudget(t *testing.T) {
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

	b.run(t, "sweep --once", []string{key})

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
}

// TestSweepOnceClaimsWhatItAsks: while `sweep --once` asks about an
// operation, the operation is claimed in sweeper.lookup_claims, as the
// sweep claims what it hands to a job — a daemon's sweep meanwhile hands
// it on to no job — and the pass leaves no claim behind.
func TestSweepOnceClaimsWhatItAsks(t *testing.T) {
	t.Parallel()
	claims := make(chan int, 1)
	var b *bundle
	f := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(ctx context.Context, q providers.Query) ([]providers.Record, error) {
			var n int
			if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.lookup_claims`).Scan(&n); err != nil {
				return nil, err
			}
			claims <- n
			return []providers.Record{{ID: "rec_1", CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
		},
	}}
	b = setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", f, 5*time.Second)})
	b.claim(t, "claimed-1", "fake", stale)
	sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{})
	if err != nil || sum.Done != 1 {
		t.Fatalf("sweep --once: %+v, %v", sum, err)
	}
	if n := <-claims; n != 1 {
		t.Errorf("%d claims while the operation was asked about, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.lookup_claims`); n != 0 {
		t.Errorf("%d claims left after the pass", n)
	}
}
