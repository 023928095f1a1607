package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// countEvents gives b's sweeper and providers event metrics on a registry
// of their own, as `sweeper run` does, and returns the registry.
func (b *bundle) countEvents(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, slices.Sorted(maps.Keys(b.sweeper.Providers)))
	if err != nil {
		t.Fatal(err)
	}
	b.sweeper.Metrics = m
	for _, p := range b.sweeper.Providers {
		p.SetMetrics(m)
	}
	return reg
}

// ledgerCounts reads what the database says happened, as metric series.
func (b *bundle) ledgerCounts(t *testing.T) (settled, tickets map[string]float64) {
	t.Helper()
	ctx := context.Background()
	settled, tickets = map[string]float64{}, map[string]float64{}
	rows, err := b.pool.Query(ctx, `SELECT CASE WHEN provider = 'sim' THEN provider ELSE 'unconfigured' END, status, count(*)
		FROM ledger.operations WHERE status IN ('done', 'review') GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var provider, status string
		var n int
		if err := rows.Scan(&provider, &status, &n); err != nil {
			t.Fatal(err)
		}
		settled[fmt.Sprintf("outcome=%s,provider=%s", status, provider)] += float64(n)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	rows, err = b.pool.Query(ctx, `SELECT reason, count(*) FROM sweeper.tickets GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var reason string
		var n int
		if err := rows.Scan(&reason, &n); err != nil {
			t.Fatal(err)
		}
		tickets["reason="+reason] = float64(n)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return settled, tickets
}

// TestMetricsOfASweep runs a sweep over operations of every outcome through
// a real River client and checks that the counters say what the ledger
// says, and that a second sweep, which finds nothing, moves nothing.
func TestMetricsOfASweep(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	reg := b.countEvents(t)
	keys := []string{"found-1", "found-2", "many-1", "mismatch-1", "lost-1", "unsupported-1", "error-1"}
	for _, k := range keys {
		b.claim(t, k, "sim", stale)
	}
	b.claim(t, "ghost-1", "ghost", stale) // no [providers.ghost] block: invalid_operation
	keys = append(keys, "ghost-1")
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, keys, 60*time.Second)

	settled, tickets := b.ledgerCounts(t)
	wantSettled := map[string]float64{
		"outcome=done,provider=sim": 2, "outcome=review,provider=sim": 5, "outcome=review,provider=unconfigured": 1,
	}
	if diff := cmp.Diff(wantSettled, settled); diff != "" {
		t.Fatalf("the ledger (-want +got):\n%s", diff)
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			name string
			want map[string]float64
		}{
			{"sweeper_operations_scanned_total", map[string]float64{"provider=sim": 7, "provider=unconfigured": 1}},
			{"sweeper_operations_settled_total", settled},
			{"sweeper_tickets_opened_total", tickets},
		} {
			if diff := cmp.Diff(c.want, metricstest.NonZero(t, reg, c.name)); diff != "" {
				t.Errorf("%s: %s (-want +got):\n%s", when, c.name, diff)
			}
		}
		lookups := metricstest.Values(t, reg, "sweeper_lookup_duration_seconds")
		// error-1 is retried within its 2s budget: one transient result or more.
		if lookups["provider=sim,result=transient"] < 1 {
			t.Errorf("%s: no transient lookup observed: %v", when, lookups)
		}
		delete(lookups, "provider=sim,result=transient")
		wantLookups := map[string]float64{
			"provider=sim,result=found":       3, // found-1, found-2, and mismatch-1's one record
			"provider=sim,result=multiple":    1,
			"provider=sim,result=not_found":   1,
			"provider=sim,result=unsupported": 1,
		}
		if diff := cmp.Diff(wantLookups, lookups); diff != "" {
			t.Errorf("%s: lookups (-want +got):\n%s", when, diff)
		}
	}
	check("after the sweep")

	b.sweep(t, client)
	b.waitSettled(t, keys, 30*time.Second)
	check("after a second sweep")
}

// TestMetricsCountOnlyCommits: a decision is counted when its write
// commits — not in a dry run, and not when the workflow confirmed the
// operation first.
func TestMetricsCountOnlyCommits(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	reg := b.countEvents(t)
	ctx := context.Background()
	settler := b.sweeper.Settler()
	nothing := func(when string) {
		t.Helper()
		for _, name := range []string{"sweeper_operations_settled_total", "sweeper_tickets_opened_total"} {
			if got := metricstest.NonZero(t, reg, name); len(got) != 0 {
				t.Errorf("%s: %s = %v, want nothing", when, name, got)
			}
		}
	}

	dry := b.claim(t, "lost-dry", "sim", stale)
	if sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{DryRun: true}); err != nil || len(sum.Decisions) != 1 {
		t.Fatalf("dry run: %+v, %v; want one decision", sum, err)
	}
	nothing("dry run")

	raced := b.claim(t, "found-raced", "sim", stale)
	step := settler.Attempt(ctx, raced)
	if _, err := b.pool.Exec(ctx, `UPDATE ledger.operations SET status = 'done', provider_record_id = 'wf_1' WHERE op_key = $1`, raced.OpKey); err != nil {
		t.Fatal(err)
	}
	settled, err := settler.Finish(ctx, raced, step, nil)
	if err != nil || settled.Applied.Settled {
		t.Fatalf("finish after the workflow confirmed: %+v, %v", settled, err)
	}
	nothing("the workflow confirmed first")

	if _, err := settler.Finish(ctx, dry, settler.Attempt(ctx, dry), nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"outcome=review,provider=sim": 1}, metricstest.NonZero(t, reg, "sweeper_operations_settled_total")); diff != "" {
		t.Errorf("settled (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"reason=not_found": 1}, metricstest.NonZero(t, reg, "sweeper_tickets_opened_total")); diff != "" {
		t.Errorf("tickets (-want +got):\n%s", diff)
	}
}

// TestMetricsOfEscalation: each committed step is counted once, under the
// level it left the ticket at; a pass that finds nothing due counts
// nothing; a re-lookup that proves the effect counts as resolved.
func TestMetricsOfEscalation(t *testing.T) {
	t.Parallel()

	t.Run("levels and repeats", func(t *testing.T) {
		t.Parallel()
		b := setupEscalation(t, escalationConfig, nil)
		reg := b.countEvents(t)
		const key = "lost-metrics"
		id := b.openTickets(t, "sim", key)[key]
		b.escalateOnce(t) // not yet due
		if got := metricstest.Values(t, reg, "sweeper_escalations_total"); len(got) != 0 {
			t.Fatalf("before the deadline: %v", got)
		}
		for range 3 {
			b.passDue(t, id)
			b.escalateOnce(t)
		}
		b.escalateOnce(t) // the new deadline has not passed
		want := map[string]float64{"level=1,step=level": 1, "level=2,step=level": 1, "level=2,step=repeat": 1}
		if diff := cmp.Diff(want, metricstest.Values(t, reg, "sweeper_escalations_total")); diff != "" {
			t.Errorf("escalations (-want +got):\n%s", diff)
		}
	})

	t.Run("resolved by the re-lookup", func(t *testing.T) {
		t.Parallel()
		late := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
			func(context.Context, providers.Query) ([]providers.Record, error) { return nil, nil },
			func(_ context.Context, q providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "rec_late", CreatedAt: q.FirstAttemptAt.Add(time.Second), Recipient: q.Recipient, PayloadHash: q.PayloadHash}}, nil
			},
		}}
		b := setupEscalation(t, escalationConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", late, 5*time.Second)})
		reg := b.countEvents(t)
		const key = "late-metrics"
		id := b.openTickets(t, "fake", key)[key]
		b.passDue(t, id)
		b.escalateOnce(t)
		if diff := cmp.Diff(map[string]float64{"level=0,step=resolved": 1}, metricstest.Values(t, reg, "sweeper_escalations_total")); diff != "" {
			t.Errorf("escalations (-want +got):\n%s", diff)
		}
		wantLookups := map[string]float64{"provider=fake,result=not_found": 1, "provider=fake,result=found": 1}
		if diff := cmp.Diff(wantLookups, metricstest.Values(t, reg, "sweeper_lookup_duration_seconds")); diff != "" {
			t.Errorf("lookups (-want +got):\n%s", diff)
		}
	})
}

// TestStateCollectorOutbox: pending outbox rows are reported by age (since
// written, or replayed), every bucket present; parked rows by error code.
func TestStateCollectorOutbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	_, err := pool.Exec(ctx, `
		BEGIN;
		SELECT set_config('sweeper.writer', 'sweeper', true);
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status)
		VALUES ('o-1', 'wf', 'mailer', 'send_email', repeat('a', 64), 'review');
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
		SELECT id, op_key, 'not_found', 'U0OWNER', 'normal', now() + interval '4 hours', '{}' FROM ledger.operations;
		INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		SELECT id, 'e' || k, 'sweeper', 'ticket:' || id || ':' || k FROM sweeper.tickets, generate_series(1, 7) AS k;
		UPDATE sweeper.outbox SET created_at = now() - interval '5 minutes' WHERE kind = 'e2';
		UPDATE sweeper.outbox SET created_at = now() - interval '2 hours' WHERE kind IN ('e3', 'e4');
		UPDATE sweeper.outbox SET created_at = now() - interval '2 hours', replayed_at = now() WHERE kind = 'e5';
		UPDATE sweeper.outbox SET state = 'parked', error_code = 'token_revoked' WHERE kind IN ('e6', 'e7');
		UPDATE sweeper.outbox SET receiver = 'webhook' WHERE kind IN ('e4', 'e7');
		COMMIT;`)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	state := app.NewStateCollector(pool, ledger.Native(), nil)
	reg.MustRegister(state)
	if err := state.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"age=<1m": 2, "age=1m-10m": 1, "age=10m-1h": 0, "age=>1h": 2},
		metricstest.Values(t, reg, "sweeper_outbox_pending_rows")); diff != "" {
		t.Errorf("pending rows by age (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"error=token_revoked": 2},
		metricstest.Values(t, reg, "sweeper_outbox_parked_rows")); diff != "" {
		t.Errorf("parked rows by error (-want +got):\n%s", diff)
	}
	// The same by receiver, under the receiver-neutral names: every age
	// bucket of every receiver present.
	if diff := cmp.Diff(map[string]float64{
		"age=<1m,receiver=slack": 2, "age=1m-10m,receiver=slack": 1, "age=10m-1h,receiver=slack": 0, "age=>1h,receiver=slack": 1,
		"age=<1m,receiver=webhook": 0, "age=1m-10m,receiver=webhook": 0, "age=10m-1h,receiver=webhook": 0, "age=>1h,receiver=webhook": 1,
		"age=<1m,receiver=pagerduty": 0, "age=1m-10m,receiver=pagerduty": 0, "age=10m-1h,receiver=pagerduty": 0, "age=>1h,receiver=pagerduty": 0,
	}, metricstest.Values(t, reg, "sweeper_notify_outbox_pending_rows")); diff != "" {
		t.Errorf("pending rows by receiver and age (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"error=token_revoked,receiver=slack": 1, "error=token_revoked,receiver=webhook": 1},
		metricstest.Values(t, reg, "sweeper_notify_outbox_parked_rows")); diff != "" {
		t.Errorf("parked rows by receiver and error (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"receiver=slack,state=pending": 4, "receiver=slack,state=parked": 1,
		"receiver=webhook,state=pending": 1, "receiver=webhook,state=parked": 1},
		metricstest.Values(t, reg, "sweeper_notify_outbox_rows")); diff != "" {
		t.Errorf("rows by receiver and state (-want +got):\n%s", diff)
	}
}

// TestStateCollectorFoldsUnconfiguredProviders: the ledger's provider
// column is written by workflows, so operations of a provider with no
// block share the label "unconfigured" — a typo cannot mint series — and
// each configured provider reports its health.
func TestStateCollectorFoldsUnconfiguredProviders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at)
		VALUES ('s-1', 'wf', 'sim', 'send', repeat('a', 64), now() - interval '1 hour'),
		       ('t-1', 'wf', 'simm', 'send', repeat('a', 64), now() - interval '2 hours'),
		       ('t-2', 'wf', 'Sim ', 'send', repeat('a', 64), now() - interval '3 hours')`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	state := app.NewStateCollector(pool, ledger.Native(), []string{"sim"})
	reg.MustRegister(state)
	if err := state.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"provider=sim,status=pending": 1, "provider=unconfigured,status=pending": 2},
		metricstest.Values(t, reg, "sweeper_ledger_operations")); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
	oldest := metricstest.Values(t, reg, "sweeper_oldest_pending_seconds")
	if len(oldest) != 2 || oldest["provider=unconfigured"] < 3*3600-60 {
		t.Errorf("oldest pending = %v, want sim and unconfigured (about three hours)", oldest)
	}
	if diff := cmp.Diff(map[string]float64{"provider=sim": 1}, metricstest.Values(t, reg, "sweeper_provider_up")); diff != "" {
		t.Errorf("provider up (-want +got):\n%s", diff)
	}
}

// TestScrapesNeverQuery: the state gauges are read by the refresh loop on
// a connection of its own, so a flood of scrapes — 50 at once, 20 each —
// takes not one connection from the pool the lookups and /readyz share,
// and every scrape answers from memory with what the last refresh read.
func TestScrapesNeverQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at)
		SELECT 'flood-' || i, 'wf', 'sim', 'send', repeat('a', 64), now() - interval '1 hour' FROM generate_series(1, 1000) AS i`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	state := app.NewStateCollector(pool, ledger.Native(), []string{"sim"})
	reg.MustRegister(state)
	if got := metricstest.Values(t, reg, "sweeper_database_up"); got[""] != 0 {
		t.Errorf("before the first reading, sweeper_database_up = %v, want 0", got)
	}
	if err := state.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	acquired := pool.Stat().AcquireCount()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			for range 20 {
				mfs, err := reg.Gather()
				if err != nil {
					errs <- err
					return
				}
				for _, mf := range mfs {
					if mf.GetName() == "sweeper_ledger_operations" && mf.GetMetric()[0].GetGauge().GetValue() != 1000 {
						errs <- fmt.Errorf("sweeper_ledger_operations = %v, want 1000", mf.GetMetric()[0].GetGauge().GetValue())
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := pool.Stat().AcquireCount() - acquired; n != 0 {
		t.Errorf("1,000 scrapes acquired %d pool connections, want 0", n)
	}
	if got := metricstest.Values(t, reg, "sweeper_state_age_seconds"); len(got) != 1 || got[""] < 0 || got[""] > 60 {
		t.Errorf("sweeper_state_age_seconds = %v, want the seconds since the refresh", got)
	}

	// The loop reads again on its interval, and stops with its context.
	if _, err := pool.Exec(ctx, `DELETE FROM ledger.operations WHERE op_key LIKE 'flood-1%'`); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { state.Run(runCtx, 20*time.Millisecond, slog.New(slog.DiscardHandler)); close(done) }()
	testwait.Until(t, 10*time.Second, "the loop's next reading", func() bool {
		return metricstest.Values(t, reg, "sweeper_ledger_operations")["provider=sim,status=pending"] == 1000-112
	})
	stop()
	<-done
}
