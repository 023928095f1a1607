package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/ledgertables"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// TestMaxOutageEndsInTickets: 500 stale operations of a provider that
// answers 503 to everything. Its failures take it down for the cluster and
// its lookup jobs, holding the 500, wait paced. Once it has been down for
// its max_outage (two seconds here), the next sweep moves all 500 to
// review in one step — lookup_failed tickets saying for how long it was
// down, one opened event and one alert each, in one transaction, without
// asking the provider — and the incident counts them. The lookup jobs
// that held them then write nothing. When the provider answers again, the
// scheduled re-lookup settles every one as done.
func TestMaxOutageEndsInTickets(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		const n = 500
		ctx := context.Background()
		var down atomic.Bool
		down.Store(true)
		var asked atomic.Int64
		flaky := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
			func(_ context.Context, q providers.Query) ([]providers.Record, error) {
				asked.Add(1)
				if down.Load() {
					return nil, providers.Transient(fmt.Errorf("HTTP 503"))
				}
				return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
			},
		}}
		const maxOutage = 2 * time.Second
		p := providers.NewProvider("longdown", "fake", flaky, providers.Limits{
			StaleAfter: 10 * time.Minute, LookupTimeout: 2 * time.Second, LookupBudget: 3 * time.Second,
			RateLimit: 1000, Concurrency: 10, OutageAfter: 5, MaxOutage: maxOutage,
		})
		b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"longdown": p})
		b.sweeper.TrackHealth()
		if _, err := b.pool.Exec(ctx, b.insert([]col{{"op_key", "'long-' || lpad(i::text, 4, '0')"}, {"workflow", "'billing'"},
			{"provider", "'longdown'"}, {"action", "'send_email'"}, {"recipient", "'jane.doe@example.com'"},
			{"payload_hash", "repeat('a', 64)"}, {"first_attempt_at", "now() - interval '1 hour' - i * interval '1 second'"}},
			"FROM generate_series(1, $1) i"), n); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for i := 1; i <= n; i++ {
			keys = append(keys, fmt.Sprintf("long-%04d", i))
		}

		client := b.startClient(t)
		b.sweep(t, client)
		testwait.Until(t, 30*time.Second, "the provider down for the cluster", func() bool {
			return b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = 'longdown' AND state = 'down'`) == 1
		})
		if got := b.count(t, `SELECT count(*) FROM sweeper.tickets`); got != 0 {
			t.Fatalf("%d tickets while the provider is down, before max_outage; want none", got)
		}
		testwait.Until(t, 30*time.Second, "max_outage to pass", func() bool {
			return b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = 'longdown' AND since <= now() - $1::interval`, maxOutage) == 1
		})
		held := b.count(t, `SELECT count(*) FROM sweeper.lookup_claims`)
		if held == 0 {
			t.Fatal("no operation is held by a lookup job: the step would not be tried on claimed operations")
		}
		askedBefore := asked.Load()

		b.sweep(t, client)
		testwait.Until(t, 30*time.Second, "the waiting operations moved to review", func() bool {
			return b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:provider} = 'longdown' AND {c:status} = {w:review}`)) == n
		})
		b.waitSettled(t, keys, time.Minute) // the lookup jobs that held them end

		if got := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE reason = 'lookup_failed' AND evidence->>'detail' LIKE '%max_outage%'`); got != n {
			t.Errorf("%d lookup_failed tickets saying max_outage, want %d", got, n)
		}
		if got := b.count(t, `SELECT count(DISTINCT created_at) FROM sweeper.tickets`); got != 1 {
			t.Errorf("the tickets were opened by %d transactions, want one step", got)
		}
		if got := b.count(t, `SELECT count(*) FROM sweeper.ticket_events WHERE kind = 'opened'`); got != n {
			t.Errorf("%d opened events, want %d: one per ticket, none from the lookup jobs that held them", got, n)
		}
		if got := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE ticket_id IS NOT NULL`); got != n {
			t.Errorf("%d ticket alerts queued, want %d", got, n)
		}
		// One provider, one reason, one moment: what the alert grouping makes
		// one group of (slack.group_wait).
		if got := b.count(t, b.sql(`SELECT count(*) FROM (SELECT DISTINCT {c:o.provider}, t.reason FROM sweeper.tickets t
		JOIN {T} o ON {c:o.id} = t.operation_id) g`)); got != 1 {
			t.Errorf("the tickets fall in %d (provider, reason) groups, want one", got)
		}
		if got := asked.Load() - askedBefore; got > int64(held) {
			t.Errorf("the provider was asked %d times during the step; want only a probe or so", got)
		}
		var incident int64
		if err := b.pool.QueryRow(ctx, `SELECT id FROM sweeper.incidents WHERE provider = 'longdown' AND ended_at IS NULL`).Scan(&incident); err != nil {
			t.Fatal(err)
		}
		in, err := notify.ReadIncident(ctx, b.pool, b.sweeper.Tickets(), incident)
		if err != nil {
			t.Fatal(err)
		}
		if in.MovedToReview != n || in.Review != n {
			t.Errorf("incident: %d moved to review, %d need review; want %d both", in.MovedToReview, in.Review, n)
		}
		if text := message.IncidentMessage(in).Text; !strings.Contains(text, "500 moved to review after max_outage (2s)") {
			t.Errorf("the incident's message does not say how many moved: %q", text)
		}

		// The provider answers again: the re-lookup of a lookup_failed ticket
		// (scheduled, made due here) probes it, brings it up, and every ticket
		// is looked up again and settles by itself.
		down.Store(false)
		if _, err := b.pool.Exec(ctx, `UPDATE sweeper.tickets SET relookup_at = now()`); err != nil {
			t.Fatal(err)
		}
		if _, err := b.pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now()`); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, time.Minute, "every operation settled by the re-lookups", func() bool {
			if _, err := b.sweeper.RelookupOnce(ctx); err != nil {
				t.Fatal(err)
			}
			return b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:provider} = 'longdown' AND {c:status} = {w:done}`)) == n
		})
		if got := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE state = 'resolved'`); got != n {
			t.Errorf("%d tickets resolved, want %d", got, n)
		}
		if got := b.count(t, `SELECT count(*) FROM sweeper.provider_health WHERE provider = 'longdown' AND state = 'up'`); got != 1 {
			t.Error("the provider is not up again")
		}
	})
}

// TestSweepOnceMovesALongOutage: `sweep --once` moves the waiting
// operations of a provider down longer than its max_outage to review
// before it scans, and says so; those of a provider down for less, or
// whose max_outage is 0 (never), are left pending for later, as before;
// an operation not yet stale is no waiting one.
func TestSweepOnceMovesALongOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	holds := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
		},
	}}
	provider := func(name string, maxOutage time.Duration) *providers.Provider {
		return providers.NewProvider(name, "fake", holds, providers.Limits{
			StaleAfter: 10 * time.Minute, LookupTimeout: time.Second, LookupBudget: 3 * time.Second,
			RateLimit: 1000, Concurrency: 10, OutageAfter: 5, MaxOutage: maxOutage,
		})
	}
	b := setup(t, baseConfig, map[string]*providers.Provider{
		"long": provider("long", time.Hour), "short": provider("short", 3*time.Hour), "never": provider("never", 0),
	})
	b.sweeper.TrackHealth()
	if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.provider_health (provider, state, since, probe_at, last_error)
		SELECT p, 'down', now() - interval '2 hours', now() + interval '1 hour', 'HTTP 503' FROM unnest(ARRAY['long', 'short', 'never']) p`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"long", "short", "never"} {
		for i := range 3 {
			b.claim(t, fmt.Sprintf("%s-%d", name, i), name, stale)
		}
	}
	young := b.claim(t, "long-young", "long", time.Minute)

	sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{MaxPaced: time.Second})
	if err != nil || sum.MovedAfterMaxOutage != 3 || sum.Tickets["lookup_failed"] != 3 || sum.LeftPending != 6 || sum.Errors != 0 {
		t.Fatalf("sweep --once: %+v, %v; want long's 3 moved to review, short's and never's 6 left pending", sum, err)
	}
	for i := range 3 {
		tk, ev := b.ticketOf(t, fmt.Sprintf("long-%d", i))
		if tk.Reason != "lookup_failed" || !strings.Contains(ev.Detail, "was down for 2h") || !strings.Contains(ev.Detail, "max_outage 1h0m0s") ||
			!strings.Contains(ev.Detail, "HTTP 503") || len(ev.Records) != 0 {
			t.Errorf("long-%d: %s %q; want lookup_failed saying for how long the provider was down, and why", i, tk.Reason, ev.Detail)
		}
	}
	if op := b.status(t, young.OpKey); op.Status != "pending" {
		t.Errorf("%s, not yet stale, is %s; want pending", young.OpKey, op.Status)
	}
	if got := b.count(t, `SELECT count(*) FROM ledger.operations WHERE provider IN ('short', 'never') AND status = 'pending'`); got != 6 {
		t.Errorf("%d of short's and never's 6 operations pending", got)
	}
}
