package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// attemptsConfig is a provider whose records are attempts, not effects:
// a send it reports failed, one still scheduled, a charge since refunded.
const attemptsConfig = `
[database]
url = "postgres://unused"

[review]
default_owner = "U0DEFAULT1"
relookup_after = "10s"

[providers.sms]
kind = "sim"
simulated = true
stale_after = "10m"
lookup_timeout = "1s"
lookup_budget = "5s"
rate_limit = 10000.0
concurrency = 10
in_flight_for = "2h"
[[providers.sms.rules]]
match = "failed-*"
outcome = "failed"
[[providers.sms.rules]]
match = "scheduled-*"
outcome = "in_flight"
[[providers.sms.rules]]
match = "refunded-*"
outcome = "reversed"
[[providers.sms.rules]]
match = "found-*"
outcome = "found"
`

// TestAttemptIsNotTheEffect: a record the provider reports failed or
// reversed is never done — a ticket says what the provider reports — and
// one still in flight is neither done nor a ticket while in_flight_for
// lasts (it stays pending, asked again later), then an in_flight ticket
// that is looked up again on the schedule. Through the River workers and
// the --once runner alike.
func TestAttemptIsNotTheEffect(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, b *bundle) {
		t.Helper()
		for key, want := range map[string]proof.Reason{"failed-1": proof.ReasonProviderFailed, "refunded-1": proof.ReasonProviderReversed} {
			if op := b.status(t, key); op.Status != ledger.StatusReview || op.ProviderRecordID != "" {
				t.Errorf("%s: %s with record %q, want review without one", key, op.Status, op.ProviderRecordID)
			}
			tk, ev := b.ticketOf(t, key)
			if tk.Reason != want || len(ev.Records) != 1 || ev.Records[0].Status == "" {
				t.Errorf("%s: ticket %s with records %+v, want %s showing the provider's status", key, tk.Reason, ev.Records, want)
			}
		}
		if op := b.status(t, "found-1"); op.Status != ledger.StatusDone {
			t.Errorf("found-1: %s, want done", op.Status)
		}
		if op := b.status(t, "scheduled-young"); op.Status != ledger.StatusPending {
			t.Errorf("scheduled-young: %s, want pending while in_flight_for lasts", op.Status)
		}
		if op := b.status(t, "scheduled-old"); op.Status != ledger.StatusReview {
			t.Errorf("scheduled-old: %s, want review past in_flight_for", op.Status)
		}
		tk, _ := b.ticketOf(t, "scheduled-old")
		relooks := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE id = $1 AND relookup_at IS NOT NULL`, tk.ID)
		if tk.Reason != proof.ReasonInFlight || relooks != 1 {
			t.Errorf("scheduled-old: ticket %s, re-lookup scheduled %d; want in_flight, looked up again", tk.Reason, relooks)
		}
	}
	claimAll := func(t *testing.T, b *bundle) {
		for _, k := range []string{"failed-1", "refunded-1", "found-1", "scheduled-young"} {
			b.claim(t, k, "sms", time.Hour)
		}
		b.claim(t, "scheduled-old", "sms", 3*time.Hour)
	}

	t.Run("river", func(t *testing.T) {
		t.Parallel()
		b := setup(t, attemptsConfig, nil)
		claimAll(t, b)
		client := b.startClient(t)
		b.sweep(t, client)
		// scheduled-young stays pending, held by a job that waits to ask
		// again: wait for the others and for no job to be running.
		testwait.Until(t, 30*time.Second, "the other operations settled, no job running", func() bool {
			return b.count(t, `SELECT count(*) FROM ledger.operations WHERE status = 'pending' AND op_key <> 'scheduled-young'`) == 0 &&
				b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE state = 'running'`) == 0
		})
		check(t, b)
		if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'lookup_batch' AND state IN ('scheduled', 'available')
			AND args->'ops' @> '[{"id": `+fmt.Sprint(b.status(t, "scheduled-young").ID)+`}]'`); n != 1 {
			t.Errorf("%d lookup jobs hold scheduled-young to ask again, want 1", n)
		}
	})
	t.Run("once", func(t *testing.T) {
		t.Parallel()
		b := setup(t, attemptsConfig, nil)
		claimAll(t, b)
		sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Done != 1 || sum.Tickets[proof.ReasonInFlight] != 1 || sum.Tickets[proof.ReasonProviderFailed] != 1 {
			t.Errorf("summary %+v", sum)
		}
		check(t, b)
	})
}
