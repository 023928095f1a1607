package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/settle"
)

// TestOwnPacingIsNeverAFailure: 60 stale operations whose records the
// provider holds, a rate limit of 20 lookups a second and a lookup budget
// of one second. Most lookups wait for this process's own rate limiter far
// longer than the budget; that wait asks nobody, so it is no attempt and no
// failure: every operation ends done, none lookup_failed, and the provider
// is asked once per operation.
func TestOwnPacingIsNeverAFailure(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	holds := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			asked.Add(1)
			return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
		},
	}}
	paced := providers.NewProvider("paced", "fake", holds, providers.Limits{
		StaleAfter: 10 * time.Minute, LookupTimeout: 200 * time.Millisecond, LookupBudget: time.Second,
		RateLimit: 20, Concurrency: 2,
	})
	b := setup(t, baseConfig, map[string]*providers.Provider{"paced": paced})
	var keys []string
	for i := range 60 {
		keys = append(keys, b.claim(t, fmt.Sprintf("paced-%02d", i), "paced", stale).OpKey)
	}

	t.Run("River jobs", func(t *testing.T) {
		client := b.startClient(t)
		b.sweep(t, client)
		b.waitSettled(t, keys, time.Minute)
		if n := b.count(t, `SELECT count(*) FROM ledger.operations WHERE status = 'done' AND op_key LIKE 'paced-%'`); n != len(keys) {
			t.Errorf("%d of %d done; tickets: %d", n, len(keys), b.count(t, `SELECT count(*) FROM sweeper.tickets`))
		}
		if n := asked.Load(); n != int64(len(keys)) {
			t.Errorf("the provider was asked %d times, want once per operation (%d)", n, len(keys))
		}
	})

	t.Run("sweep --once", func(t *testing.T) {
		asked.Store(0)
		var more []string
		for i := range 30 {
			more = append(more, b.claim(t, fmt.Sprintf("paced-once-%02d", i), "paced", stale).OpKey)
		}
		sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{Concurrency: 30})
		if err != nil || sum.Errors != 0 || sum.Done != len(more) || len(sum.Tickets) != 0 {
			t.Errorf("sweep --once: %+v, %v; want %d done, no ticket", sum, err, len(more))
		}
		for _, k := range more {
			if op := b.status(t, k); op.Status != ledger.StatusDone {
				t.Errorf("%s is %s", k, op.Status)
			}
		}
	})
}

// TestSweepAdmitsABoundedBacklog: a provider's backlog far larger than
// what it can be asked in the admission horizon is handed on in bounded
// pieces, oldest first: one pass hands on at most rate_limit × horizon
// operations (at least a batch). The oldest are the ones already queued,
// so the queue stays about that long whatever the backlog.
func TestSweepAdmitsABoundedBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	slow := providers.NewProvider("slow", "fake", &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(context.Context, providers.Query) ([]providers.Record, error) { return nil, nil },
	}}, providers.Limits{StaleAfter: 10 * time.Minute, LookupTimeout: time.Second, LookupBudget: time.Minute, RateLimit: 0.2, Concurrency: 1})
	b.sweeper.Providers["slow"] = slow
	if _, err := b.pool.Exec(context.Background(), `
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at)
		SELECT 'backlog-' || lpad(i::text, 5, '0'), 'wf', 'slow', 'send', repeat('a', 64), now() - interval '1 hour' - i * interval '1 second'
		FROM generate_series(1, 2000) i`); err != nil {
		t.Fatal(err)
	}
	scanner := b.sweeper.Scanner()
	scanner.Admission = settle.AdmissionHorizon // 0.2/s × 300 s = 60 (more than a batch of 50)
	var handed []string
	n, err := scanner.Scan(context.Background(), func(_ context.Context, ops []ledger.Operation) error {
		for _, op := range ops {
			if op.Provider == "slow" {
				handed = append(handed, op.OpKey)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := 60; len(handed) != want {
		t.Errorf("one pass handed on %d of the 2000 (scanned %d), want %d", len(handed), n, want)
	}
	if len(handed) > 0 && handed[0] != "backlog-02000" {
		t.Errorf("first handed on %s, want the oldest, backlog-02000", handed[0])
	}
}

// TestOutageMakesNoTickets: the provider answers 503 for eight seconds,
// longer than the three-second lookup budget, then holds every record.
// Its failures take it down for the cluster: the lookups pause, spending
// no budget, a probe asks at a backoff, and once it answers they resume —
// every operation done, no lookup_failed ticket.
func TestOutageMakesNoTickets(t *testing.T) {
	t.Parallel()
	outageEnds := time.Now().Add(8 * time.Second)
	var asked atomic.Int64
	flaky := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			asked.Add(1)
			if time.Now().Before(outageEnds) {
				return nil, providers.Transient(fmt.Errorf("HTTP 503"))
			}
			return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
		},
	}}
	b := setup(t, baseConfig, map[string]*providers.Provider{"flaky": fakeProvider("flaky", flaky, 3*time.Second)})
	b.sweeper.TrackHealth()
	var keys []string
	for i := range 20 {
		keys = append(keys, b.claim(t, fmt.Sprintf("outage-%02d", i), "flaky", stale).OpKey)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, keys, 90*time.Second)
	if n := b.count(t, `SELECT count(*) FROM ledger.operations WHERE status = 'done'`); n != len(keys) {
		t.Errorf("%d of %d done after the outage; tickets: %d", n, len(keys), b.count(t, `SELECT count(*) FROM sweeper.tickets`))
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = 'flaky' AND state = 'up' AND down_seconds > 0`); n != 1 {
		t.Errorf("provider_health: want flaky up again after a recorded outage")
	}
	t.Logf("the provider was asked %d times for %d operations", asked.Load(), len(keys))
}

// TestSettleWindowWaitsForALaggingSearch: a provider whose search lists a
// record only a while after it exists (settle_window, a key of every
// provider). An empty answer inside the window is asked again when the
// window ends — no attempt, no budget, no ticket — and the record found
// then settles the operation; an empty answer after the window is
// not_found, as for any provider.
func TestSettleWindowWaitsForALaggingSearch(t *testing.T) {
	t.Parallel()
	var listed atomic.Bool
	lagging := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			if strings.HasPrefix(q.OpKey, "indexed") && listed.Load() {
				return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
			}
			return nil, nil
		},
	}}
	// window is long enough for the first lookups to fall inside it on
	// a loaded machine; the test then waits for it to end.
	const window = 5 * time.Second
	p := providers.NewProvider("lagging", "fake", lagging, providers.Limits{
		StaleAfter: 10 * time.Minute, LookupTimeout: time.Second, LookupBudget: time.Second,
		RateLimit: 1000, Concurrency: 10, SettleWindow: window,
	})
	b := setup(t, baseConfig, map[string]*providers.Provider{"lagging": p})
	// First attempted just now: the window is still open. (A stale row
	// is older than any window; the window is about young rows.)
	indexed := b.claim(t, "indexed-1", "lagging", 0)
	never := b.claim(t, "never-1", "lagging", 0)
	// Looked up directly, as their lookup jobs would be.
	settler := b.sweeper.Settler()
	var windowEnds time.Duration
	for _, op := range []ledger.Operation{indexed, never} {
		step := settler.Attempt(context.Background(), op)
		if step.Final || step.Class != providers.ClassPaced || step.RetryAfter <= 0 || step.RetryAfter > window {
			t.Fatalf("%s inside the window: final %v, class %s, retry after %s; want paced until the window ends", op.OpKey, step.Final, step.Class, step.RetryAfter)
		}
		if !strings.Contains(step.Err.Error(), "settle_window") {
			t.Errorf("%s: %v, want the reason", op.OpKey, step.Err)
		}
		windowEnds = max(windowEnds, step.RetryAfter)
	}
	// The search lists the record, late; then the window ends: the scenario.
	listed.Store(true)
	time.Sleep(windowEnds + 100*time.Millisecond)
	for _, tc := range []struct {
		op   ledger.Operation
		want string
	}{{indexed, "done"}, {never, string(proof.ReasonNotFound)}} {
		step := settler.Attempt(context.Background(), tc.op)
		if !step.Final {
			t.Fatalf("%s after the window: not final (%v)", tc.op.OpKey, step.Err)
		}
		settled, err := settler.Finish(context.Background(), tc.op, step, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := string(settled.Decision.Reason)
		if settled.Decision.Done {
			got = "done"
		}
		if got != tc.want {
			t.Errorf("%s after the window: %s, want %s", tc.op.OpKey, got, tc.want)
		}
	}
}

// TestSweepOnceLeavesADownProviderForLater: `sweep --once` while a provider
// is down for the cluster does not wait out the outage: it leaves that
// provider's operations pending, says so, and returns.
func TestSweepOnceLeavesADownProviderForLater(t *testing.T) {
	t.Parallel()
	holds := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
		},
	}}
	b := setup(t, baseConfig, map[string]*providers.Provider{"down": fakeProvider("down", holds, 5*time.Second)})
	b.sweeper.TrackHealth()
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO sweeper.provider_health (provider, state, since, probe_at, last_error)
		VALUES ('down', 'down', now(), now() + interval '1 hour', 'HTTP 503')`); err != nil {
		t.Fatal(err)
	}
	op := b.claim(t, "waiting-1", "down", stale)
	start := time.Now()
	sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{MaxPaced: 2 * time.Second})
	if err != nil || sum.LeftPending != 1 || sum.Errors != 0 || time.Since(start) > 15*time.Second {
		t.Fatalf("sweep --once while down: %+v, %v in %s; want one left pending, promptly", sum, err, time.Since(start))
	}
	if got := b.status(t, op.OpKey); got.Status != ledger.StatusPending {
		t.Errorf("%s is %s, want pending", op.OpKey, got.Status)
	}
}
