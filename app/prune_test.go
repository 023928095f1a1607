package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// resolvedTicketWithSentRows writes a resolved ticket whose two outbox
// rows were sent an hour ago, and an open one with a sent row, and returns
// their ids.
func resolvedTicketWithSentRows(t *testing.T, b *bundle) (resolved, open int64) {
	t.Helper()
	ctx := context.Background()
	err := b.pool.QueryRow(ctx, `WITH t AS (
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, state, resolution, resolved_by, resolved_at)
		VALUES (-1, 'prune-resolved', 'not_found', 'ops', 'normal', now() + interval '1h', '{}', 'resolved', 'not_sent', 'U1', now() - interval '1h'),
		       (-2, 'prune-open', 'not_found', 'ops', 'normal', now() + interval '1h', '{}', 'open', NULL, NULL, NULL)
		RETURNING id, state)
	SELECT (SELECT id FROM t WHERE state = 'resolved'), (SELECT id FROM t WHERE state = 'open')`).Scan(&resolved, &open)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		VALUES ($1::bigint, 'opened', 'sweeper', 'ticket:' || $1::bigint || ':opened'), ($1::bigint, 'resolved', 'U1', 'ticket:' || $1::bigint || ':resolved'),
		       ($2::bigint, 'opened', 'sweeper', 'ticket:' || $2::bigint || ':opened')`, resolved, open); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE sweeper.outbox SET state = 'sent', sent_at = now() - interval '1h', channel = 'C1', ts = id::text`); err != nil {
		t.Fatal(err)
	}
	return resolved, open
}

func (b *bundle) outboxRows(t *testing.T, ticketID int64) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM sweeper.outbox WHERE ticket_id = $1`, ticketID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrunerRetention: the prune pass keeps a resolved ticket's sent rows
// while they are younger than retention.outbox, deletes them after, a page
// at a time, and keeps an open ticket's rows.
func TestPrunerRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	resolved, open := resolvedTicketWithSentRows(t, b)
	p := b.sweeper.Pruner()
	p.Page = 1
	ctx := context.Background()

	b.sweeper.Config.Retention.Outbox = config.NewDuration(2 * time.Hour)
	if n, err := p.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune within retention = %d, %v; want 0", n, err)
	}
	b.sweeper.Config.Retention.Outbox = config.NewDuration(30 * time.Minute)
	if n, err := p.Prune(ctx); err != nil || n != 2 {
		t.Fatalf("Prune past retention = %d, %v; want the resolved ticket's 2 rows", n, err)
	}
	if r, o := b.outboxRows(t, resolved), b.outboxRows(t, open); r != 0 || o != 1 {
		t.Errorf("outbox rows: resolved ticket %d, open ticket %d; want 0 and 1", r, o)
	}
}

// TestPruneJobRunsOnStart: the daemon's periodic prune job runs on start,
// through River, and prunes.
func TestPruneJobRunsOnStart(t *testing.T) {
	t.Parallel()
	// Once a year: only the runs on start.
	b := setup(t, baseConfig+`
[schedules]
sweep = "0 3 1 1 *"
escalate = "0 3 1 1 *"
prune = "0 3 1 1 *"

[retention]
outbox = "1h"
`, nil)
	resolved, _ := resolvedTicketWithSentRows(t, b)
	// Sent an hour ago and resolved an hour ago: a shade past 1h by the time
	// the job runs.
	ctx := context.Background()
	d, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = d.Stop(stop)
	})
	testwait.Until(t, 30*time.Second, "the prune job completed", func() bool {
		var n int
		_ = b.pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'prune' AND state = 'completed'`).Scan(&n)
		return n > 0
	})
	if n := b.outboxRows(t, resolved); n != 0 {
		t.Errorf("the resolved ticket keeps %d outbox rows after the prune job", n)
	}
}

// TestRiverKeepsFinishedJobsForRetentionJobs: River's cleaner, set from
// retention.jobs, deletes a completed job finished before it and keeps one
// finished since (River's default, 24h, would keep both).
func TestRiverKeepsFinishedJobsForRetentionJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig+`
[retention]
jobs = "1h"
`, nil)
	ctx := context.Background()
	var old, recent int64
	err := b.pool.QueryRow(ctx, `WITH j AS (
		INSERT INTO sweeper.river_job (args, kind, max_attempts, state, attempt, attempted_at, finalized_at, queue)
		VALUES ('{}', 'retention_old', 1, 'completed', 1, now() - interval '2h', now() - interval '2h', 'default'),
		       ('{}', 'retention_recent', 1, 'completed', 1, now() - interval '30m', now() - interval '30m', 'default')
		RETURNING id, kind)
	SELECT (SELECT id FROM j WHERE kind = 'retention_old'), (SELECT id FROM j WHERE kind = 'retention_recent')`).Scan(&old, &recent)
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 50 * time.Millisecond, NoPeriodic: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = d.Stop(stop)
	})
	exists := func(id int64) bool {
		var n int
		_ = b.pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.river_job WHERE id = $1`, id).Scan(&n)
		return n > 0
	}
	testwait.Until(t, 60*time.Second, "River's cleaner deleted the job finished 2h ago", func() bool { return !exists(old) })
	if !exists(recent) {
		t.Error("River deleted the job finished 30 minutes ago, within retention.jobs")
	}
}
