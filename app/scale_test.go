package app_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// The shape of a real ledger, scaled to what a test run can build in
// seconds: settled history under a thin layer of pending and review rows.
// -scale.full (make scale) runs TestBigLedgerCostsWhatIsUnsettled on a
// million rows; make test on a quarter of that history, where reading it
// is still several times what any path may read.
var scaleFull = flag.Bool("scale.full", false, "TestBigLedgerCostsWhatIsUnsettled on a million-row ledger (make scale)")

// scaleHistory is the settled history, done and failed, two providers.
func scaleHistory() int {
	if *scaleFull {
		return 989_000
	}
	return 239_000
}

const (
	scalePending = 10_000  // stale pending, both providers
	scaleReview  = 1_000   // in review, each with an open ticket
	scaleRecent  = 20_000  // of the history, settled within the last half hour
	scaleJobs    = 200_000 // River's completed jobs, kept for a day
)

// scaleFill builds the big ledger in a database of the test's own:
// set-based inserts with the triggers off (the rows are valid as written),
// then the caller runs VACUUM ANALYZE, as autovacuum would have. Payload
// hashes repeat across the history (50 distinct), so a look-alike check
// whose hash matches twenty thousand settled rows still reads only the
// unsettled ones.
func scaleFill() []struct {
	sql  string
	args []any
} {
	return []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ledger.operations (op_key, workflow, provider, action, recipient, payload_hash, status,
		first_attempt_at, last_attempt_at, provider_record_id, created_at, updated_at)
	SELECT 'h-' || i, 'wf', CASE WHEN i % 2 = 0 THEN 'sim' ELSE 'mailer' END, 'send',
		'user' || (i % 1000) || '@example.com', encode(sha256(('p' || (i % 50))::bytea), 'hex'),
		CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'done' END,
		t, t, CASE WHEN i % 10 = 0 THEN NULL ELSE 'rec-' || i END, t,
		CASE WHEN i > $1::int - $2::int THEN now() - (i % 1800) * interval '1 second' ELSE t + interval '1 minute' END
	FROM generate_series(1, $1::int) AS i,
		LATERAL (SELECT now() - interval '90 days' + i * interval '3 seconds') AS a(t)`, []any{scaleHistory(), scaleRecent}},
		{`INSERT INTO ledger.operations (op_key, workflow, provider, action, recipient, payload_hash, status,
		first_attempt_at, last_attempt_at, created_at, updated_at)
	SELECT 'p-' || i, 'wf', CASE WHEN i % 2 = 0 THEN 'sim' ELSE 'mailer' END, 'send',
		'user' || (i % 1000) || '@example.com', encode(sha256(('p' || (i % 50))::bytea), 'hex'), 'pending',
		now() - interval '20 minutes' - i * interval '1 second', now() - interval '20 minutes', now() - interval '2 hours', now() - interval '2 hours'
	FROM generate_series(1, $1::int) AS i`, []any{scalePending}},
		{`INSERT INTO ledger.operations (op_key, workflow, provider, action, recipient, payload_hash, status,
		first_attempt_at, last_attempt_at, created_at, updated_at)
	SELECT 'r-' || i, 'wf', CASE WHEN i % 2 = 0 THEN 'sim' ELSE 'mailer' END, 'send',
		'user' || (i % 1000) || '@example.com', encode(sha256(('p' || (i % 50))::bytea), 'hex'), 'review',
		now() - interval '3 hours', now() - interval '3 hours', now() - interval '3 hours', now() - interval '40 minutes'
	FROM generate_series(1, $1::int) AS i`, []any{scaleReview}},
		{`INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, created_at)
	SELECT id, op_key, CASE WHEN id % 2 = 0 THEN 'not_found' ELSE 'lookup_failed' END, 'U0OWNER', 'normal',
		now() + interval '4 hours', jsonb_build_object('provider', provider), now() - interval '40 minutes'
	FROM ledger.operations WHERE status = 'review'`, nil},
		{`INSERT INTO sweeper.river_job (kind, queue, args, state, attempt, max_attempts, finalized_at, created_at, scheduled_at, attempted_at)
	SELECT 'lookup', 'lookup', '{}', 'completed', 1, 25, now() - (i % 86400) * interval '1 second', now() - interval '1 day',
		now() - interval '1 day', now() - interval '1 day'
	FROM generate_series(1, $1::int) AS i`, []any{scaleJobs}},
		{`INSERT INTO sweeper.river_job (kind, queue, args, state, attempt, max_attempts, created_at, scheduled_at)
	SELECT 'lookup', 'lookup', '{}', 'available', 0, 25, now(), now() FROM generate_series(1, 100)`, nil},
	}
}

// reads is what one transaction read of a table: its sequential scans and
// the rows they read, and the entries its indexes returned (index and
// index-only scans) and the rows fetched through them.
type reads struct {
	SeqScans, SeqRows, IndexEntries, IndexFetched int64
}

func (r reads) rows() int64 { return r.SeqRows + max(r.IndexEntries, r.IndexFetched) }

// readsSoFar reads, from PostgreSQL's per-transaction statistics, what tx
// has read of table so far.
func readsSoFar(t *testing.T, ctx context.Context, tx pgx.Tx, table string) reads {
	t.Helper()
	var r reads
	err := tx.QueryRow(ctx, `SELECT
			coalesce(sum(pg_stat_get_xact_numscans(c.oid)) FILTER (WHERE c.relkind = 'r'), 0),
			coalesce(sum(pg_stat_get_xact_tuples_returned(c.oid)) FILTER (WHERE c.relkind = 'r'), 0),
			coalesce(sum(pg_stat_get_xact_tuples_returned(c.oid)) FILTER (WHERE c.relkind = 'i'), 0),
			coalesce(sum(pg_stat_get_xact_tuples_fetched(c.oid)) FILTER (WHERE c.relkind = 'r'), 0)
		FROM pg_class c
		WHERE c.oid = $1::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = $1::regclass)`,
		table).Scan(&r.SeqScans, &r.SeqRows, &r.IndexEntries, &r.IndexFetched)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan tree.
type planNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

// explain returns the nodes of query's plan, flattened.
func explain(t *testing.T, ctx context.Context, db pgx.Tx, query string, args ...any) []planNode {
	t.Helper()
	var raw []byte
	if err := db.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+query, args...).Scan(&raw); err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	var nodes []planNode
	var walk func(n planNode)
	walk = func(n planNode) {
		nodes = append(nodes, n)
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plans[0].Plan)
	return nodes
}

// TestBigLedgerCostsWhatIsUnsettled: on a ledger of a million rows
// (-scale.full; a quarter of a million otherwise), all but eleven thousand
// settled, and a River table holding a day of
// completed jobs, every path that runs on a timer or on a person's command
// reads what is pending, in review or inside the window it asks about —
// never the history. Each path runs for real in a transaction, and
// PostgreSQL's own per-transaction counters say what it read; the plans of
// the statements that matter are checked too: an index, no sequential scan.
func TestBigLedgerCostsWhatIsUnsettled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	began := time.Now()
	fill, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fill.Rollback(ctx) }()
	if _, err := fill.Exec(ctx, `SET LOCAL session_replication_role = replica; SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
		t.Fatal(err)
	}
	// Building an index once is much faster than growing it row by row:
	// the secondary indexes are dropped for the fill and built after it.
	var rebuild []string
	for _, table := range []string{"ledger.operations", "sweeper.river_job"} {
		rows, err := fill.Query(ctx, `SELECT pg_get_indexdef(i.indexrelid), i.indexrelid::regclass::text FROM pg_index i
			WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`, table)
		if err != nil {
			t.Fatal(err)
		}
		var def, name string
		var drop []string
		if _, err := pgx.ForEachRow(rows, []any{&def, &name}, func() error {
			rebuild, drop = append(rebuild, def), append(drop, name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, name := range drop {
			if _, err := fill.Exec(ctx, "DROP INDEX "+name); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, stmt := range scaleFill() {
		if _, err := fill.Exec(ctx, stmt.sql, stmt.args...); err != nil {
			t.Fatalf("%s: %v", stmt.sql, err)
		}
	}
	for _, def := range rebuild {
		if _, err := fill.Exec(ctx, def); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
	}
	if err := fill.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) ledger.operations, sweeper.tickets, sweeper.river_job`); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled %d operations and %d River jobs in %s", scaleHistory()+scalePending+scaleReview, scaleJobs, time.Since(began).Round(time.Millisecond))

	provs := map[string]*providers.Provider{"sim": fakeProvider("sim", nil, time.Minute), "mailer": fakeProvider("mailer", nil, time.Minute)}
	known := []string{"mailer", "sim"}
	unsettled := int64(scalePending + scaleReview)
	// bound is what a path may read of the ledger: the unsettled rows,
	// twice over (an index's entries and the rows they point to), plus
	// what its window holds.
	for _, tc := range []struct {
		name  string
		table string
		bound int64
		run   func(ctx context.Context, tx pgx.Tx) error
	}{
		{"a full sweep (the stale scan of every provider, the unconfigured and the future-dated)", "ledger.operations", 2 * unsettled,
			func(ctx context.Context, tx pgx.Tx) error {
				s := settle.NewScanner(ledger.Native(), settle.Scanner{DB: tx, Providers: provs, BatchSize: 500, QueryTimeout: time.Minute, Now: time.Now})
				n, err := s.Scan(ctx, func(context.Context, []ledger.Operation) error { return nil })
				if err == nil && n != scalePending {
					err = fmt.Errorf("the sweep handed on %d operations, want %d", n, scalePending)
				}
				return err
			}},
		{"the idle tick (nothing stale yet)", "ledger.operations", 2 * unsettled,
			func(ctx context.Context, tx pgx.Tx) error {
				patient := map[string]*providers.Provider{}
				for _, name := range known {
					patient[name] = providers.NewProvider(name, "fake", nil, providers.Limits{
						StaleAfter: 24 * time.Hour, LookupTimeout: 2 * time.Second, LookupBudget: time.Minute,
						RateLimit: 1000, Concurrency: 10, OutageAfter: 5,
					})
				}
				s := settle.NewScanner(ledger.Native(), settle.Scanner{DB: tx, Providers: patient, BatchSize: 500, QueryTimeout: time.Minute, Now: time.Now})
				n, err := s.Scan(ctx, func(context.Context, []ledger.Operation) error { return nil })
				if err == nil && n != 0 {
					err = fmt.Errorf("the idle tick handed on %d operations, want 0", n)
				}
				return err
			}},
		{"the metrics refresh: the ledger", "ledger.operations", 2 * unsettled,
			func(ctx context.Context, tx pgx.Tx) error {
				st, err := ledger.NewStore(tx, ledger.Native()).Stats(ctx, known, metrics.UnconfiguredProvider)
				if err != nil {
					return err
				}
				var pending, review, settled int64
				for _, n := range st.Operations {
					switch n.Status {
					case ledger.StatusPending:
						pending += n.Count
					case ledger.StatusReview:
						review += n.Count
					}
				}
				for _, n := range st.Settled {
					settled += n.Count
				}
				if pending != scalePending || review != scaleReview {
					return fmt.Errorf("stats count %d pending and %d in review, want %d and %d", pending, review, scalePending, scaleReview)
				}
				if h := int64(scaleHistory()); settled < h*9/10 || settled > h*11/10 {
					return fmt.Errorf("the settled estimate is %d, want about %d", settled, scaleHistory())
				}
				return nil
			}},
		{"the metrics refresh: River's jobs", "sweeper.river_job", 1_000,
			func(ctx context.Context, tx pgx.Tx) error {
				counts, err := jobs.CountJobs(ctx, tx)
				if err != nil {
					return err
				}
				var total int64
				for _, c := range counts {
					total += c.Count
					if c.Count != 0 && (c.Queue != jobs.QueueLookup || c.State != "available") {
						return fmt.Errorf("River's jobs: %v, want 100 lookup jobs available and the rest 0", counts)
					}
				}
				if total != 100 {
					return fmt.Errorf("River's jobs: %v, want 100 lookup jobs available", counts)
				}
				return nil
			}},
		{"the metrics refresh: open tickets and the outbox", "ledger.operations", 0,
			func(ctx context.Context, tx pgx.Tx) error {
				if _, err := review.NewReader(tx, ledger.Native()).OpenCounts(ctx); err != nil {
					return err
				}
				_, err := outbox.NewStore(tx).Stats(ctx)
				return err
			}},
		{"an incident's counts (settled since it began, pending, tickets opened)", "ledger.operations", 2*unsettled + scaleRecent,
			func(ctx context.Context, tx pgx.Tx) error {
				settled, pending, err := ledger.NewStore(tx, ledger.Native()).Backlog(ctx, "sim", time.Now().Add(-time.Hour), time.Time{})
				if err != nil {
					return err
				}
				if settled != scaleRecent/2 || pending != scalePending/2 {
					return fmt.Errorf("backlog of sim: %d settled, %d pending; want %d and %d", settled, pending, scaleRecent/2, scalePending/2)
				}
				opened, err := review.NewReader(tx, ledger.Native()).OpenedSince(ctx, "sim", time.Now().Add(-time.Hour), time.Time{})
				if err == nil && opened != scaleReview/2 {
					err = fmt.Errorf("tickets of sim opened in the hour: %d, want %d", opened, scaleReview/2)
				}
				return err
			}},
		{"sweeper providers", "ledger.operations", 2 * unsettled,
			func(ctx context.Context, tx pgx.Tx) error {
				for _, name := range known {
					n, err := ledger.NewStore(tx, ledger.Native()).CountPending(ctx, name)
					if err != nil {
						return err
					}
					if n != scalePending/2 {
						return fmt.Errorf("%s: %d pending, want %d", name, n, scalePending/2)
					}
					if _, err := review.NewReader(tx, ledger.Native()).CountOpen(ctx, name, proof.ReasonLookupFailed); err != nil {
						return err
					}
				}
				return nil
			}},
		{"sweeper tickets list", "ledger.operations", 0,
			func(ctx context.Context, tx pgx.Tx) error {
				list, err := review.NewStore(tx, ledger.Native(), review.Policy{}).List(ctx, review.ListFilter{State: "open", Limit: 51})
				if err == nil && len(list) != 51 {
					err = fmt.Errorf("tickets list: %d tickets, want 51", len(list))
				}
				return err
			}},
		{"the look-alike check (a hash twenty thousand settled rows share)", "ledger.operations", 2 * unsettled / 50,
			func(ctx context.Context, tx pgx.Tx) error {
				var hash string
				if err := tx.QueryRow(ctx, `SELECT encode(sha256('p7'::bytea), 'hex')`).Scan(&hash); err != nil {
					return err
				}
				ops, err := ledger.NewStore(tx, ledger.Native()).Lookalikes(ctx, "mailer", hash, 0, time.Now().Add(-20*time.Minute),
					24*time.Hour, 24*time.Hour, "user7@example.com", false)
				if err == nil && len(ops) == 0 {
					err = fmt.Errorf("no look-alike found among the pending rows")
				}
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			before := readsSoFar(t, ctx, tx, tc.table)
			if err := tc.run(ctx, tx); err != nil {
				t.Fatal(err)
			}
			after := readsSoFar(t, ctx, tx, tc.table)
			got := reads{after.SeqScans - before.SeqScans, after.SeqRows - before.SeqRows,
				after.IndexEntries - before.IndexEntries, after.IndexFetched - before.IndexFetched}
			if got.SeqScans != 0 || got.rows() > tc.bound {
				t.Errorf("read %s: %+v; want no sequential scan and at most %d rows", tc.table, got, tc.bound)
			}
		})
	}

	// The statements that matter, as planned for this ledger: an index
	// each, never a sequential scan of the history.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	negInf := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for _, q := range []struct {
		name  string
		query string
		args  []any
		index string
	}{
		{"stale scan", ledger.Native().StalePendingQuery(), []any{"sim", time.Now().Add(-10 * time.Minute), negInf, int64(0), 500}, "operations_pending_stale_idx"},
		{"unsettled counts", ledger.Native().UnsettledCountsQuery(), []any{known, metrics.UnconfiguredProvider}, "operations_review_idx"},
		{"unsettled counts", ledger.Native().UnsettledCountsQuery(), []any{known, metrics.UnconfiguredProvider}, "operations_pending_stale_idx"},
		{"oldest pending", ledger.Native().OldestPendingQuery(), []any{known, metrics.UnconfiguredProvider}, "operations_pending_stale_idx"},
		{"incident backlog", ledger.Native().BacklogQuery(), []any{"sim", time.Now().Add(-time.Hour), nil}, "operations_settled_idx"},
		{"look-alikes", ledger.Native().LookalikesQuery(), []any{"sim", strings.Repeat("a", 64), int64(0), time.Now(), 24 * time.Hour, 24 * time.Hour, "user7@example.com", false, 1000}, "operations_lookalike_idx"},
		{"River's jobs", jobs.CountJobsQuery, nil, "river_job_prioritized_fetching_index"},
	} {
		nodes := explain(t, ctx, tx, q.query, q.args...)
		var indexes []string
		for _, n := range nodes {
			if n.NodeType == "Seq Scan" && (n.Relation == "operations" || n.Relation == "river_job") {
				t.Errorf("%s: a sequential scan of %s", q.name, n.Relation)
			}
			if n.Index != "" {
				indexes = append(indexes, n.Index)
			}
		}
		if !slices.Contains(indexes, q.index) {
			t.Errorf("%s: the plan reads indexes %v, want %s", q.name, indexes, q.index)
		}
	}
}
