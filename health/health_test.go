package health_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// TestDownForTheCluster: failures of five different operations in a row in one replica
// take the provider down for every replica; while down only one lookup in
// the cluster may ask (the probe), a failed probe backs the next one off,
// and an answered probe brings the provider up for all, with the time it
// was down counted.
func TestDownForTheCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	a := health.NewTracker(pool, "mailer", health.DefaultFailures, time.Minute)
	b := health.NewTracker(pool, "mailer", health.DefaultFailures, time.Minute)
	recovered := 0
	b.OnUp = func(context.Context) { recovered++ }
	ops := 0
	n := func() int { ops++; return ops }

	for i := range health.DefaultFailures - 1 {
		if err := a.Done(ctx, false, true, fmt.Sprintf("op-%d", n()), "HTTP 503"); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			// An answer in between starts the count again.
			if err := a.Done(ctx, false, false, "op-x", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st, _ := health.Read(ctx, pool, "mailer"); !st.Up {
		t.Fatalf("down after failures that were not in a row: %+v", st)
	}
	for range health.DefaultFailures {
		if err := a.Done(ctx, false, true, fmt.Sprintf("op-%d", n()), "HTTP 503"); err != nil {
			t.Fatal(err)
		}
	}
	st, err := health.Read(ctx, pool, "mailer")
	if err != nil || st.Up || st.LastError != "HTTP 503" {
		t.Fatalf("after %d failures in a row: %+v, %v; want down", health.DefaultFailures, st, err)
	}

	// Down: no probe is due yet, in either replica.
	if probe, wait, err := b.Allow(ctx); !errors.Is(err, health.ErrDown) || probe || wait < time.Second {
		t.Fatalf("Allow while down = %v, %s, %v; want to wait", probe, wait, err)
	}
	// Once due, one replica takes the probe, the other waits.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	probeA, _, errA := a.Allow(ctx)
	probeB, _, errB := b.Allow(ctx)
	if !probeA || errA != nil || probeB || !errors.Is(errB, health.ErrDown) {
		t.Fatalf("probe taken by a: %v %v, by b: %v %v; want exactly a", probeA, errA, probeB, errB)
	}
	// The probe fails: the next one is further off.
	if err := a.Done(ctx, true, true, "op-p", "timeout"); err != nil {
		t.Fatal(err)
	}
	var gap time.Duration
	if err := pool.QueryRow(ctx, `SELECT probe_at - now() FROM sweeper.provider_health`).Scan(&gap); err != nil {
		t.Fatal(err)
	}
	if gap < 9*time.Second || gap > 11*time.Second {
		t.Errorf("after a failed probe the next is %s away, want about 10s", gap)
	}

	// A probe answered: up for everyone, the downtime counted.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now() - interval '1 second', since = since - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	b.Forget() // b read the state within the second
	probe, _, err := b.Allow(ctx)
	if !probe || err != nil {
		t.Fatalf("b's probe: %v, %v", probe, err)
	}
	if err := b.Done(ctx, true, false, "op-q", ""); err != nil {
		t.Fatal(err)
	}
	st, err = health.Read(ctx, pool, "mailer")
	if err != nil || !st.Up || st.DownSeconds < 60 || recovered != 1 {
		t.Errorf("after an answered probe: %+v, %v, recovered %d; want up, a minute down counted, OnUp once", st, err, recovered)
	}
	time.Sleep(1100 * time.Millisecond) // a's cached state expires
	if probe, _, err := a.Allow(ctx); probe || err != nil {
		t.Errorf("a after recovery: %v, %v; want an ordinary lookup", probe, err)
	}
}

// TestOneOperationIsNoOutage: operations whose lookups always fail (the
// provider fails for those records alone) fail again and again; as long as
// they are fewer than outage_after different operations, the provider
// stays up for everyone else, and each operation's own budget ends it.
// Failures of outage_after different operations, with no answer in
// between, are an outage; an answer in between starts the count again.
func TestOneOperationIsNoOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	tr := health.NewTracker(pool, "mailer", health.DefaultFailures, time.Minute)
	for range 3 * health.DefaultFailures {
		for _, op := range []string{"op-broken", "op-other"} {
			if err := tr.Done(ctx, false, true, op, "HTTP 500"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st, err := health.Read(ctx, pool, "mailer"); err != nil || !st.Up {
		t.Fatalf("after two operations' failures: %+v, %v; want up", st, err)
	}
	// Two more operations fail, then one is answered: still up.
	for _, op := range []string{"op-3", "op-4"} {
		if err := tr.Done(ctx, false, true, op, "HTTP 503"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Done(ctx, false, false, "op-fine", ""); err != nil {
		t.Fatal(err)
	}
	if err := tr.Done(ctx, false, true, "op-5", "HTTP 503"); err != nil {
		t.Fatal(err)
	}
	if st, err := health.Read(ctx, pool, "mailer"); err != nil || !st.Up {
		t.Fatalf("an answer in between: %+v, %v; want up", st, err)
	}
	for i := range health.DefaultFailures - 1 {
		if err := tr.Done(ctx, false, true, fmt.Sprintf("op-next-%d", i), "HTTP 503"); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := health.Read(ctx, pool, "mailer"); err != nil || st.Up {
		t.Errorf("failures of %d different operations in a row: %+v, %v; want down", health.DefaultFailures, st, err)
	}
}

// TestLastErrorStoredInert: the error that takes a provider down is the
// provider's text; it is stored with its escape sequences and control
// characters made inert (and without NUL, which PostgreSQL refuses), so
// that no reader of the table prints them raw.
func TestLastErrorStoredInert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	tr := health.NewTracker(pool, "sms", health.DefaultFailures, time.Minute)
	hostile := "HTTP 503 \x1b]0;pwned\x07\x1b]52;c;eA==\x1b\\\x1b[2J\u009b31m\u202e\x00"
	for i := range health.DefaultFailures {
		if err := tr.Done(ctx, false, true, fmt.Sprintf("op-%d", i), hostile); err != nil {
			t.Fatal(err)
		}
	}
	st, err := health.Read(ctx, pool, "sms")
	if err != nil {
		t.Fatal(err)
	}
	want := `HTTP 503 \x1b]0;pwned\x07\x1b]52;c;eA==\x1b\\x1b[2J\u009b31m\u202e\x00`
	if st.Up || st.LastError != want {
		t.Errorf("up %v, last error %q; want down with %q", st.Up, st.LastError, want)
	}
}

// TestOnDownOncePerOutage: the provider going down runs OnDown in the one
// tracker whose report changed the state, once, with its failure; another
// replica's failures while it is down, and the same tracker's, run
// nothing. After it is up again, the next outage runs it again.
func TestOnDownOncePerOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	var downs []string
	a := health.NewTracker(pool, "pager", 2, time.Minute)
	b := health.NewTracker(pool, "pager", 2, time.Minute)
	a.OnDown = func(_ context.Context, detail string) { downs = append(downs, "a: "+detail) }
	b.OnDown = func(_ context.Context, detail string) { downs = append(downs, "b: "+detail) }
	fail := func(tr *health.Tracker, op, detail string) {
		t.Helper()
		if err := tr.Done(ctx, false, true, op, detail); err != nil {
			t.Fatal(err)
		}
	}
	fail(a, "op-1", "pager: HTTP 503")
	if len(downs) != 0 {
		t.Fatalf("down after one failure: %v", downs)
	}
	fail(a, "op-2", "pager: HTTP 502")
	fail(b, "op-3", "pager: HTTP 503")
	fail(b, "op-4", "pager: HTTP 503") // b reaches its count while already down
	fail(a, "op-5", "pager: HTTP 503")
	fail(a, "op-6", "pager: HTTP 503")
	if want := []string{"a: pager: HTTP 502"}; fmt.Sprint(downs) != fmt.Sprint(want) {
		t.Fatalf("OnDown ran %v, want %v", downs, want)
	}
	// A probe answers; the next outage is b's to report.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if probe, _, err := a.Allow(ctx); !probe || err != nil {
		t.Fatalf("probe %v %v", probe, err)
	}
	if err := a.Done(ctx, true, false, "op-p", ""); err != nil {
		t.Fatal(err)
	}
	fail(b, "op-7", "pager: dial tcp: connection refused")
	fail(b, "op-8", "pager: dial tcp: connection refused")
	if len(downs) != 2 || downs[1] != "b: pager: dial tcp: connection refused" {
		t.Errorf("OnDown ran %v, want b's second outage", downs)
	}
}

func TestCause(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ desc, detail, want string }{
		{"the lookup's own timeout", "mailer: no answer within lookup_timeout 10s: context deadline exceeded", "timeout"},
		{"a client timeout", `mailer: Get "https://x/": net/http: request canceled (Client.Timeout exceeded)`, "timeout"},
		{"a 503", "mailer: HTTP 503: upstream unavailable", "server_error"},
		{"a 408", "mailer: HTTP 408", "server_error"},
		{"a 429", "mailer: HTTP 429: slow down", "rate_limited"},
		{"refused", "mailer: dial tcp 10.0.0.1:443: connect: connection refused", "connection"},
		{"reset", "mailer: read: connection reset by peer", "connection"},
		{"cut off", "mailer: read body: unexpected EOF", "connection"},
		{"no such host", "mailer: dial tcp: lookup api.example: no such host", "connection"},
		{"a 5000-something that is no status", "mailer: HTTP 5000 records", "other"},
		{"anything else", "mailer: adapter panicked: boom", "other"},
	} {
		if got := health.Cause(c.detail); got != c.want {
			t.Errorf("%s: Cause(%q) = %q, want %q", c.desc, c.detail, got, c.want)
		}
	}
}

// TestReadUp: one read tells the providers down from the rest, a provider
// without a row among the rest.
func TestReadUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	tracker := health.NewTracker(pool, "mailer", 1, time.Minute)
	if err := tracker.Done(ctx, false, true, "op-1", "HTTP 503"); err != nil {
		t.Fatal(err)
	}
	up, err := health.ReadUp(ctx, pool, []string{"mailer", "sms"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"mailer": false, "sms": true}; !maps.Equal(up, want) {
		t.Errorf("ReadUp = %v, want %v", up, want)
	}
}
