package logs

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestOutageSaysTheDatabaseOnce: River's warnings and errors while the
// probe finds the database unreachable are written at DEBUG — the first
// ones too, held back until the probe has looked — and as they are
// otherwise: when a probe begun after them finds the database, or when
// no answer comes within the hold. Lines below WARN always pass.
func TestOutageSaysTheDatabaseOnce(t *testing.T) {
	t.Parallel()
	var tm timers
	clock := time.Date(2026, 12, 4, 14, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	o := newOutage(2*time.Second, now, tm.after)
	var out bytes.Buffer
	river := slog.New(o.Handler(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))).With("component", "river")
	refused := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	asked := func() bool {
		select {
		case <-o.Asks():
			return true
		default:
			return false
		}
	}

	// The outage's first sign: held, and the probe asked.
	river.Error("producer: Error fetching jobs", "error", refused)
	if got := lines(t, &out); len(got) != 0 || !asked() {
		t.Fatalf("the first error: written %+v, probe asked %v; want held and the probe asked", got, !asked())
	}
	// A probe begun before the line does not answer for it.
	if first := o.Set(true, clock.Add(-time.Second)); !first.IsZero() || out.Len() != 0 {
		t.Fatalf("an older probe's answer released %q (first %v)", out.String(), first)
	}
	clock = clock.Add(300 * time.Millisecond)
	if first := o.Set(false, clock); !first.Equal(clock.Add(-300*time.Millisecond)) || !o.Down() {
		t.Errorf("unreachable: first sign %v, down %v; want the held line's time, down", first, o.Down())
	}
	river.Error("leadership.Elector: Error attempting reelection", "error", refused, "attempt", 1)
	river.Warn("leadership.Elector: Current leader stepping down")
	river.Info("still says what it does")
	got := lines(t, &out)
	want := []string{"DEBUG producer: Error fetching jobs", "DEBUG leadership.Elector: Error attempting reelection",
		"DEBUG leadership.Elector: Current leader stepping down", "INFO still says what it does"}
	if len(got) != len(want) {
		t.Fatalf("lines during the outage = %+v, want %v", got, want)
	}
	for i, l := range got {
		if l.Level+" "+l.Msg != want[i] {
			t.Errorf("line %d = %s %s, want %s", i, l.Level, l.Msg, want[i])
		}
	}
	if asked() {
		t.Error("the probe was asked while the outage is known")
	}

	// Back: an error is held until a probe begun after it answers.
	out.Reset()
	o.Set(true, clock)
	clock = clock.Add(time.Second)
	river.Error("jobExecutor: Job errored", "error", errors.New("boom"))
	if out.Len() != 0 || !asked() {
		t.Fatalf("an error with the database reachable: written %q; want held and the probe asked", out.String())
	}
	o.Set(true, clock.Add(10*time.Millisecond))
	if got := lines(t, &out); len(got) != 1 || got[0].Level != "ERROR" || got[0].Error != "boom" {
		t.Fatalf("after the probe found the database: %+v, want the error as it was", got)
	}

	// No answer within the hold: written as it is.
	out.Reset()
	river.Error("notifier.Notifier: Error running listener", "error", refused)
	clock = clock.Add(2 * time.Second)
	tm.fire()
	if got := lines(t, &out); len(got) != 1 || got[0].Level != "ERROR" {
		t.Fatalf("after the hold without an answer: %+v, want the error as it was", got)
	}

	// At INFO, what is lowered is not written at all.
	out.Reset()
	quiet := slog.New(o.Handler(slog.NewJSONHandler(&out, nil)))
	o.Set(false, clock)
	quiet.Error("producer: Error fetching jobs", "error", refused)
	if out.Len() != 0 {
		t.Errorf("a lowered line at level INFO: %s", out.String())
	}
}
