package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/web"
)

// benchOpen is how many open tickets BenchmarkQueuePage seeds: each page
// of the queue must answer in under 100 ms server-side with this many.
const benchOpen = 10_000

// BenchmarkQueuePage serves whole queue pages — every query, the facet
// counts, the silence marks and the template — over 10,000 open tickets
// (and 1,000 resolved; 8 providers, 40 owners, 12 workflows, a third
// acknowledged, one active silence) from a real PostgreSQL, and reports
// each view's ms per page. Reproduce with
//
//	go test -run '^$' -bench BenchmarkQueuePage -benchtime 50x ./web/
//
// Figures are reported, not asserted: the machine decides them.
func BenchmarkQueuePage(b *testing.B) {
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
		SELECT 'password-resets-' || i, 'wf-' || (i % 12), 'prov-' || (i % 8), 'send', 'r' || i || '@example.com',
			repeat('a', 64), 'review', now() - (i % 1000) * interval '1 minute'
		FROM generate_series(1, $1) AS i`,
		`INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, escalation_level, escalation_exhausted)
		SELECT o.id, o.op_key, (ARRAY['not_found','multiple_matches','payload_mismatch','lookup_failed'])[1 + o.id % 4],
			'U0OWNER' || (o.id % 40), (ARRAY['low','normal','high','urgent'])[1 + o.id % 4],
			now() + ((o.id * 7919) % 10000 - 5000) * interval '1 minute',
			jsonb_build_object('op_key', o.op_key, 'provider', o.provider, 'workflow', o.workflow,
				'records', jsonb_build_array(jsonb_build_object('id', 'rec-' || o.id)),
				'recipient_masked', 'r***@***.com', 'payload_hash', o.payload_hash),
			(o.id % 3)::integer, o.id % 10 = 0
		FROM ledger.operations o WHERE o.op_key LIKE 'password-resets-%'`,
		`UPDATE sweeper.tickets SET acknowledged_by = owner, acknowledged_at = now(), acknowledged_level = 0 WHERE id % 3 = 0`,
	} {
		args := []any{}
		if strings.Contains(stmt, "$1") {
			args = append(args, benchOpen*11/10)
		}
		if _, err := tx.Exec(ctx, stmt, args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE sweeper.tickets SET state = 'resolved', resolution = 'not_sent',
		resolved_by = 'slack:U0OWNER' || (id % 40), resolved_at = now() - (id % 500) * interval '1 minute'
		WHERE id % 11 = 5`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE sweeper.tickets`); err != nil {
		b.Fatal(err)
	}
	var open int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.tickets WHERE state = 'open'`).Scan(&open); err != nil {
		b.Fatal(err)
	}
	messages := silence.NewStore(pool)
	m, err := silence.ParseMatcher("provider=prov-3")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := messages.Add(ctx, silence.NewSilence{Matchers: []silence.Matcher{m}, EndsAt: time.Now().Add(time.Hour),
		CreatedBy: "U0LEAD", Comment: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d open tickets in %s", open, time.Since(start).Round(time.Millisecond))

	h, err := web.New(web.Config{
		Store: review.NewStore(pool, ledger.Native(), policy), Reader: review.NewReader(pool, ledger.Native()), Deciders: review.NewDeciders([]string{lead}),
		Users: map[string]string{"lead@example.com": lead, "owner7@example.com": "U0OWNER7"}, ProxyHeader: "X-Forwarded-Email",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, CookieKey: []byte(strings.Repeat("k", 32)),
		ActiveSilences: func(ctx context.Context) ([]web.ListedSilence, error) {
			list, err := messages.List(ctx, silence.Filter{States: []string{silence.Active}, Limit: 50})
			out := make([]web.ListedSilence, 0, len(list))
			for _, si := range list {
				out = append(out, web.ListedSilence{ID: si.ID, EndsAt: si.EndsAt, CreatedBy: si.CreatedBy, Comment: si.Comment})
			}
			return out, err
		},
		HeldBy: messages.HeldBy,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, email, query string }{
		{"needs_me_reviewer", "lead@example.com", "view=needs"},
		{"needs_me_owner", "owner7@example.com", "view=needs"},
		{"unacknowledged", "lead@example.com", "view=unacknowledged"},
		{"overdue", "lead@example.com", "view=overdue"},
		{"mine", "owner7@example.com", "view=mine"},
		{"all_open", "lead@example.com", "view=open"},
		{"all_open_page_100", "lead@example.com", "view=open&page=100"},
		{"all_open_by_age", "lead@example.com", "view=open&sort=age"},
		{"all_open_by_priority", "lead@example.com", "view=open&sort=priority"},
		{"all_open_search_op_key", "lead@example.com", "view=open&q=password-resets-4242"},
		{"all_open_search_record_id", "lead@example.com", "view=open&q=rec-4242"},
		{"provider_silenced", "lead@example.com", "view=open&provider=prov-3"},
		{"resolved", "lead@example.com", "view=resolved"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, "http://review.example.com/review/?"+bc.query, nil)
				r.RemoteAddr = "10.1.2.3:5555"
				r.Header.Set("X-Forwarded-Email", bc.email)
				w := httptest.NewRecorder()
				began := time.Now()
				h.ServeHTTP(w, r)
				total += time.Since(began)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d:\n%s", w.Code, w.Body.String())
				}
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/page")
			b.ReportMetric(0, "ns/op")
		})
	}
}
