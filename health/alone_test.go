package health_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestFailingAloneIsNoOutage: operations the provider fails while it
// answers others fail alone, for every replica. Replica a sees six
// operations fail, two at a time, each pair followed by an answer to
// another operation. Then replica b — another process, which never saw an
// answer — sees only those six fail, again and again (their tickets'
// re-lookups): the provider stays up. Fresh operations failing in b with
// no answer in between are the provider failing for everyone: it goes
// down, once. A probe with an operation failing alone that fails says
// nothing (the next probe may ask at once, no backoff); a probe with any
// other that fails backs off. An operation that failed during the outage
// does not fail alone when the probe brings the provider up; one failing
// alone that is answered fails alone no more.
func TestFailingAloneIsNoOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	a := health.NewTracker(pool, "mailer", health.DefaultFailures, time.Minute)
	b := health.NewTracker(pool, "mailer", health.DefaultFailures, time.Minute)
	downs := 0
	b.OnDown = func(context.Context, string) { downs++ }
	done := func(tr *health.Tracker, probe, failed bool, op string) {
		t.Helper()
		if err := tr.Done(ctx, probe, failed, op, "mailer: HTTP 500"); err != nil {
			t.Fatal(err)
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
	var bad []string
	for i := range 6 {
		bad = append(bad, fmt.Sprintf("bad-%d", i))
	}
	for i := 0; i < len(bad); i += 2 {
		done(a, false, true, bad[i])
		done(a, false, true, bad[i+1])
		done(a, false, false, fmt.Sprintf("ok-%d", i))
	}
	if !up() {
		t.Fatal("down while the provider answered between failures")
	}
	for round := range 3 {
		for _, op := range bad {
			done(b, false, true, op)
		}
		if !up() {
			t.Fatalf("round %d: down after failures of %d operations each failing alone; want up", round, len(bad))
		}
	}

	for i := range health.DefaultFailures {
		done(b, false, true, fmt.Sprintf("fresh-%d", i))
	}
	if up() || downs != 1 {
		t.Fatalf("after %d fresh operations failed in a row: up %v, OnDown ran %d time(s); want down, once", health.DefaultFailures, up(), downs)
	}

	// A probe with an operation failing alone that fails frees the turn
	// as it is.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if probe, _, err := b.Allow(ctx); !probe || err != nil {
		t.Fatalf("b's probe: %v, %v", probe, err)
	}
	done(b, true, true, bad[0])
	if probe, _, err := a.Allow(ctx); !probe || err != nil {
		t.Fatalf("after a probe failing alone failed, a's probe = %v, %v; want the turn at once", probe, err)
	}
	done(a, true, true, "fresh-0")
	if probe, _, err := b.Allow(ctx); probe || !errors.Is(err, health.ErrDown) {
		t.Fatalf("after a probe failed: %v, %v; want the next probe backed off", probe, err)
	}
	var gap time.Duration
	if err := pool.QueryRow(ctx, `SELECT probe_at - now() FROM sweeper.provider_health`).Scan(&gap); err != nil {
		t.Fatal(err)
	}
	if gap < 9*time.Second {
		t.Errorf("after a failed probe the next is %s away, want about 10s", gap)
	}

	// A request sent before the outage fails during it; the probe that
	// brings the provider up is no answer it failed alone beside.
	done(b, false, true, "straggler")
	if _, err := pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	b.Forget()
	if probe, _, err := b.Allow(ctx); !probe || err != nil {
		t.Fatalf("b's second probe: %v, %v", probe, err)
	}
	done(b, true, false, "fresh-1")
	if !up() {
		t.Fatal("an answered probe did not bring the provider up")
	}
	marked := func(op string) bool {
		t.Helper()
		var marked bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM sweeper.provider_lone_failures WHERE op_key = $1)`, op).Scan(&marked); err != nil {
			t.Fatal(err)
		}
		return marked
	}
	if marked("straggler") {
		t.Error("an operation that failed during the outage fails alone once a probe is answered")
	}

	// Answered, an operation fails alone no more.
	done(a, false, false, bad[0])
	if marked(bad[0]) {
		t.Errorf("%s still fails alone after the provider answered it", bad[0])
	}
	if !marked(bad[1]) {
		t.Errorf("%s no longer fails alone, but was never answered", bad[1])
	}
}
