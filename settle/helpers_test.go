package settle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// limits are a provider's timings in these tests: stale after ten
// minutes, no settle window (an empty answer is not_found at once), and a
// rate limit no test reaches unless it means to.
func limits() providers.Limits {
	return providers.Limits{
		StaleAfter:    10 * time.Minute,
		LookupTimeout: 2 * time.Second,
		LookupBudget:  10 * time.Second,
		RateLimit:     1000,
		Concurrency:   10,
	}
}

// simProvider is a sim provider named name whose rules map op_key globs to
// outcomes, in order ("found-*", sim.OutcomeFound, ...); an op_key no rule
// matches is not found.
func simProvider(t testing.TB, name string, lim providers.Limits, rules ...string) *providers.Provider {
	t.Helper()
	if len(rules)%2 != 0 {
		t.Fatalf("simProvider: rules come in pairs of glob and outcome, got %q", rules)
	}
	cfg := &sim.Config{}
	for i := 0; i < len(rules); i += 2 {
		cfg.Rules = append(cfg.Rules, sim.Rule{Match: rules[i], Outcome: rules[i+1]})
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("sim config: %v", errs)
	}
	adapter, err := sim.Kind.New(name, cfg, providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return providers.NewProvider(name, sim.Kind.Name, adapter, lim)
}

// lookupServer is an endpoint of the generic http lookup protocol
// (providers/httplookup): answer says, for each request's query, the status,
// headers and body. It counts the requests it is sent.
type lookupServer struct {
	*httptest.Server
	requests atomic.Int64
}

func newLookupServer(t testing.TB, answer func(w http.ResponseWriter, r *http.Request)) *lookupServer {
	t.Helper()
	s := &lookupServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Method != http.MethodGet {
			t.Errorf("lookup endpoint got %s %s: only GET may reach a provider", r.Method, r.URL.Path)
		}
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// httpProvider is an http-kind provider named name asking s, matching by
// searchBy ("op_key" or "resemblance").
func httpProvider(t testing.TB, name, searchBy string, s *lookupServer, lim providers.Limits) *providers.Provider {
	t.Helper()
	cfg := &httplookup.Config{URL: s.URL + "/lookup", SearchBy: searchBy}
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("http config: %v", errs)
	}
	adapter, err := httplookup.Kind.New(name, cfg, providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	p := providers.NewProvider(name, httplookup.Kind.Name, adapter, lim)
	t.Cleanup(p.Close)
	return p
}

// match is one record as the http lookup protocol answers it.
type match struct {
	ID          string `json:"id"`
	CreatedAt   string `json:"created_at,omitempty"`
	Recipient   string `json:"recipient,omitempty"`
	PayloadHash string `json:"payload_hash,omitempty"`
}

func writeMatches(w http.ResponseWriter, matches ...match) {
	if matches == nil {
		matches = []match{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"matches": matches})
}

// discard is a logger for the code under test: what it logs is not what
// these tests check.
func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// opOf is an operation as a workflow writes it, first attempted age before
// now, not yet in the database (ID 0).
func opOf(key, provider string, now time.Time, age time.Duration) ledger.Operation {
	return ledger.Operation{
		OpKey:          key,
		Workflow:       "billing",
		Provider:       provider,
		Action:         "send_email",
		Recipient:      "jane.doe@example.com",
		PayloadHash:    hashOf(key),
		Status:         ledger.StatusPending,
		Attempts:       1,
		FirstAttemptAt: now.Add(-age),
		LastAttemptAt:  now.Add(-age),
	}
}

// hashOf is the payload hash of a payload of its own for key.
func hashOf(key string) string {
	h, err := ledger.PayloadHash(json.RawMessage(fmt.Sprintf(`{"template":"receipt","order":%q}`, key)))
	if err != nil {
		panic(err)
	}
	return h
}

// claim writes a pending operation for key as a workflow does, and dates
// its attempts age before the database's now().
func claim(t testing.TB, db ledger.DB, key, provider string, age time.Duration) ledger.Operation {
	t.Helper()
	ctx := context.Background()
	store := ledger.NewStore(db, ledger.Native())
	if _, err := store.Claim(ctx, ledger.Attempt{
		OpKey:     key,
		Workflow:  "billing",
		Provider:  provider,
		Action:    "send_email",
		Recipient: "jane.doe@example.com",
		Payload:   json.RawMessage(fmt.Sprintf(`{"template":"receipt","order":%q}`, key)),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE ledger.operations SET first_attempt_at = now() - $2::interval,
		last_attempt_at = now() - $2::interval WHERE op_key = $1`, key, age.String()); err != nil {
		t.Fatal(err)
	}
	op, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// policy opens tickets owned by one person for an hour, looked up again
// after ten minutes, doubling up to an hour.
func policy() review.Policy {
	return review.Policy{
		DefaultOwner:  "U0DEFAULT1",
		Window:        time.Hour,
		Priority:      "normal",
		RelookupAfter: 10 * time.Minute,
		RelookupMax:   time.Hour,
	}
}

// settlerOn is a Settler over db with provs, opening tickets under
// policy(), by the clock now.
func settlerOn(db review.TxBeginner, now func() time.Time, provs ...*providers.Provider) *settle.Settler {
	m := map[string]*providers.Provider{}
	for _, p := range provs {
		m[p.Name] = p
	}
	return settle.NewSettler(ledger.Native(), settle.Settler{
		Providers: m,
		DB:        db,
		Policy:    policy(),
		Logger:    discard(),
		Now:       now,
	})
}

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func newClock(at time.Time) *clock {
	c := &clock{}
	c.set(at)
	return c
}

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(at time.Time)    { c.ns.Store(at.Truncate(time.Microsecond).UnixNano()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// keys are the op_keys of ops, in order.
func keys(ops []ledger.Operation) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.OpKey
	}
	return out
}
