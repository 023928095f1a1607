package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

// ackTimeoutConfig is escalationConfig with review.ack_timeout 20m, which
// every level inherits.
var ackTimeoutConfig = strings.Replace(escalationConfig, "max_repeats = 2\n", "max_repeats = 2\nack_timeout = \"20m\"\n", 1)

// raceEscalation runs four escalation passes at once, two on each of two
// replicas, and adds up what they did.
func raceEscalation(t *testing.T, replicas ...*app.App) app.EscalationSummary {
	t.Helper()
	var (
		mu    sync.Mutex
		total = summary(nil, nil)
		wg    sync.WaitGroup
	)
	for _, s := range append(replicas, replicas...) {
		wg.Go(func() {
			sum, err := s.EscalateOnce(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for l, n := range sum.Escalated {
				total.Escalated[l] += n
			}
			total.Repeats += sum.Repeats
			total.Held += sum.Held
			total.AckTimedOut += sum.AckTimedOut
			total.Errors += sum.Errors
		})
	}
	wg.Wait()
	return total
}

// TestAckTimeoutOnceAcrossReplicas: acknowledge → timeout → one re-alert,
// with two replicas escalating at once. An acknowledgement below the top
// lapses after its level's timeout (the deadline untouched, so the level
// step still comes when it passes); one at the top lapses likewise, and
// the repeats it had stopped resume: one "ack_timed_out" event and one
// outbox row per lapse, never a second.
func TestAckTimeoutOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setupEscalation(t, ackTimeoutConfig, nil)
	const key = "lost-ack-timeout"
	id := b.openTickets(t, "sim", key)[key]
	other := b.replica(t)
	store := review.NewStore(b.pool, ledger.Native(), app.Policy(b.sweeper.Config))
	ctx := context.Background()

	b.passDue(t, id)
	if got := raceEscalation(t, b.sweeper, other); got.Escalated[1] != 1 {
		t.Fatalf("to level 1: %+v", got)
	}
	// Below the top: the acknowledgement lapses after 20m, the 2h window
	// runs on.
	if _, err := store.Acknowledge(ctx, id, "U0SECOND01", 0); err != nil {
		t.Fatal(err)
	}
	acked := b.ticket(t, id)
	b.clock.set(acked.AcknowledgedAt.Add(19 * time.Minute))
	if got := raceEscalation(t, b.sweeper, other); got.AckTimedOut != 0 || got.Escalated[2] != 0 {
		t.Fatalf("before the timeout: %+v, want nothing", got)
	}
	b.clock.set(acked.AcknowledgedAt.Add(21 * time.Minute))
	if got := raceEscalation(t, b.sweeper, other); got.AckTimedOut != 1 || got.Errors != 0 {
		t.Fatalf("level 1 past the timeout, four passes on two replicas: %+v, want one ack timeout", got)
	}
	lapsed := b.ticket(t, id)
	if lapsed.Acknowledged || lapsed.AckLapses != 1 || lapsed.Level != 1 || !lapsed.Deadline.Equal(acked.Deadline) ||
		lapsed.Version != acked.Version+1 {
		t.Errorf("after the level-1 timeout: %+v (before %+v)", lapsed.EscalationState, acked.EscalationState)
	}
	if got := raceEscalation(t, b.sweeper, other); got.AckTimedOut != 0 {
		t.Errorf("again: %+v, want nothing (once)", got)
	}

	b.passDue(t, id)
	if got := raceEscalation(t, b.sweeper, other); got.Escalated[2] != 1 {
		t.Fatalf("to the top: %+v", got)
	}
	// At the top: held while acknowledged, until the timeout.
	if _, err := store.Acknowledge(ctx, id, "U0ONCALL01", 0); err != nil {
		t.Fatal(err)
	}
	acked = b.ticket(t, id)
	b.clock.set(acked.AcknowledgedAt.Add(19 * time.Minute))
	if got := raceEscalation(t, b.sweeper, other); got.AckTimedOut != 0 || got.Repeats != 0 {
		t.Fatalf("top, before the timeout: %+v, want nothing", got)
	}
	b.clock.set(acked.AcknowledgedAt.Add(20*time.Minute + time.Second))
	now := b.clock.Now()
	if got := raceEscalation(t, b.sweeper, other); got.AckTimedOut != 1 || got.Repeats != 0 || got.Errors != 0 {
		t.Fatalf("top past the timeout, four passes on two replicas: %+v, want one ack timeout", got)
	}
	lapsed = b.ticket(t, id)
	if lapsed.Acknowledged || lapsed.AckLapses != 2 || lapsed.Level != 2 || !lapsed.Deadline.Equal(now.Add(30*time.Minute)) {
		t.Errorf("after the top timeout: %+v, want unacknowledged, next step at %v", lapsed.EscalationState, now.Add(30*time.Minute))
	}
	d := b.lastDetails(t, id)
	if d["acknowledged_by"] != "U0ONCALL01" || d["level"] != float64(2) || d["timeout_seconds"] != float64(1200) || d["owner"] != "U0ONCALL01" {
		t.Errorf("ack_timed_out details %v", d)
	}
	// Escalation resumed: the repeats, then the final step.
	for _, want := range []func(*app.EscalationSummary){
		func(s *app.EscalationSummary) { s.Repeats = 1 },
		func(s *app.EscalationSummary) { s.Repeats = 1 },
	} {
		b.passDue(t, id)
		got := raceEscalation(t, b.sweeper, other)
		if diff := cmp.Diff(summary(nil, want), got); diff != "" {
			t.Errorf("after the timeout (-want +got):\n%s", diff)
		}
	}
	want := []string{
		fmt.Sprintf("opened ticket:%d:opened", id),
		fmt.Sprintf("escalated ticket:%d:escalated:1", id),
		fmt.Sprintf("acknowledged ticket:%d:acknowledged:1", id),
		fmt.Sprintf("ack_timed_out ticket:%d:ack_timed_out:1", id),
		fmt.Sprintf("escalated ticket:%d:escalated:2", id),
		fmt.Sprintf("acknowledged ticket:%d:acknowledged:2:1", id),
		fmt.Sprintf("ack_timed_out ticket:%d:ack_timed_out:2", id),
		fmt.Sprintf("escalated ticket:%d:repeat:2:1", id),
		fmt.Sprintf("escalated ticket:%d:repeat:2:2", id),
	}
	if diff := cmp.Diff(want, b.eventKeys(t, id)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE ticket_id = $1 AND kind = 'ack_timed_out'`, id); n != 2 {
		t.Errorf("%d ack_timed_out outbox rows, want 2 (one re-alert per lapse)", n)
	}
}

// TestAckTimeoutOff: without review.ack_timeout an acknowledgement at the
// top holds for ever, as before.
func TestAckTimeoutOff(t *testing.T) {
	t.Parallel()
	b := setupEscalation(t, escalationConfig, nil)
	const key = "lost-ack-no-timeout"
	id := b.openTickets(t, "sim", key)[key]
	store := review.NewStore(b.pool, ledger.Native(), app.Policy(b.sweeper.Config))
	for range 2 {
		b.passDue(t, id)
		b.escalateOnce(t)
	}
	if _, err := store.Acknowledge(context.Background(), id, "U0ONCALL01", 0); err != nil {
		t.Fatal(err)
	}
	b.clock.set(b.ticket(t, id).AcknowledgedAt.Add(1000 * time.Hour))
	if got := b.escalateOnce(t); got.AckTimedOut != 0 || got.Held != 1 {
		t.Errorf("no ack timeout, 1000h on: %+v, want held", got)
	}
	if tk := b.ticket(t, id); !tk.Acknowledged {
		t.Errorf("the acknowledgement lapsed without a timeout: %+v", tk.EscalationState)
	}
}
