package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

var toilFull = flag.Bool("toil.full", false, "TestToil at full size: 1,000 operations (make toil)")

// toilProvider is an HTTP provider that is down (503) for its first outage,
// then holds the held-* records, the lag-* records from lagBy after their
// first answered lookup, and never the gone-* ones. Any request that is not
// a GET is counted and refused.
type toilProvider struct {
	srv     *httptest.Server
	hash    string
	upAt    time.Time
	lagBy   time.Duration
	nonGets atomic.Int64

	mu    sync.Mutex
	first map[string]time.Time // lag-*: first answered lookup
}

func newToilProvider(t *testing.T, outage, lagBy time.Duration) *toilProvider {
	hash, err := ledger.PayloadHash([]byte(chaosPayload))
	if err != nil {
		t.Fatal(err)
	}
	p := &toilProvider{hash: hash, upAt: time.Now().Add(outage), lagBy: lagBy, first: map[string]time.Time{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *toilProvider) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		p.nonGets.Add(1)
		http.Error(w, "this provider only answers lookups", http.StatusMethodNotAllowed)
		return
	}
	if time.Now().Before(p.upAt) {
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	key := q.Get("op_key")
	held := strings.HasPrefix(key, "held-")
	if strings.HasPrefix(key, "lag-") {
		p.mu.Lock()
		first, seen := p.first[key]
		if !seen {
			first = time.Now()
			p.first[key] = first
		}
		p.mu.Unlock()
		held = time.Since(first) >= p.lagBy
	}
	matches := []map[string]string{}
	if held {
		matches = append(matches, map[string]string{"id": "rec-" + key,
			"created_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
			"recipient":  q.Get("recipient"), "payload_hash": p.hash})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"matches": matches})
}

// TestToil measures what a provider outage costs people: stale operations
// over an HTTP provider that answers 503 for its first 45 s, of which some
// it holds, some it holds only 40 s after their first lookup, some never
// (20 s and 15 s at CI size);
// one `sweeper run`, defaults but for the budget and rate limit asked for
// and a sweep every 10 s (the default, every five minutes, would make the
// run wait for its first sweep). It checks that every provable operation
// is done within five minutes of recovery with no ticket left open, that
// the held ones opened almost no ticket, that the others are in review as
// not_found, that Slack got few root messages, and that the provider got
// only GETs. -toil.full runs 1,000 operations (600/200/200); otherwise a
// fifth of that.
func TestToil(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of several minutes with a real daemon")
	}
	// Mostly waiting on the daemon's sweeps and Slack's pace, with a
	// database of its own: it runs beside the package's other tests, and
	// its bounds (within five minutes of recovery) hold under their load.
	t.Parallel()
	// At CI size the outage and the lag are shorter, and open tickets are
	// looked up again from 20 s after their opening, checked every 10 s,
	// rather than from a minute, checked on the minute (the defaults): the
	// same story in about half the time. -toil.full measures the defaults.
	held, lag, gone := 120, 40, 40
	outage, lagBy, relookup, escalate := 20*time.Second, 15*time.Second, "20s", "@every 10s"
	if *toilFull {
		held, lag, gone = 600, 200, 200
		outage, lagBy, relookup, escalate = 45*time.Second, 40*time.Second, "1m", "* * * * *"
	}
	dbURL := clusterDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	hash, err := ledger.PayloadHash([]byte(chaosPayload))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	at := time.Now().Add(-2 * time.Hour)
	for _, c := range []struct {
		prefix string
		n      int
	}{{"held", held}, {"lag", lag}, {"gone", gone}} {
		for i := range c.n {
			rows = append(rows, []any{fmt.Sprintf("%s-%04d", c.prefix, i), "receipts", "acme", "send_email",
				chaosRecipient, hash, chaosPayload, at, at})
		}
	}
	if _, err := pool.CopyFrom(context.Background(), pgx.Identifier{"ledger", "operations"},
		[]string{"op_key", "workflow", "provider", "action", "recipient", "payload_hash", "payload", "first_attempt_at", "last_attempt_at"},
		pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}

	provider := newToilProvider(t, outage, lagBy)
	slack := slackfake.New(t)
	cfgFile := writeConfig(t, fmt.Sprintf(`
[database]
url = "postgres://unused"

[schedules]
sweep = "@every 10s"
escalate = %q

[review]
default_owner = "U0DEFAULT1"
relookup_after = %q

[slack]
channel = "C0TOIL0001"
api_url = %q

[http]
listen = "127.0.0.1:0"

[providers.acme]
kind = "http"
url = %q
lookup_budget = "30s"
rate_limit = 20.0
`, escalate, relookup, slack.URL(), provider.srv.URL+"/lookup"))
	start := time.Now()
	daemons, output := startOutageDaemons(t, 1, cfgFile, dbURL)

	provable := `o.op_key LIKE 'held-%' OR o.op_key LIKE 'lag-%'`
	var settled time.Time
	waitUntil(t, "every provable operation done, none of their tickets open, the rest in review", outage+6*time.Minute, func() string {
		if n := scalar(pool, `SELECT count(*) FROM ledger.operations o WHERE (`+provable+`) AND o.status <> 'done'`); n != 0 {
			return fmt.Sprintf("%d provable operations not done", n)
		}
		if n := scalar(pool, `SELECT count(*) FROM sweeper.tickets t JOIN ledger.operations o ON o.id = t.operation_id
			WHERE (`+provable+`) AND t.state = 'open'`); n != 0 {
			return fmt.Sprintf("%d of their tickets open", n)
		}
		if n := scalar(pool, `SELECT count(*) FROM ledger.operations o WHERE o.op_key LIKE 'gone-%' AND o.status <> 'review'`); n != 0 {
			return fmt.Sprintf("%d operations the provider never held not in review", n)
		}
		return ""
	}, output)
	settled = time.Now()
	// The last Slack messages: every ticket's alert posted or folded into
	// its group (so that the count of root messages below means something
	// at any size), the incident's end, the group's messages.
	waitUntil(t, "every ticket's alert posted or folded", 2*time.Minute, func() string {
		if n := scalar(pool, `SELECT count(*) FROM sweeper.outbox WHERE kind = 'opened' AND state = 'pending'`); n != 0 {
			return fmt.Sprintf("%d ticket alerts unsent", n)
		}
		return ""
	}, output)
	waitUntil(t, "incident and group messages delivered", 2*time.Minute, func() string {
		if n := scalar(pool, `SELECT count(*) FROM sweeper.outbox WHERE ticket_id IS NULL AND state <> 'sent'`); n != 0 {
			return fmt.Sprintf("%d incident or group rows unsent", n)
		}
		return ""
	}, output)
	stopDaemons(t, daemons)

	recovered := provider.upAt
	afterRecovery := settled.Sub(recovered)
	if afterRecovery > 5*time.Minute {
		t.Errorf("the provable operations were done %s after the provider recovered, want within 5m", afterRecovery.Round(time.Second))
	}
	heldTickets := scalar(pool, `SELECT count(*) FROM sweeper.tickets t JOIN ledger.operations o ON o.id = t.operation_id WHERE o.op_key LIKE 'held-%'`)
	if heldTickets*50 > held {
		t.Errorf("%d tickets opened for the %d operations held from the start, want at most 2%%", heldTickets, held)
	}
	lagTickets := scalar(pool, `SELECT count(*) FROM sweeper.tickets t JOIN ledger.operations o ON o.id = t.operation_id WHERE o.op_key LIKE 'lag-%'`)
	if n := scalar(pool, `SELECT count(*) FROM ledger.operations o JOIN sweeper.tickets t ON t.operation_id = o.id
		WHERE o.op_key LIKE 'gone-%' AND o.status = 'review' AND t.reason = 'not_found'`); n != gone {
		t.Errorf("%d of the %d operations the provider never held in review as not_found", n, gone)
	}
	if n := scalar(pool, `SELECT count(*) FROM ledger.operations o WHERE o.op_key LIKE 'gone-%' AND o.status = 'done'`); n != 0 {
		t.Errorf("%d operations the provider never held marked done", n)
	}
	roots, messages := 0, slack.Messages()
	for _, m := range messages {
		if m.ThreadTS == "" || m.ThreadTS == m.TS {
			roots++
		}
	}
	if roots > 30 {
		t.Errorf("%d root messages in Slack, want at most 30", roots)
	}
	if n := provider.nonGets.Load(); n != 0 {
		t.Errorf("the provider received %d requests other than GET", n)
	}
	incidents := scalar(pool, `SELECT count(*) FROM sweeper.incidents`)
	skipped := scalar(pool, `SELECT count(*) FROM sweeper.outbox WHERE state = 'skipped'`)
	folded := scalar(pool, `SELECT count(*) FROM sweeper.outbox WHERE state = 'folded'`)
	pending := scalar(pool, `SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`)
	t.Logf("toil: %d operations (%d held, %d lagging %s, %d never held); provider down for %s; "+
		"provable ones done %s after recovery (%s after start); tickets: %d for held, %d for lagging (all resolved by re-lookup), %d for never held; "+
		"Slack: %d root messages, %d messages in all, %d incident(s), %d outbox rows skipped, %d folded into their alert group, %d still pending at the end (thread replies, paced at 1/s)",
		held+lag+gone, held, lag, provider.lagBy, gone, recovered.Sub(start).Round(time.Second),
		afterRecovery.Round(time.Second), settled.Sub(start).Round(time.Second), heldTickets, lagTickets, gone,
		roots, len(messages), incidents, skipped, folded, pending)
}
