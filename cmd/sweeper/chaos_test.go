package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/testkit/pgtemp"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

var chaosFull = flag.Bool("chaos.full", false,
	"run TestChaos at full size: 5,000 operations, 20 kill -9s, a PostgreSQL restart (several minutes)")

// chaosSize is how hard one TestChaos run pushes.
type chaosSize struct {
	ops   int
	kills int
	// window is the span over which the kills and the PostgreSQL restart
	// are spread, from the daemons' start: the busy part of the run.
	window time.Duration
	// settle bounds each wait for the system to get somewhere.
	settle time.Duration
}

// chaosWorkflows is how many workflows the operations are spread over;
// each has a Slack channel of its own, so that per-channel pacing does
// not make the run about Slack's one message a second.
const chaosWorkflows = 40

// chaosConfig is a fast daemon: sweeps every second, escalation scans
// every two, outbox delivery every second, one-minute review windows.
// "mail" has a short lookup budget (errors become lookup_failed tickets
// within seconds), "pay" a long one (errors are retried until answered).
func chaosConfig(providerURL, slackURL string) string {
	var channels strings.Builder
	for i := range chaosWorkflows {
		fmt.Fprintf(&channels, "wf%02d = \"C0CHAOS%02d\"\n", i, i)
	}
	return fmt.Sprintf(`
[database]
url = "postgres://unused"
max_conns = 8

[schedules]
sweep = "@every 1s"
escalate = "@every 2s"
notify = "@every 1s"

[sweep]
batch_size = 500
query_timeout = "10s"
timeout = "20s"

[river]
max_workers = 50

[review]
default_owner = "U0DEFAULT1"
window = "1m"
max_repeats = 0
[[review.escalation]]
owner = "U0SECOND01"
priority = "high"
window = "1m"

[slack]
channel = "C0CHAOSDEF"
api_url = %[2]q
# Every ticket event has its own message here, posted at once: the run
# checks each one (checkSlack). Grouping and the wait are TestToil's.
group_wait = "0s"
group_threshold = 0
[slack.channels.workflows]
%[3]s
[http]
listen = "127.0.0.1:0"

# These providers answer some operations with errors for good, and the
# run checks that each such operation spends its own budget and ends as
# lookup_failed: the cluster-wide outage pause is off. (It is tried by
# TestOutageMakesNoTickets.)
[providers.mail]
kind = "http"
url = %[1]q
stale_after = "1m"
lookup_timeout = "1s"
lookup_budget = "3s"
rate_limit = 2000.0
concurrency = 50
outage_after = 0

[providers.pay]
kind = "http"
url = %[1]q
stale_after = "1m"
lookup_timeout = "1s"
lookup_budget = "10m"
rate_limit = 2000.0
concurrency = 50
outage_after = 0
`, providerURL, slackURL, channels.String())
}

// smsProviderConfig is the "sms" provider: the fake's resemblance
// endpoint, which finds messages by recipient and date, not by op_key.
func smsProviderConfig(url string) string {
	return fmt.Sprintf(`
[providers.sms]
kind = "http"
url = %q
search_by = "resemblance"
stale_after = "1m"
lookup_timeout = "1s"
lookup_budget = "10m"
rate_limit = 2000.0
concurrency = 50
`, url)
}

// TestChaos runs three `sweeper run` processes on one database served by
// a PostgreSQL cluster of the test's own, with a fake provider answering
// every kind of outcome and a fake Slack, while it kills a random daemon
// with SIGKILL at random moments (and starts it again) and restarts
// PostgreSQL once, as a crash would (immediate shutdown). Then, with the
// daemons stopped:
//
//   - every operation is done or in review, as the provider's answer says
//     (found and agreeing → done with its record; anything else → review
//     with the right reason), and its committed status history is exactly
//     pending→done, pending→review, or pending→review→done for a ticket a
//     later re-lookup resolved (I2, I3, I5);
//   - exactly one ticket per operation that went to review, none for the
//     others; event dedupe keys are unique, each ticket's history starts
//     with "opened" and nothing follows a resolution (I4);
//   - exactly one Slack message per ticket event, each in its ticket's
//     thread, once the outbox drained; no message for an event that does
//     not exist (I4);
//   - the provider received GETs only (I1), PostgreSQL never refused an
//     illegal transition (sweeper never attempted one), and no River job
//     is left running or discarded.
//
// By default it runs at CI size (400 operations, 4 kills); -chaos.full runs 5,000 operations and 20
// kills (see the Makefile's chaos target).
func TestChaos(t *testing.T) {
	skipLong(t)
	t.Parallel() // most of a run is waiting for River to rescue a killed daemon's jobs
	size := chaosSize{ops: 400, kills: 4, window: 25 * time.Second, settle: 4 * time.Minute}
	if *chaosFull {
		size = chaosSize{ops: 5000, kills: 20, window: 150 * time.Second, settle: 10 * time.Minute}
	}
	ctx := context.Background()
	started := time.Now()
	cluster := migratedCluster(t)
	dbURL := cluster.URL
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	// Every acknowledged commit survives the crash-like restart below.
	_, err = admin.Exec(ctx, `ALTER DATABASE `+pgtemp.Database+` SET synchronous_commit = on`)
	admin.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	recordTransitions(t, pool)

	var keys []string
	// amb-s come in pairs: keep them together at the start of the mix, so
	// that a partial last round holds both or neither.
	mix := []string{"amb-s", "amb-s", "found-p", "found-p", "found-p", "flaky-p", "late-p", "none-p", "none-p",
		"two-p", "mism-p", "err-m", "err-m", "deny-m", "res-s"}
	for i := range size.ops {
		keys = append(keys, fmt.Sprintf("%s-%05d", mix[i%len(mix)], i))
	}
	base := seedOps(t, pool, chaosWorkflows, keys)

	provider := newFakeProvider(t, 0)
	provider.Hold(smsMessages(keys, base)...)
	slack := slackfake.New(t)
	bin := binary(t)
	cfgFile := writeConfig(t, chaosConfig(provider.URL(), slack.URL())+smsProviderConfig(provider.SMSURL()))
	environ := slackEnv(dbURL)
	t.Logf("setup: %s", time.Since(started).Round(time.Millisecond))

	// The daemons, and what happens to them. A daemon that exits without
	// being killed is a failure.
	type daemon struct {
		*daemonProc
		killed atomic.Bool
	}
	var mu sync.Mutex
	daemons := make([]*daemon, 3)
	var unexpected, supervised []string
	var stopping atomic.Bool
	var start func(i int)
	start = func(i int) {
		d := &daemon{daemonProc: startDaemonEnv(t, bin, cfgFile, environ)}
		mu.Lock()
		daemons[i] = d
		mu.Unlock()
		go func() {
			<-d.exited
			out := d.output.String()
			switch {
			case d.killed.Load() || stopping.Load():
			case !strings.Contains(out, "sweeper running") && strings.Contains(out, "is not reachable"):
				// Started while PostgreSQL was restarting: `sweeper run`
				// refuses to start without a database (exit 1), and its
				// supervisor starts it again, as here.
				mu.Lock()
				supervised = append(supervised, fmt.Sprintf("daemon %d could not reach the database at start; started again", i))
				mu.Unlock()
				time.Sleep(time.Second) // the supervisor's restart delay: part of the scenario
				start(i)
			default:
				mu.Lock()
				unexpected = append(unexpected, fmt.Sprintf("daemon %d exited on its own: %v\n%s", i, d.err, tail(out, 40)))
				mu.Unlock()
			}
		}()
	}
	for i := range daemons {
		start(i)
	}
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		for i, d := range daemons {
			fmt.Fprintf(&b, "--- daemon %d (last lines)\n%s\n", i, tail(d.output.String(), 25))
		}
		return b.String()
	}
	runStart := time.Now()

	// The chaos: kills at random moments over the window, and one
	// PostgreSQL restart in its middle third.
	type event struct {
		at      time.Duration
		restart bool
	}
	var plan []event
	for range size.kills {
		plan = append(plan, event{at: time.Duration(rand.Int64N(int64(size.window)))})
	}
	plan = append(plan, event{at: size.window/3 + time.Duration(rand.Int64N(int64(size.window/3))), restart: true})
	slices.SortFunc(plan, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	chaosDone, stopChaos := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stopChaos); <-chaosDone })
	var chaosLog []string
	var chaosErr error
	go func() {
		defer close(chaosDone)
		for _, e := range plan {
			select {
			case <-time.After(time.Until(runStart.Add(e.at))):
			case <-stopChaos:
				return
			}
			if e.restart {
				var pending, unsent int
				_ = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger.operations WHERE status = 'pending'),
					(SELECT count(*) FROM sweeper.outbox WHERE state <> 'sent')`).Scan(&pending, &unsent)
				t0 := time.Now()
				if err := cluster.Restart(ctx, pgtemp.ShutdownImmediate); err != nil {
					chaosErr = err
					return
				}
				chaosLog = append(chaosLog, fmt.Sprintf("%6.1fs PostgreSQL restarted (immediate) in %s, with %d operations pending and %d outbox rows unsent",
					e.at.Seconds(), time.Since(t0).Round(time.Millisecond), pending, unsent))
				continue
			}
			i := rand.IntN(len(daemons))
			mu.Lock()
			victim := daemons[i]
			mu.Unlock()
			victim.killed.Store(true)
			if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				chaosErr = err
				return
			}
			<-victim.exited
			time.Sleep(time.Duration(rand.Int64N(int64(time.Second)))) // down a random while, as a crashed replica is
			// Its outbox leases end as two minutes would end them; while
			// PostgreSQL restarts they are left to end by themselves.
			_ = endLeasesOf(ctx, pool, victim.cmd.Process.Pid)
			start(i)
			chaosLog = append(chaosLog, fmt.Sprintf("%6.1fs daemon %d killed (SIGKILL) and restarted", e.at.Seconds(), i))
		}
	}()
	healthy := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(unexpected) > 0 {
			t.Fatalf("%s", strings.Join(unexpected, "\n"))
		}
		return ""
	}
	count := func(query string) int {
		var n int
		if err := pool.QueryRow(ctx, query).Scan(&n); err != nil {
			return -1 // the database is restarting: not there yet
		}
		return n
	}

	// Phase 1: every operation settles. late-* keys are revealed as soon as
	// their ticket exists, so that the next re-lookup before an escalation
	// finds the record.
	revealLate := func() {
		rows, err := pool.Query(ctx, `SELECT op_key FROM sweeper.tickets WHERE op_key LIKE 'late-%'`)
		if err != nil {
			return
		}
		late, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err == nil {
			provider.Reveal(late...)
		}
	}
	waitUntil(t, "every operation settled", size.settle, func() string {
		healthy()
		revealLate()
		if n := count(`SELECT count(*) FROM ledger.operations WHERE status = 'pending'`); n != 0 {
			return fmt.Sprintf("%d operations pending", n)
		}
		return ""
	}, output)
	revealLate()
	settled := time.Since(runStart)

	// Phase 2: escalation, all the way. Each open ticket's deadline is
	// moved into the past until it has taken every step (one level, then
	// "exhausted"), or a re-lookup resolved it.
	waitUntil(t, "every ticket escalated to the end or resolved", size.settle, func() string {
		healthy()
		_ = execAsSweeper(ctx, pool, `UPDATE sweeper.tickets SET deadline = now() - interval '1 second'
			WHERE state = 'open' AND NOT escalation_exhausted AND deadline > now()`)
		if n := count(`SELECT count(*) FROM sweeper.tickets WHERE state = 'open' AND NOT escalation_exhausted`); n != 0 {
			return fmt.Sprintf("%d tickets still to escalate", n)
		}
		return ""
	}, output)
	escalated := time.Since(runStart)

	<-chaosDone
	if chaosErr != nil {
		t.Fatalf("chaos: %v", chaosErr)
	}

	// Phase 3: quiet. Nothing pending anywhere, and no job left running —
	// a dead daemon's jobs are rescued — at some moment.
	waitUntil(t, "outbox drained and no job unfinished", size.settle, func() string {
		healthy()
		var unsent, parked, lookups, running int
		err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'),
			(SELECT count(*) FROM sweeper.outbox WHERE state = 'parked'),
			(SELECT count(*) FROM sweeper.river_job WHERE kind IN ('lookup_batch', 'escalate_ticket')
				AND state NOT IN ('completed', 'cancelled', 'discarded')),
			(SELECT count(*) FROM sweeper.river_job WHERE state = 'running')`).Scan(&unsent, &parked, &lookups, &running)
		switch {
		case err != nil:
			return err.Error()
		case parked > 0:
			t.Fatalf("%d outbox rows parked: Slack never refused anything", parked)
		case unsent+lookups+running > 0:
			return fmt.Sprintf("%d outbox rows unsent, %d lookups unfinished, %d jobs running", unsent, lookups, running)
		}
		return ""
	}, output)
	drained := time.Since(runStart)

	// The daemons still stop cleanly.
	stopping.Store(true)
	mu.Lock()
	procs := make([]*daemonProc, len(daemons))
	for i, d := range daemons {
		d.killed.Store(true)
		procs[i] = d.daemonProc
	}
	mu.Unlock()
	stopDaemons(t, procs)
	mu.Lock()
	chaosLog = append(chaosLog, supervised...)
	mu.Unlock()
	t.Logf("chaos:\n%s", strings.Join(chaosLog, "\n"))
	t.Logf("%d operations: settled after %s, escalated after %s, drained after %s; %d lookups (GET) served",
		size.ops, settled.Round(time.Second), escalated.Round(time.Second), drained.Round(time.Second), provider.gets.Load())

	checkChaosOutcome(t, pool, keys)
	checkSlack(t, pool, slack)
	if n := provider.nonGets.Load(); n != 0 {
		t.Errorf("the provider received %d requests that were not lookups (I1)", n)
	}
	log, err := os.ReadFile(cluster.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	refused := regexp.MustCompile(`(?m)^.*(illegal status transition|cannot change once set|escalation only moves forward|is final|append-only).*$`)
	if m := refused.FindAllString(string(log), 10); len(m) > 0 {
		t.Errorf("PostgreSQL refused writes sweeper should never attempt:\n%s", strings.Join(m, "\n"))
	}
	var running, discarded int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'running'), count(*) FILTER (WHERE state = 'discarded')
		FROM sweeper.river_job`).Scan(&running, &discarded); err != nil {
		t.Fatal(err)
	}
	if running != 0 || discarded != 0 {
		t.Errorf("River jobs after the stop: %d running, %d discarded; want none", running, discarded)
	}
}

// checkChaosOutcome checks every operation's status, record, ticket and
// committed history against what the fake provider answers for its class.
func checkChaosOutcome(t *testing.T, pool *pgxpool.Pool, keys []string) {
	t.Helper()
	ctx := context.Background()
	type outcome struct {
		Status, Record, Reason, TicketState, Resolution string
		Tickets                                         int
		Transitions                                     string
	}
	rows, err := pool.Query(ctx, `
		SELECT o.op_key, o.status, coalesce(o.provider_record_id, ''),
		       coalesce(min(t.reason), ''), coalesce(min(t.state), ''), coalesce(min(t.resolution), ''), count(t.id),
		       coalesce((SELECT string_agg(c.from_status || '>' || c.to_status, ',' ORDER BY c.id)
		                 FROM public.chaos_transitions c WHERE c.op_key = o.op_key), '')
		FROM ledger.operations o LEFT JOIN sweeper.tickets t ON t.operation_id = o.id
		GROUP BY o.id`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]outcome{}
	var k string
	var o outcome
	if _, err := pgx.ForEachRow(rows, []any{&k, &o.Status, &o.Record, &o.Reason, &o.TicketState, &o.Resolution, &o.Tickets, &o.Transitions},
		func() error { got[k] = o; return nil }); err != nil {
		t.Fatal(err)
	}
	// A late-* ticket is resolved by the re-lookup before an escalation —
	// unless each of its re-lookups failed (a lookup slowed past
	// lookup_timeout on a loaded machine), which is not proof either way:
	// the ticket then takes its escalation steps and stays open, exhausted.
	// Which of the two it is, the escalated events' relookup says.
	relookupFailed := map[string]bool{}
	rows, err = pool.Query(ctx, `
		SELECT t.op_key FROM sweeper.tickets t
		WHERE t.op_key LIKE 'late-%' AND t.state = 'open' AND t.escalation_exhausted
		  AND NOT EXISTS (SELECT 1 FROM sweeper.ticket_events e WHERE e.ticket_id = t.id AND e.kind = 'escalated'
		                  AND coalesce(e.details->'relookup'->>'error', '') = '')`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&k}, func() error { relookupFailed[k] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(relookupFailed) > 0 {
		t.Logf("%d late-* tickets stayed open: every re-lookup of theirs failed", len(relookupFailed))
	}
	want := map[string]outcome{}
	for _, k := range keys {
		c := classOf(k)
		if relookupFailed[k] {
			c = classNone
		}
		w := outcome{Status: c.status, Reason: c.reason, Transitions: strings.Join(c.transitions, ",")}
		if c.status == "done" {
			w.Record = "rec-" + k
		}
		if c.reason != "" {
			w.Tickets, w.TicketState = 1, "open"
			if c.resolved {
				w.TicketState, w.Resolution = "resolved", "done"
			}
		}
		want[k] = w
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("operations (-want +got):\n%s", firstLines(diff, 60))
		var wrong []string
		for k := range want {
			if want[k] != got[k] {
				wrong = append(wrong, k)
			}
		}
		rows, err := pool.Query(ctx, `SELECT op_key, reason, coalesce(jsonb_path_query_first(evidence, 'strict $.**.errors')::text, '')
			FROM sweeper.tickets WHERE op_key = ANY($1) ORDER BY op_key LIMIT 10`, wrong)
		if err == nil {
			var k, reason, errs string
			_, _ = pgx.ForEachRow(rows, []any{&k, &reason, &errs}, func() error {
				t.Logf("%s: ticket %s, errors in evidence: %s", k, reason, errs)
				return nil
			})
		}
	}

	// The audit trail: unique keys, one outbox row per event, "opened"
	// first, nothing after a resolution.
	var events, keysDistinct, outbox, badFirst, afterResolved, unsent int
	err = pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM sweeper.ticket_events),
		(SELECT count(DISTINCT dedupe_key) FROM sweeper.ticket_events),
		(SELECT count(*) FROM sweeper.outbox o JOIN sweeper.ticket_events e ON e.id = o.event_id AND e.dedupe_key = o.dedupe_key),
		(SELECT count(*) FROM sweeper.tickets t WHERE (SELECT kind FROM sweeper.ticket_events e WHERE e.ticket_id = t.id ORDER BY id LIMIT 1) <> 'opened'),
		(SELECT count(*) FROM sweeper.ticket_events e JOIN sweeper.ticket_events r ON r.ticket_id = e.ticket_id
			AND r.kind IN ('resolved', 'resolved_by_relookup') AND e.id > r.id),
		(SELECT count(*) FROM sweeper.outbox WHERE state <> 'sent')`).
		Scan(&events, &keysDistinct, &outbox, &badFirst, &afterResolved, &unsent)
	if err != nil {
		t.Fatal(err)
	}
	if events != keysDistinct || events != outbox || badFirst != 0 || afterResolved != 0 || unsent != 0 {
		t.Errorf("audit trail: %d events, %d distinct dedupe keys, %d outbox rows matching them, %d tickets not starting with opened, "+
			"%d events after a resolution, %d outbox rows unsent", events, keysDistinct, outbox, badFirst, afterResolved, unsent)
	}
	var escalations, relookups int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'escalated'), count(*) FILTER (WHERE kind = 'resolved_by_relookup')
		FROM sweeper.ticket_events`).Scan(&escalations, &relookups); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ticket events: %d escalation steps, %d tickets resolved by a re-lookup", events, escalations, relookups)
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… %d more lines", len(lines)-n)
}
