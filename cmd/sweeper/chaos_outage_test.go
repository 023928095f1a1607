package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// startOutageDaemons starts n daemons on dbURL with cfgFile and returns
// them with a function giving their recent output.
func startOutageDaemons(t *testing.T, n int, cfgFile, dbURL string) ([]*daemonProc, func() string) {
	t.Helper()
	bin := binary(t)
	var daemons []*daemonProc
	for range n {
		daemons = append(daemons, startDaemonEnv(t, bin, cfgFile, slackEnv(dbURL)))
	}
	return daemons, func() string {
		var b strings.Builder
		for i, d := range daemons {
			fmt.Fprintf(&b, "--- daemon %d (last lines)\n%s\n", i, tail(d.output.String(), 25))
		}
		return b.String()
	}
}

// stopDaemons sends SIGTERM to every daemon and requires a clean exit.
func stopDaemons(t *testing.T, daemons []*daemonProc) {
	t.Helper()
	var wg sync.WaitGroup
	for i, d := range daemons {
		wg.Go(func() {
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.exited:
				if d.err != nil {
					t.Errorf("daemon %d exit after SIGTERM: %v\n%s", i, d.err, tail(d.output.String(), 30))
				}
			case <-time.After(60 * time.Second):
				t.Errorf("daemon %d did not stop within 60s of SIGTERM", i)
			}
		})
	}
	wg.Wait()
}

// scalar runs a counting query; -1 when it fails.
func scalar(pool *pgxpool.Pool, query string, args ...any) int {
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		return -1
	}
	return n
}

// TestChaosSlackOutage: Slack fails for a while in every way at once —
// 503s and 500s, 429s with Retry-After, connections dropped after the post
// was taken, 503s and internal_error after it was taken, failing searches
// and edits — while two daemons open tickets and escalate them; then it
// recovers. Every ticket event's message arrives exactly once: none lost,
// none posted twice although Slack had taken some of them during the
// outage without saying so.
func TestChaosSlackOutage(t *testing.T) {
	skipLong(t)
	t.Parallel()
	dbURL := clusterDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	var keys []string
	for i := range 48 {
		keys = append(keys, fmt.Sprintf("%s-%03d", []string{"found-p", "none-p", "two-p", "mism-p"}[i%4], i))
	}
	seedOps(t, pool, chaosWorkflows, keys)
	provider := newFakeProvider(t, 0)
	slack := slackfake.New(t)
	outage := map[string][]slackfake.Fault{
		"chat.postMessage": {
			{Status: http.StatusServiceUnavailable},
			{Status: http.StatusTooManyRequests, RetryAfter: "1"},
			{Drop: true},
			{Status: http.StatusServiceUnavailable, Apply: true},
			{Error: "internal_error", Apply: true},
			{Status: http.StatusInternalServerError},
		},
		"chat.update": {
			{Status: http.StatusServiceUnavailable},
			{Status: http.StatusTooManyRequests, RetryAfter: "1"},
			{Drop: true},
		},
		// Searches sometimes answer (Apply: a normal answer), so that some
		// messages Slack took are found and adopted during the outage.
		"conversations.history": {
			{Status: http.StatusServiceUnavailable},
			{Apply: true},
			{Status: http.StatusTooManyRequests, RetryAfter: "1"},
			{Apply: true, Delay: 200 * time.Millisecond},
		},
		"conversations.replies": {
			{Status: http.StatusServiceUnavailable},
			{Apply: true},
			{Drop: true},
		},
	}
	for method, faults := range outage {
		slack.Rotate(method, faults...)
	}
	outageStart := time.Now()
	cfgFile := writeConfig(t, chaosConfig(provider.URL(), slack.URL()))
	daemons, output := startOutageDaemons(t, 2, cfgFile, dbURL)

	waitUntil(t, "tickets opened", 2*time.Minute, func() string {
		if n := scalar(pool, `SELECT count(*) FROM ledger.operations WHERE status = 'pending'`); n != 0 {
			return fmt.Sprintf("%d operations pending", n)
		}
		return ""
	}, output)
	// Escalate every ticket once, during the outage, so that replies and
	// root edits are owed too.
	waitUntil(t, "tickets escalated", 2*time.Minute, func() string {
		_ = execAsSweeper(context.Background(), pool, `UPDATE sweeper.tickets SET deadline = now() - interval '1 second'
			WHERE state = 'open' AND escalation_level = 0 AND deadline > now()`)
		if n := scalar(pool, `SELECT count(*) FROM sweeper.tickets WHERE escalation_level = 0`); n != 0 {
			return fmt.Sprintf("%d tickets at level 0", n)
		}
		return ""
	}, output)
	// The outage lasts until every kind of fault was served, and at least
	// fifteen seconds.
	waitUntil(t, "every kind of fault served", 2*time.Minute, func() string {
		seen := map[string]bool{}
		for _, c := range slack.Calls("") {
			switch {
			case c.Status == 0 && c.Error == "":
				seen["dropped"] = true
			case c.Status == http.StatusTooManyRequests:
				seen["429"] = true
			case c.Status >= 500:
				seen["5xx"] = true
			case c.Error == "internal_error":
				seen["internal_error"] = true
			}
		}
		if len(seen) < 4 || time.Since(outageStart) < 15*time.Second {
			return fmt.Sprintf("faults served so far: %v", seen)
		}
		return ""
	}, output)
	during := len(slack.Messages())
	slack.Clear()
	recovered := time.Now()
	t.Logf("outage of %s: %d calls, %d messages Slack took meanwhile", recovered.Sub(outageStart).Round(time.Second),
		len(slack.Calls("")), during)

	waitUntil(t, "outbox drained after the outage", 3*time.Minute, func() string {
		var pending, parked int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE state = 'pending'),
			count(*) FILTER (WHERE state = 'parked') FROM sweeper.outbox`).Scan(&pending, &parked); err != nil {
			return err.Error()
		}
		if parked > 0 {
			t.Fatalf("%d outbox rows parked: no fault in this outage is permanent", parked)
		}
		if pending > 0 {
			return fmt.Sprintf("%d outbox rows pending", pending)
		}
		return ""
	}, output)
	t.Logf("drained %s after recovery; %d messages", time.Since(recovered).Round(time.Second), len(slack.Messages()))
	stopDaemons(t, daemons)

	var events, adopted int
	if err := pool.QueryRow(context.Background(), `SELECT count(*),
		count(*) FILTER (WHERE history @> '[{"event": "uncertain"}]') FROM sweeper.outbox`).Scan(&events, &adopted); err != nil {
		t.Fatal(err)
	}
	// Three of four operations get a ticket, each opened and escalated at
	// least (the next step, "exhausted", may come a minute later).
	if events < 48/4*3*2 {
		t.Errorf("%d ticket events, want at least %d", events, 48/4*3*2)
	}
	t.Logf("%d outbox rows had an attempt with an unknown result", adopted)
	checkSlack(t, pool, slack)
	if n := provider.nonGets.Load(); n != 0 {
		t.Errorf("the provider received %d requests that were not lookups (I1)", n)
	}
}

// TestChaosProviderOutage: the provider stops answering (every lookup
// outlasts lookup_timeout) while two daemons settle operations of two
// providers: "mail", whose lookup_budget is short, and "pay", whose budget
// is long. During the outage nothing becomes done; mail's operations —
// even those the provider would have found — become lookup_failed tickets
// once the budget is spent; pay's wait, retried. After the provider
// recovers, pay's operations settle by its answers. None is lost.
func TestChaosProviderOutage(t *testing.T) {
	skipLong(t)
	t.Parallel()
	dbURL := clusterDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	recordTransitions(t, pool)
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprintf("%s-%03d", []string{"found-m", "none-m", "two-m", "flaky-p", "late-p"}[i%5], i))
	}
	seedOps(t, pool, chaosWorkflows, keys)
	provider := newFakeProvider(t, 2500*time.Millisecond) // lookup_timeout is 1s
	provider.stalled.Store(true)
	slack := slackfake.New(t)
	cfgFile := writeConfig(t, chaosConfig(provider.URL(), slack.URL()))
	outageStart := time.Now()
	daemons, output := startOutageDaemons(t, 2, cfgFile, dbURL)

	// The outage lasts until mail's budget is spent on every operation, and
	// at least ten seconds.
	waitUntil(t, "mail's operations given up on", 2*time.Minute, func() string {
		if n := scalar(pool, `SELECT count(*) FROM ledger.operations WHERE status = 'done'`); n != 0 {
			t.Fatalf("%d operations done while the provider answered nothing", n)
		}
		n := scalar(pool, `SELECT count(*) FROM ledger.operations WHERE provider = 'mail' AND status = 'pending'`)
		if n != 0 || time.Since(outageStart) < 10*time.Second {
			return fmt.Sprintf("%d of mail's operations pending", n)
		}
		return ""
	}, output)
	if n := scalar(pool, `SELECT count(*) FROM ledger.operations WHERE provider = 'pay' AND status <> 'pending'`); n != 0 {
		t.Errorf("%d of pay's operations settled during the outage; its lookup_budget is 10m", n)
	}
	for _, k := range keys {
		if providerOf(k) == "pay" && provider.Calls(k) == 0 {
			t.Errorf("%s was never looked up during the outage", k)
		}
	}
	provider.stalled.Store(false)
	recovered := time.Now()

	waitUntil(t, "pay's operations settled after the outage", 3*time.Minute, func() string {
		if n := scalar(pool, `SELECT count(*) FROM ledger.operations WHERE status = 'pending'`); n != 0 {
			return fmt.Sprintf("%d operations pending", n)
		}
		return ""
	}, output)
	t.Logf("outage of %s; settled %s after recovery", recovered.Sub(outageStart).Round(time.Second), time.Since(recovered).Round(time.Second))
	waitUntil(t, "outbox drained", 2*time.Minute, func() string {
		if n := scalar(pool, `SELECT count(*) FROM sweeper.outbox WHERE state <> 'sent'`); n != 0 {
			return fmt.Sprintf("%d outbox rows unsent", n)
		}
		return ""
	}, output)
	stopDaemons(t, daemons)

	for _, k := range keys {
		want := "review lookup_failed pending>review 1"
		switch classOf(k).prefix {
		case classFlaky.prefix:
			want = "done  pending>done 0"
		case classLate.prefix:
			want = "review not_found pending>review 1"
		}
		var status, reason, transitions string
		var tickets, early int
		err := pool.QueryRow(context.Background(), `SELECT o.status, coalesce(min(t.reason), ''), count(t.id),
			coalesce((SELECT string_agg(c.from_status || '>' || c.to_status, ',' ORDER BY c.id) FROM public.chaos_transitions c WHERE c.op_key = o.op_key), ''),
			(SELECT count(*) FROM public.chaos_transitions c WHERE c.op_key = o.op_key AND c.to_status = 'done' AND c.at < $2)
			FROM ledger.operations o LEFT JOIN sweeper.tickets t ON t.operation_id = o.id
			WHERE o.op_key = $1 GROUP BY o.id`, k, recovered).Scan(&status, &reason, &tickets, &transitions, &early)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%s %s %s %d", status, reason, transitions, tickets); got != want || early != 0 {
			t.Errorf("%s: %s (done during the outage: %d); want %s", k, got, early, want)
		}
	}
	checkSlack(t, pool, slack)
	if n := provider.nonGets.Load(); n != 0 {
		t.Errorf("the provider received %d requests that were not lookups (I1)", n)
	}
}
