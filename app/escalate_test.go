package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// escalationConfig is baseConfig with two escalation levels after the
// first owner's 1h window, re-alerts every 30m at the top, at most two.
var escalationConfig = strings.Replace(baseConfig, "window = \"1h\"\n",
	"window = \"1h\"\nrepeat_every = \"30m\"\nmax_repeats = 2\n", 1) + `
[[review.escalation]]
owner = "U0SECOND01"
priority = "high"
window = "2h"

[[review.escalation]]
owner = "U0ONCALL01"
priority = "urgent"
window = "4h"
`

// testClock is a clock a test moves by hand; every App of a test
// reads the same one.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.set(time.Now())
	return c
}

func (c *testClock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// set moves the clock to at, to the database's precision, so that a
// deadline read back compares exactly.
func (c *testClock) set(at time.Time) { c.ns.Store(at.Truncate(time.Microsecond).UnixNano()) }

// escalationBundle is a test database with tickets opened through a real
// sweep, and a clock the test controls.
type escalationBundle struct {
	*bundle
	clock *testClock
	fakes map[string]*providers.Provider
}

func setupEscalation(t *testing.T, cfgText string, fakes map[string]*providers.Provider) *escalationBundle {
	t.Helper()
	return setupEscalationOn(t, ledgertables.Native, cfgText, fakes)
}

// setupEscalationOn is setupEscalation on the ledger table lt.
func setupEscalationOn(t *testing.T, lt ledgertables.Table, cfgText string, fakes map[string]*providers.Provider) *escalationBundle {
	t.Helper()
	b := &escalationBundle{bundle: setupOn(t, lt, cfgText, fakes), clock: newTestClock(), fakes: fakes}
	b.sweeper.Now = b.clock.Now
	return b
}

// replica wires another App on the same database and clock.
func (b *escalationBundle) replica(t *testing.T) *app.App {
	t.Helper()
	r := b.bundle.replica(t, b.fakes).sweeper
	r.Now = b.clock.Now
	return r
}

// openTickets claims keys (first attempted an hour ago), runs one sweep
// through a River client and returns each key's ticket id.
func (b *escalationBundle) openTickets(t *testing.T, provider string, keys ...string) map[string]int64 {
	t.Helper()
	for _, k := range keys {
		b.claim(t, k, provider, stale)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, keys, 30*time.Second)
	ids := map[string]int64{}
	for _, k := range keys {
		tk, _ := b.ticketOf(t, k)
		ids[k] = tk.ID
	}
	return ids
}

func (b *escalationBundle) ticket(t *testing.T, id int64) review.EscalationTicket {
	t.Helper()
	tk, err := b.sweeper.Reviews().EscalationTicket(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// passDue moves the clock a second past ticket id's deadline.
func (b *escalationBundle) passDue(t *testing.T, id int64) {
	t.Helper()
	b.clock.set(b.ticket(t, id).Deadline.Add(time.Second))
}

func (b *escalationBundle) escalateOnce(t *testing.T) app.EscalationSummary {
	t.Helper()
	sum, err := b.sweeper.EscalateOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// eventKeys lists ticket id's events as "kind key", oldest first.
func (b *escalationBundle) eventKeys(t *testing.T, id int64) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		`SELECT kind || ' ' || dedupe_key FROM sweeper.ticket_events WHERE ticket_id = $1 ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// lastDetails decodes the details of ticket id's newest event.
func (b *escalationBundle) lastDetails(t *testing.T, id int64) map[string]any {
	t.Helper()
	var raw []byte
	if err := b.pool.QueryRow(context.Background(),
		`SELECT details FROM sweeper.ticket_events WHERE ticket_id = $1 ORDER BY id DESC LIMIT 1`, id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func summary(escalated map[int]int, f func(*app.EscalationSummary)) app.EscalationSummary {
	s := app.EscalationSummary{Escalated: escalated}
	if s.Escalated == nil {
		s.Escalated = map[int]int{}
	}
	if f != nil {
		f(&s)
	}
	return s
}

// TestEscalationWalksEveryLevel takes one ticket through the policy with
// EscalateOnce: each level's owner, priority and deadline, the repeats up
// to the cap, the final step, then nothing — one step and one event each,
// whatever passes are repeated or how far the clock jumps.
func TestEscalationWalksEveryLevel(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		b := setupEscalationOn(t, lt, escalationConfig, nil)
		const key = "lost-walk"
		id := b.openTickets(t, "sim", key)[key]
		opBefore := b.status(t, key)

		if got := b.escalateOnce(t); got.Examined != 0 {
			t.Fatalf("before the deadline: %+v", got)
		}
		start := b.ticket(t, id)
		if start.Level != 0 || start.Owner != b.owner("U0BILLING1") || start.Priority != "normal" {
			t.Fatalf("new ticket %+v", start)
		}

		// A jump of days still takes one step: the new deadline counts from now.
		b.clock.set(start.Deadline.Add(100 * time.Hour))
		steps := []struct {
			desc      string
			want      app.EscalationSummary
			level     int
			owner     string
			priority  string
			window    time.Duration // from the clock; 0: the deadline stays
			repeats   int
			exhausted bool
			event     string
		}{
			{"to level 1", summary(map[int]int{1: 1}, nil), 1, "U0SECOND01", "high", 2 * time.Hour, 0, false,
				fmt.Sprintf("escalated ticket:%d:escalated:1", id)},
			{"to level 2, the last", summary(map[int]int{2: 1}, nil), 2, "U0ONCALL01", "urgent", 4 * time.Hour, 0, false,
				fmt.Sprintf("escalated ticket:%d:escalated:2", id)},
			{"repeat 1", summary(nil, func(s *app.EscalationSummary) { s.Repeats = 1 }), 2, "U0ONCALL01", "urgent", 30 * time.Minute, 1, false,
				fmt.Sprintf("escalated ticket:%d:repeat:2:1", id)},
			{"repeat 2, the cap", summary(nil, func(s *app.EscalationSummary) { s.Repeats = 1 }), 2, "U0ONCALL01", "urgent", 30 * time.Minute, 2, false,
				fmt.Sprintf("escalated ticket:%d:repeat:2:2", id)},
			{"exhausted", summary(nil, func(s *app.EscalationSummary) { s.Exhausted = 1 }), 2, "U0ONCALL01", "urgent", 0, 2, true,
				fmt.Sprintf("escalated ticket:%d:exhausted", id)},
		}
		wantEvents := []string{fmt.Sprintf("opened ticket:%d:opened", id)}
		for i, step := range steps {
			if i > 0 {
				b.passDue(t, id)
			}
			before := b.ticket(t, id)
			got := b.escalateOnce(t)
			step.want.Examined = 1
			if diff := cmp.Diff(step.want, got); diff != "" {
				t.Errorf("%s: summary (-want +got):\n%s", step.desc, diff)
			}
			tk := b.ticket(t, id)
			wantDeadline := before.Deadline
			if step.window > 0 {
				wantDeadline = b.clock.Now().Add(step.window)
			}
			if tk.Level != step.level || tk.Owner != step.owner || tk.Priority != step.priority ||
				!tk.Deadline.Equal(wantDeadline) || tk.RepeatCount != step.repeats || tk.Exhausted != step.exhausted ||
				tk.State != review.StateOpen || tk.Version != before.Version+1 {
				t.Errorf("%s: ticket %+v; want level %d, %s, %s, deadline %s, %d repeats, exhausted %v, version %d",
					step.desc, tk, step.level, step.owner, step.priority, wantDeadline, step.repeats, step.exhausted, before.Version+1)
			}
			d := b.lastDetails(t, id)
			relookup, _ := d["relookup"].(map[string]any)
			if d["from_level"] != float64(before.Level) || d["to_level"] != float64(step.level) || d["owner"] != step.owner ||
				d["priority"] != step.priority || relookup["reason"] != string(proof.ReasonNotFound) {
				t.Errorf("%s: event details %v", step.desc, d)
			}
			// The same pass again, at the same time: nothing is due.
			if again := b.escalateOnce(t); again.Examined != 0 {
				t.Errorf("%s: a second pass found %+v", step.desc, again)
			}
			wantEvents = append(wantEvents, step.event)
		}
		if diff := cmp.Diff(wantEvents, b.eventKeys(t, id)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}

		// Exhausted: nothing more, however late.
		b.clock.set(b.clock.Now().Add(1000 * time.Hour))
		if got := b.escalateOnce(t); got.Examined != 0 {
			t.Errorf("after the final step: %+v", got)
		}
		if n := len(b.eventKeys(t, id)); n != len(wantEvents) {
			t.Errorf("%d events, want %d", n, len(wantEvents))
		}
		opAfter := b.status(t, key)
		if opAfter.Status != ledger.StatusReview || !opAfter.UpdatedAt.Equal(opBefore.UpdatedAt) {
			t.Errorf("escalation touched the operation: %+v", opAfter)
		}
	})
}

// TestEscalationRelookup: the lookup before an escalation settles the
// ticket when it finds exactly one agreeing record; anything else, an error
// included, escalates.
func TestEscalationRelookup(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {

		notFound := func(context.Context, providers.Query) ([]providers.Record, error) { return nil, nil }

		t.Run("found: ticket resolved as done, ledger done, new evidence in the event", func(t *testing.T) {
			t.Parallel()
			late := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
				notFound,
				func(_ context.Context, q providers.Query) ([]providers.Record, error) {
					return []providers.Record{{ID: "rec_late", CreatedAt: q.FirstAttemptAt.Add(time.Second), Recipient: q.Recipient, PayloadHash: q.PayloadHash}}, nil
				},
			}}
			b := setupEscalationOn(t, lt, escalationConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", late, 5*time.Second)})
			const key = "late-record-1"
			id := b.openTickets(t, "fake", key)[key]
			b.passDue(t, id)

			got := b.escalateOnce(t)
			if diff := cmp.Diff(summary(nil, func(s *app.EscalationSummary) { s.Examined, s.ResolvedByRelookup = 1, 1 }), got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			op := b.status(t, key)
			if op.Status != ledger.StatusDone || op.ProviderRecordID != "rec_late" {
				t.Errorf("operation %s %q, want done with rec_late", op.Status, op.ProviderRecordID)
			}
			tk, err := b.sweeper.Reviews().Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if tk.State != review.StateResolved || tk.Resolution != review.ResolutionDone || tk.ResolvedBy != review.ActorSweeper ||
				tk.ResolutionRecordID != "rec_late" || tk.EscalationLevel != 0 || tk.ResolvedAt == nil || !tk.ResolvedAt.Equal(b.clock.Now()) {
				t.Errorf("ticket %+v", tk)
			}
			want := []string{fmt.Sprintf("opened ticket:%d:opened", id), fmt.Sprintf("resolved_by_relookup ticket:%d:resolved", id)}
			if diff := cmp.Diff(want, b.eventKeys(t, id)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			var details struct {
				ProviderRecordID string         `json:"provider_record_id"`
				Evidence         proof.Evidence `json:"evidence"`
			}
			raw, _ := json.Marshal(b.lastDetails(t, id))
			if err := json.Unmarshal(raw, &details); err != nil {
				t.Fatal(err)
			}
			ev := details.Evidence
			if details.ProviderRecordID != "rec_late" || len(ev.Records) != 1 || ev.Records[0].ID != "rec_late" ||
				ev.OpKey != key || ev.Adapter != "fake" || ev.RecipientMasked == "" || strings.Contains(string(raw), "jane.doe") {
				t.Errorf("event details %s", raw)
			}
			// Nothing is left to escalate.
			b.clock.set(b.clock.Now().Add(1000 * time.Hour))
			if again := b.escalateOnce(t); again.Examined != 0 {
				t.Errorf("after resolution: %+v", again)
			}
		})

		t.Run("lookup error: escalates all the same, the error in the event", func(t *testing.T) {
			t.Parallel()
			failing := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
				notFound,
				func(context.Context, providers.Query) ([]providers.Record, error) {
					return nil, providers.Transient(errors.New("HTTP 503 from the provider"))
				},
			}}
			b := setupEscalationOn(t, lt, escalationConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", failing, 5*time.Second)})
			const key = "flaky-1"
			id := b.openTickets(t, "fake", key)[key]
			b.passDue(t, id)
			got := b.escalateOnce(t)
			if diff := cmp.Diff(summary(map[int]int{1: 1}, func(s *app.EscalationSummary) { s.Examined = 1 }), got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if tk := b.ticket(t, id); tk.Level != 1 || tk.Owner != "U0SECOND01" {
				t.Errorf("ticket %+v, want level 1", tk)
			}
			relookup, _ := b.lastDetails(t, id)["relookup"].(map[string]any)
			if e, _ := relookup["error"].(string); !strings.Contains(e, "HTTP 503") {
				t.Errorf("relookup %v, want the error", relookup)
			}
			if got := b.status(t, key); got.Status != ledger.StatusReview {
				t.Errorf("operation %s", got.Status)
			}
		})

		t.Run("two records: escalates, the ids in the event", func(t *testing.T) {
			t.Parallel()
			b := setupEscalationOn(t, lt, escalationConfig, nil)
			const key = "many-esc"
			id := b.openTickets(t, "sim", key)[key]
			b.passDue(t, id)
			if got := b.escalateOnce(t); got.Escalated[1] != 1 {
				t.Errorf("summary %+v", got)
			}
			relookup, _ := b.lastDetails(t, id)["relookup"].(map[string]any)
			if ids, _ := relookup["record_ids"].([]any); relookup["reason"] != string(proof.ReasonMultipleMatches) || len(ids) != 2 {
				t.Errorf("relookup %v", relookup)
			}
		})
	})
}

// TestEscalationOnceAcrossReplicas: the same escalation run again and
// again, by two Sweepers at once, takes one step and writes one event per
// ticket and level.
func TestEscalationOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		b := setupEscalationOn(t, lt, escalationConfig, nil)
		var keys []string
		for i := range 10 {
			keys = append(keys, fmt.Sprintf("lost-replica-%d", i))
		}
		ids := b.openTickets(t, "sim", keys...)
		other := b.replica(t)

		for level := 1; level <= 2; level++ {
			b.passDue(t, ids[keys[0]]) // every ticket has the same window
			for _, id := range ids {
				if tk := b.ticket(t, id); tk.Deadline.After(b.clock.Now()) {
					b.clock.set(tk.Deadline.Add(time.Second))
				}
			}
			var (
				mu    sync.Mutex
				total = summary(nil, nil)
				wg    sync.WaitGroup
			)
			for _, s := range []*app.App{b.sweeper, other, b.sweeper, other} {
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
					total.AlreadyHandled += sum.AlreadyHandled
					total.Errors += sum.Errors
				})
			}
			wg.Wait()
			if total.Escalated[level] != len(keys) || total.Errors != 0 {
				t.Errorf("level %d: four passes escalated %v with %d errors, want %d tickets once", level, total.Escalated, total.Errors, len(keys))
			}
			for _, id := range ids {
				if tk := b.ticket(t, id); tk.Level != level || tk.Version != level+1 {
					t.Errorf("ticket %d at level %d version %d, want level %d version %d", id, tk.Level, tk.Version, level, level+1)
				}
			}
			if n := b.count(t, `SELECT count(*) FROM sweeper.ticket_events WHERE kind = 'escalated' AND dedupe_key LIKE '%:escalated:' || $1`, fmt.Sprint(level)); n != len(keys) {
				t.Errorf("level %d: %d escalated events, want %d", level, n, len(keys))
			}
		}
	})
}

// TestEscalationRiverJobs runs escalation through River: the periodic
// escalate job wired into NewDaemon, and escalate_ticket jobs inserted
// twice or with an outdated version.
func TestEscalationRiverJobs(t *testing.T) {
	t.Parallel()

	t.Run("periodic job escalates expired tickets", func(t *testing.T) {
		t.Parallel()
		b := setupEscalation(t, escalationConfig, nil)
		// No other River client on this database: it could be elected
		// leader, and only the leader enqueues periodic jobs.
		const key = "lost-periodic"
		b.claim(t, key, "sim", stale)
		if _, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{}); err != nil {
			t.Fatal(err)
		}
		tk, _ := b.ticketOf(t, key)
		id := tk.ID
		b.passDue(t, id)
		daemon, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := daemon.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := daemon.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
		deadline := time.Now().Add(30 * time.Second)
		for b.ticket(t, id).Level != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the periodic escalate job (RunOnStart) did not escalate the ticket")
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.waitSettled(t, []string{key}, 30*time.Second)
		if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'escalate_ticket' AND state = 'completed'`); n != 1 {
			t.Errorf("%d completed escalate_ticket jobs, want 1", n)
		}
	})

	t.Run("duplicate and outdated jobs: one step", func(t *testing.T) {
		t.Parallel()
		b := setupEscalation(t, escalationConfig, nil)
		const key = "lost-dup"
		id := b.openTickets(t, "sim", key)[key]
		b.passDue(t, id)
		version := b.ticket(t, id).Version
		client := b.startClient(t)
		ctx := context.Background()
		for range 3 {
			if _, err := client.Insert(ctx, jobs.EscalateTicketArgs{TicketID: id, Version: version}, nil); err != nil {
				t.Fatal(err)
			}
		}
		// The same ticket at a version it no longer has: a stale scan.
		if _, err := client.Insert(ctx, jobs.EscalateTicketArgs{TicketID: id, Version: version - 1}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Insert(ctx, jobs.EscalateArgs{}, &river.InsertOpts{}); err != nil {
			t.Fatal(err)
		}
		b.waitSettled(t, []string{key}, 30*time.Second)
		// Once the first step is written the version moved: jobs for the old
		// version find nothing to do, and the scan found nothing due.
		tk := b.ticket(t, id)
		if tk.Level != 1 || tk.Version != version+1 {
			t.Errorf("ticket %+v, want level 1 at version %d", tk, version+1)
		}
		want := []string{fmt.Sprintf("opened ticket:%d:opened", id), fmt.Sprintf("escalated ticket:%d:escalated:1", id)}
		if diff := cmp.Diff(want, b.eventKeys(t, id)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind LIKE 'escalate%' AND state <> 'completed'`); n != 0 {
			t.Errorf("%d escalation jobs not completed", n)
		}
	})
}

// TestEscalationAcknowledged: an acknowledgement stops the repeat alerts
// of its level, not the deadline.
func TestEscalationAcknowledged(t *testing.T) {
	t.Parallel()
	b := setupEscalation(t, escalationConfig, nil)
	const key = "lost-ack"
	id := b.openTickets(t, "sim", key)[key]
	store := review.NewStore(b.pool, ledger.Native(), app.Policy(b.sweeper.Config))
	ctx := context.Background()

	b.passDue(t, id)
	b.escalateOnce(t) // level 1
	if _, err := store.Acknowledge(ctx, id, "U0SECOND01", 0); err != nil {
		t.Fatal(err)
	}
	// Acknowledged below the top: escalates when its deadline passes.
	b.passDue(t, id)
	if got := b.escalateOnce(t); got.Escalated[2] != 1 {
		t.Fatalf("acknowledged at level 1: %+v, want escalated to 2", got)
	}
	// At the top, the level-1 acknowledgement does not count: it repeats.
	b.passDue(t, id)
	if got := b.escalateOnce(t); got.Repeats != 1 {
		t.Fatalf("at the top, acknowledged below: %+v, want a repeat", got)
	}
	if _, err := store.Acknowledge(ctx, id, "U0ONCALL01", 0); err != nil {
		t.Fatal(err)
	}
	events := b.eventKeys(t, id)
	for range 4 { // more than max_repeats: no repeat, no final step
		before := b.ticket(t, id)
		b.passDue(t, id)
		got := b.escalateOnce(t)
		if diff := cmp.Diff(summary(nil, func(s *app.EscalationSummary) { s.Examined, s.Held = 1, 1 }), got); diff != "" {
			t.Errorf("acknowledged at the top: summary (-want +got):\n%s", diff)
		}
		tk := b.ticket(t, id)
		if tk.RepeatCount != 1 || tk.Exhausted || tk.Version != before.Version || tk.Level != 2 ||
			!tk.Deadline.Equal(b.clock.Now().Add(30*time.Minute)) {
			t.Errorf("held ticket %+v (before %+v)", tk, before)
		}
	}
	if diff := cmp.Diff(events, b.eventKeys(t, id)); diff != "" {
		t.Errorf("holding wrote events (-want +got):\n%s", diff)
	}
}

// TestEscalationLeavesSettledOperations: a ticket whose operation someone
// settled outside sweeper still escalates, without a lookup and without a
// change to the operation; a resolved ticket is not examined at all.
func TestEscalationLeavesSettledOperations(t *testing.T) {
	t.Parallel()
	// Not found during the sweep; afterwards, a record that would prove
	// whichever operation asked.
	var armed atomic.Bool
	found := &fakeLookup{calls: make(chan providers.Query, 10), answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			if !armed.Load() {
				return nil, nil
			}
			return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
		},
	}}
	b := setupEscalation(t, escalationConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", found, 5*time.Second)})
	ids := b.openTickets(t, "fake", "settled-done", "settled-failed", "resolved-by-person")
	for range 3 {
		<-found.calls
	}
	armed.Store(true)
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `UPDATE ledger.operations SET status = 'done', provider_record_id = 'rec_workflow' WHERE op_key = 'settled-done'`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE ledger.operations SET status = 'failed' WHERE op_key = 'settled-failed'`); err != nil {
		t.Fatal(err)
	}
	if _, err := review.NewStore(b.pool, ledger.Native(), review.Policy{}).Resolve(ctx, review.Resolution{
		TicketID: ids["resolved-by-person"], Outcome: review.ResolutionNotSent, By: "U0PERSON01",
	}); err != nil {
		t.Fatal(err)
	}
	before := map[string]ledger.Operation{}
	for key := range ids {
		before[key] = b.status(t, key)
	}
	for range 3 {
		b.passDue(t, ids["settled-done"])
		if got := b.escalateOnce(t); got.Examined != 2 || got.ResolvedByRelookup != 0 || got.Errors != 0 {
			t.Errorf("summary %+v, want the two open tickets examined, none resolved", got)
		}
	}
	select {
	case q := <-found.calls:
		t.Errorf("looked up %s, whose operation is settled", q.OpKey)
	default:
	}
	for key, op := range before {
		if got := b.status(t, key); got.Status != op.Status || got.ProviderRecordID != op.ProviderRecordID || !got.UpdatedAt.Equal(op.UpdatedAt) {
			t.Errorf("%s changed: %+v -> %+v", key, op, got)
		}
	}
	for _, key := range []string{"settled-done", "settled-failed"} {
		if tk := b.ticket(t, ids[key]); tk.Level != 2 || tk.RepeatCount != 1 {
			t.Errorf("%s: ticket %+v, want level 2 after a repeat", key, tk)
		}
		relookup, _ := b.lastDetails(t, ids[key])["relookup"].(map[string]any)
		if s, _ := relookup["skipped"].(string); !strings.Contains(s, "left as it is") {
			t.Errorf("%s: relookup %v", key, relookup)
		}
	}
	if tk := b.ticket(t, ids["resolved-by-person"]); tk.State != review.StateResolved || tk.Level != 0 {
		t.Errorf("resolved ticket changed: %+v", tk)
	}
}

// TestEscalationNoLevels: without review.escalation a ticket re-alerts its
// owner every review.window, up to the cap, then says so once.
func TestEscalationNoLevels(t *testing.T) {
	t.Parallel()
	b := setupEscalation(t, strings.Replace(baseConfig, "window = \"1h\"\n", "window = \"1h\"\nmax_repeats = 1\n", 1), nil)
	const key = "lost-nolevels"
	id := b.openTickets(t, "sim", key)[key]
	b.passDue(t, id)
	if got := b.escalateOnce(t); got.Repeats != 1 {
		t.Errorf("first deadline: %+v, want a repeat", got)
	}
	tk := b.ticket(t, id)
	if tk.Level != 0 || tk.Owner != "U0BILLING1" || tk.Priority != "normal" || !tk.Deadline.Equal(b.clock.Now().Add(time.Hour)) {
		t.Errorf("ticket %+v, want the same owner, due in review.window", tk)
	}
	b.passDue(t, id)
	if got := b.escalateOnce(t); got.Exhausted != 1 {
		t.Errorf("second deadline: %+v, want exhausted", got)
	}
	want := []string{fmt.Sprintf("opened ticket:%d:opened", id), fmt.Sprintf("escalated ticket:%d:repeat:0:1", id),
		fmt.Sprintf("escalated ticket:%d:exhausted", id)}
	if diff := cmp.Diff(want, b.eventKeys(t, id)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
