package health_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestDownUntilTheTimeGiven: a provider that says it refuses everyone until
// a time (a quota of the day spent) is down for the cluster at once — one
// report, not outage_after operations — and no probe asks it before that
// time, however far (past the probe backoff's minute); the OnDown of the
// process that took it down runs once. A second report while down keeps
// the later time; the first probe answered after it brings it up.
func TestDownUntilTheTimeGiven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	a := health.NewTracker(pool, "xero", health.DefaultFailures, time.Minute)
	b := health.NewTracker(pool, "xero", health.DefaultFailures, time.Minute)
	downs := 0
	a.OnDown = func(context.Context, string) { downs++ }
	b.OnDown = func(context.Context, string) { downs++ }

	until := time.Now().Add(10 * time.Hour)
	if err := a.DownUntil(ctx, until, "HTTP 429: the daily call limit is reached"); err != nil {
		t.Fatal(err)
	}
	st, err := health.Read(ctx, pool, "xero")
	if err != nil || st.Up || st.LastError != "HTTP 429: the daily call limit is reached" {
		t.Fatalf("after one report: %+v, %v; want down", st, err)
	}
	if d := st.ProbeAt.Sub(until); d < -time.Second || d > time.Second {
		t.Errorf("next probe at %s, want the time given, %s", st.ProbeAt, until)
	}
	if probe, wait, err := b.Allow(ctx); !errors.Is(err, health.ErrDown) || probe || wait < time.Second {
		t.Fatalf("Allow before the time given = %v, %s, %v; want to wait", probe, wait, err)
	}

	// Another replica's report, with an earlier time: the later stands,
	// and it took nothing down.
	if err := b.DownUntil(ctx, time.Now().Add(time.Hour), "HTTP 429"); err != nil {
		t.Fatal(err)
	}
	if st, _ := health.Read(ctx, pool, "xero"); st.ProbeAt.Before(until.Add(-time.Second)) {
		t.Errorf("an earlier time moved the probe to %s, before %s", st.ProbeAt, until)
	}
	// A later one moves it.
	later := until.Add(2 * time.Hour)
	if err := b.DownUntil(ctx, later, "HTTP 429"); err != nil {
		t.Fatal(err)
	}
	if st, _ := health.Read(ctx, pool, "xero"); st.ProbeAt.Before(later.Add(-time.Second)) {
		t.Errorf("a later time left the probe at %s, want %s", st.ProbeAt, later)
	}
	if downs != 1 {
		t.Errorf("OnDown ran %d times, want once: one outage", downs)
	}

	// The time passes: one probe asks, is answered, and the provider is up.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	probe, _, err := a.Allow(ctx)
	if !probe || err != nil {
		t.Fatalf("Allow once the time passed = %v, %v; want the probe", probe, err)
	}
	if err := a.Done(ctx, true, false, "op-1", ""); err != nil {
		t.Fatal(err)
	}
	if st, _ := health.Read(ctx, pool, "xero"); !st.Up {
		t.Errorf("after an answered probe: %+v, want up", st)
	}
}
