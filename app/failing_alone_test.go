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
)

// failingAloneProvider is shaped like the generic http lookup protocol
// (GET ?op_key=…, 200 {"matches": [...]}): it answers HTTP 500 to every
// "bad-" operation, every time, and holds a record for every other — until
// everyoneFails, when it answers 500 to all. An "ok-G-" operation's answer
// waits until each "bad-G-" operation of its group G has been answered
// once: the provider fails those while it answers others.
type failingAloneProvider struct {
	mu            sync.Mutex
	changed       *sync.Cond
	hashes        map[string]string
	asked         map[string]int
	bad           map[string][]string // by group
	everyoneFails bool
}

func newFailingAloneProvider() *failingAloneProvider {
	f := &failingAloneProvider{hashes: map[string]string{}, asked: map[string]int{}, bad: map[string][]string{}}
	f.changed = sync.NewCond(&f.mu)
	return f
}

func (f *failingAloneProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("op_key")
	f.mu.Lock()
	f.asked[key]++
	f.changed.Broadcast()
	if group, ok := strings.CutPrefix(key, "ok-"); ok && !f.everyoneFails {
		group, _, _ = strings.Cut(group, "-")
		for !f.allAsked(f.bad[group]) && r.Context().Err() == nil {
			f.changed.Wait()
		}
	}
	hash, fails := f.hashes[key], f.everyoneFails || strings.HasPrefix(key, "bad-")
	f.mu.Unlock()
	if fails {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	since, _ := time.Parse(time.RFC3339, r.URL.Query().Get("since"))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"matches": []map[string]string{{ //nolint:errcheck // the client sees a cut answer
		"id": "msg_" + key, "created_at": since.Add(15*time.Minute + time.Second).UTC().Format(time.RFC3339),
		"recipient": r.URL.Query().Get("recipient"), "payload_hash": hash,
	}}})
}

func (f *failingAloneProvider) allAsked(keys []string) bool {
	for _, k := range keys {
		if f.asked[k] == 0 {
			return false
		}
	}
	return true
}

// TestOperationsFailingAloneOpenNoIncident: a provider answers HTTP 500 to
// the same eight operations forever and answers every other. While it
// answers the others, the eight fail alone (two passes, four each: fewer
// than outage_after in a row) and end in lookup_failed tickets. Then only
// they ask — their tickets' scheduled re-lookups, eight different
// operations failing with no answer in between, twice over — and the
// provider is still not down: no incident opens. When the provider then
// fails for everyone, fresh operations take it down, in one incident.
func TestOperationsFailingAloneOpenNoIncident(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := newFailingAloneProvider()
	server := httptest.NewServer(fake)
	t.Cleanup(server.Close)
	// Unblocks answers still waiting when the server closes.
	t.Cleanup(func() { fake.mu.Lock(); fake.changed.Broadcast(); fake.mu.Unlock() })
	b := setup(t, baseConfig+fmt.Sprintf(`
[providers.answers]
kind = "http"
url = %q
stale_after = "10m"
lookup_timeout = "2s"
lookup_budget = "3s"
rate_limit = 1000.0
concurrency = 20
outage_after = 5
`, server.URL+"/lookup"), nil)
	b.sweeper.TrackHealth()
	claim := func(key string) {
		op := b.claim(t, key, "answers", stale)
		fake.mu.Lock()
		fake.hashes[key] = op.PayloadHash
		fake.mu.Unlock()
	}
	for _, group := range []string{"a", "b"} {
		for i := range 4 {
			key := fmt.Sprintf("bad-%s-%d", group, i)
			fake.mu.Lock()
			fake.bad[group] = append(fake.bad[group], key)
			fake.mu.Unlock()
			claim(key)
		}
		for i := range 5 {
			claim(fmt.Sprintf("ok-%s-%d", group, i))
		}
		sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{MaxPaced: 3 * time.Second})
		if err != nil || sum.LeftPending != 0 {
			t.Fatalf("group %s: sweep --once: %+v, %v; want nothing left pending", group, sum, err)
		}
	}
	if diff := cmp.Diff(map[string]int{"done": 10, "lookup_failed": 8}, b.outcomes(t)); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}
	b.neverDown(t, "answers")

	// Only the eight ask now: their tickets' re-lookups.
	for round := range 2 {
		fake.mu.Lock()
		before := fake.asked["bad-a-0"]
		fake.mu.Unlock()
		if _, err := b.pool.Exec(ctx, `UPDATE sweeper.tickets SET relookup_at = now() - interval '1 second' WHERE state = 'open'`); err != nil {
			t.Fatal(err)
		}
		sum, err := b.sweeper.RelookupOnce(ctx)
		if err != nil || sum.Relooked != 8 {
			t.Fatalf("round %d: re-lookups %+v, %v; want 8 relooked", round, sum, err)
		}
		fake.mu.Lock()
		after := fake.asked["bad-a-0"]
		fake.mu.Unlock()
		if after != before+1 {
			t.Fatalf("round %d: bad-a-0 asked %d time(s) by its re-lookup; want once", round, after-before)
		}
	}
	b.neverDown(t, "answers")

	// The provider fails for everyone: fresh operations take it down.
	fake.mu.Lock()
	fake.everyoneFails = true
	fake.mu.Unlock()
	for i := range 5 {
		claim(fmt.Sprintf("fresh-%d", i))
	}
	if _, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{MaxPaced: time.Second}); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = 'answers' AND state = 'down'`); n != 1 {
		t.Errorf("provider down %d; want down once it fails for everyone", n)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.incidents WHERE provider = 'answers'`); n != 1 {
		t.Errorf("%d incident(s); want one", n)
	}
}
