package review_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// priorityRankSQL is review's priority order key, as its index has it.
const priorityRankSQL = `(CASE priority WHEN 'urgent' THEN 3 WHEN 'high' THEN 2 WHEN 'normal' THEN 1 ELSE 0 END)`

// benchTickets is how many tickets BenchmarkQueue seeds: the review page
// must stay fast with this many in the table.
const benchTickets = 100_000

// BenchmarkQueue measures the review page's queries over 100,000 tickets
// (90% open, over 8 providers, 40 owners, 12 workflows, a tenth of them
// with their escalation exhausted), and logs each query's plan, which
// shows the index it uses. Reproduce with
//
//	go test -run '^$' -bench BenchmarkQueue -benchtime 200x ./review/
//
// Figures are printed, not asserted: the machine decides them.
func BenchmarkQueue(b *testing.B) {
	ctx := context.Background()
	pool := dbtest.NewPool(b)
	start := time.Now()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, stmt := range []string{
		`SET LOCAL sweeper.writer = 'sweeper'`,
		`INSERT INTO ledger.operations (op_key, workflow, provider, action, recipient, payload_hash, status, first_attempt_at)
		SELECT 'bench-' || i, 'wf-' || (i % 12), 'prov-' || (i % 8), 'send', 'r' || i || '@example.com',
			repeat('a', 64), 'review', now() - (i % 1000) * interval '1 minute'
		FROM generate_series(1, $1) AS i`,
		`INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, escalation_level, escalation_exhausted)
		SELECT o.id, o.op_key, (ARRAY['not_found','multiple_matches','payload_mismatch','lookup_failed'])[1 + o.id % 4],
			'U0OWNER' || (o.id % 40), (ARRAY['low','normal','high','urgent'])[1 + o.id % 4],
			now() + ((o.id * 7919) % 10000 - 5000) * interval '1 minute',
			jsonb_build_object('op_key', o.op_key, 'provider', o.provider, 'workflow', o.workflow, 'records', '[]'::jsonb,
				'recipient_masked', 'r***@***.com', 'payload_hash', o.payload_hash),
			(o.id % 3)::integer, o.id % 10 = 0
		FROM ledger.operations o WHERE o.op_key LIKE 'bench-%'`,
	} {
		args := []any{}
		if strings.Contains(stmt, "$1") {
			args = append(args, benchTickets)
		}
		if _, err := tx.Exec(ctx, stmt, args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	// A tenth resolved, as a person would.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.tickets SET state = 'resolved', resolution = 'not_sent',
		resolved_by = 'slack:U0OWNER' || (id % 40), resolved_at = now() - (id % 500) * interval '1 minute'
		WHERE id % 10 = 5`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE sweeper.tickets`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d tickets in %s", benchTickets, time.Since(start).Round(time.Millisecond))

	r := review.NewReader(pool, ledger.Native())
	now := time.Now()
	deep, err := r.Queue(ctx, review.QueueFilter{Limit: 500}, now)
	if err != nil {
		b.Fatal(err)
	}
	level := 1
	for _, bc := range []struct {
		name string
		f    review.QueueFilter
	}{
		{"open_by_deadline", review.QueueFilter{}},
		{"open_by_deadline_page_11", review.QueueFilter{After: deep.Next}},
		{"open_by_age", review.QueueFilter{Sort: review.SortAge}},
		{"open_by_priority", review.QueueFilter{Sort: review.SortPriority}},
		{"provider", review.QueueFilter{Provider: "prov-3"}},
		{"mine", review.QueueFilter{Owner: "U0OWNER7"}},
		{"provider_reason_level_overdue", review.QueueFilter{Provider: "prov-3", Reason: "not_found", Level: &level, Overdue: true}},
		{"resolved", review.QueueFilter{Resolved: true}},
		{"resolved_search", review.QueueFilter{Resolved: true, Search: "bench-4242"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Queue(ctx, bc.f, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("counts_all_open", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := r.QueueCounts(ctx, review.QueueFilter{}, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("counts_provider", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := r.QueueCounts(ctx, review.QueueFilter{Provider: "prov-3"}, now); err != nil {
				b.Fatal(err)
			}
		}
	})

	// The plans, as PostgreSQL runs them here.
	for name, q := range map[string]string{
		"open by deadline (escalating part)": `SELECT id FROM sweeper.tickets WHERE state = 'open' AND NOT escalation_exhausted ORDER BY deadline, id LIMIT 51`,
		"open by deadline (exhausted part)":  `SELECT id FROM sweeper.tickets WHERE state = 'open' AND escalation_exhausted ORDER BY deadline, id LIMIT 51`,
		"open by age":                        `SELECT id FROM sweeper.tickets WHERE state = 'open' ORDER BY created_at, id LIMIT 51`,
		"provider":                           `SELECT id FROM sweeper.tickets WHERE state = 'open' AND evidence->>'provider' = 'prov-3' ORDER BY deadline, id LIMIT 51`,
		"by priority":                        `SELECT id FROM sweeper.tickets WHERE state = 'open' AND priority <> '' ORDER BY -` + priorityRankSQL + `, deadline, id LIMIT 51`,
		"mine":                               `SELECT id FROM sweeper.tickets WHERE state = 'open' AND owner = 'U0OWNER7' AND owner <> '' ORDER BY deadline, id LIMIT 51`,
		"resolved":                           `SELECT id FROM sweeper.tickets WHERE state = 'resolved' ORDER BY resolved_at DESC, id DESC LIMIT 51`,
	} {
		rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) "+q)
		if err != nil {
			b.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				b.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		b.Logf("EXPLAIN %s:\n%s", name, strings.Join(plan, "\n"))
	}
}
