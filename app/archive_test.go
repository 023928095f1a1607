package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

// archiveTicket writes a ticket in state, resolved resolvedAgo ago when
// resolved, with its opened (and resolved) events; their outbox rows are
// made sent, or left in outboxState when it is not "sent".
func archiveTicket(t *testing.T, b *bundle, key, state string, resolvedAgo time.Duration, outboxState string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	var resolution, resolvedBy, resolvedAt any
	if state == "resolved" {
		resolution, resolvedBy, resolvedAt = "not_sent", "U0ANNA", time.Now().Add(-resolvedAgo)
	}
	if err := b.pool.QueryRow(ctx, `INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, state, resolution, resolved_by, resolved_at)
		VALUES (-nextval('sweeper.river_job_id_seq'), $1, 'not_found', 'ops', 'normal', now() + interval '1h', '{"provider":"sim"}', $2, $3, $4, $5)
		RETURNING id`, key, state, resolution, resolvedBy, resolvedAt).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		VALUES ($1::bigint, 'opened', 'sweeper', 'ticket:' || $1::bigint || ':opened')`, id); err != nil {
		t.Fatal(err)
	}
	if state == "resolved" {
		if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
			VALUES ($1::bigint, 'resolved', 'U0ANNA', 'ticket:' || $1::bigint || ':resolved')`, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.pool.Exec(ctx, `UPDATE sweeper.outbox SET state = $2, sent_at = CASE WHEN $2 = 'sent' THEN now() - interval '3h' END,
		channel = 'C1', ts = CASE WHEN $2 = 'sent' THEN id::text END WHERE ticket_id = $1`, id, outboxState); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestArchiveResolvedTickets: with retention.resolved_tickets set, the
// prune pass writes each resolved ticket past it, with its events, to an
// archive file, records the file, and deletes the ticket with its events
// and outbox rows — its alert in an alert group's thread included. A
// ticket resolved since, an open ticket, and a resolved ticket with an
// alert still owed stay whole; every ticket deleted is in a file.
func TestArchiveResolvedTickets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, baseConfig, nil)
	dir := t.TempDir()
	b.sweeper.Config.Retention.Outbox = config.NewDuration(time.Hour)
	b.sweeper.Config.Retention.ResolvedTickets = config.NewDuration(2 * time.Hour)
	b.sweeper.Config.Retention.ArchiveDir = dir

	var due []int64
	for _, k := range []string{"arch-1", "arch-2", "arch-3"} {
		due = append(due, archiveTicket(t, b, k, "resolved", 3*time.Hour, "sent"))
	}
	grouped := archiveTicket(t, b, "arch-grouped", "resolved", 3*time.Hour, "sent")
	if _, err := b.pool.Exec(ctx, `WITH g AS (INSERT INTO sweeper.alert_groups (channel, provider, reason) VALUES ('C1', 'sim', 'not_found') RETURNING id)
		UPDATE sweeper.outbox SET group_id = (SELECT id FROM g) WHERE ticket_id = $1 AND kind = 'opened'`, grouped); err != nil {
		t.Fatal(err)
	}
	due = append(due, grouped)
	recent := archiveTicket(t, b, "arch-recent", "resolved", time.Hour, "sent")
	open := archiveTicket(t, b, "arch-open", "open", 0, "sent")
	owed := archiveTicket(t, b, "arch-owed", "resolved", 3*time.Hour, "parked")

	p := b.sweeper.Pruner()
	p.Page = 2 // pages of two: three archive files for four tickets and the held one
	if _, err := p.Prune(ctx); err != nil {
		t.Fatal(err)
	}

	// Every ticket due is in exactly one file, whole.
	files, err := filepath.Glob(filepath.Join(dir, "tickets-*.jsonl"))
	if err != nil || len(files) < 2 {
		t.Fatalf("archive files %v, %v; want one per page", files, err)
	}
	var archived []int64
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var x review.Exported
			if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(x.Events) != 2 || x.Events[0].Kind != "opened" || x.Events[1].Kind != "resolved" || x.State != "resolved" || !strings.HasPrefix(x.OpKey, "arch-") {
				t.Errorf("%s: ticket %d archived as %+v", f, x.ID, x)
			}
			archived = append(archived, x.ID)
			var file string
			if err := b.pool.QueryRow(ctx, `SELECT file FROM sweeper.ticket_archives WHERE ticket_id = $1`, x.ID).Scan(&file); err != nil || file != f {
				t.Errorf("ticket %d: archive row %q, %v; want %s", x.ID, file, err, f)
			}
		}
		fh.Close()
		if info, err := os.Stat(f); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", f, info, err)
		}
	}
	slices.Sort(archived)
	if !slices.Equal(archived, due) {
		t.Errorf("archived tickets %v, want %v", archived, due)
	}
	for _, id := range due {
		if n := b.count(t, `SELECT (SELECT count(*) FROM sweeper.tickets WHERE id = $1) + (SELECT count(*) FROM sweeper.ticket_events WHERE ticket_id = $1)
			+ (SELECT count(*) FROM sweeper.outbox WHERE ticket_id = $1)`, id); n != 0 {
			t.Errorf("archived ticket %d keeps %d row(s) in the database", id, n)
		}
	}
	for _, id := range []int64{recent, open, owed} {
		if n := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE id = $1`, id); n != 1 {
			t.Errorf("ticket %d deleted; it was not due, or its alert is still owed", id)
		}
		if n := b.count(t, `SELECT count(*) FROM sweeper.ticket_archives WHERE ticket_id = $1`, id); n != 0 {
			t.Errorf("ticket %d recorded archived", id)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.alert_groups`); n != 1 {
		t.Errorf("%d alert groups, want the one kept", n)
	}
	// A second pass finds nothing more.
	if n, err := p.Prune(ctx); err != nil || n != 0 {
		t.Errorf("second pass = %d, %v; want 0", n, err)
	}
	if file, err := review.NewReader(b.pool, ledger.Native()).ArchivedIn(ctx, due[0]); err != nil || file == "" {
		t.Errorf("ArchivedIn(%d) = %q, %v", due[0], file, err)
	}
}

// TestArchiveNeverDeletesUnwritten: a pass whose delete fails after its
// file was written leaves the tickets in the database (and in that file);
// the next pass archives them again. A pass that cannot write its file
// deletes nothing.
func TestArchiveNeverDeletesUnwritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, baseConfig, nil)
	dir := t.TempDir()
	b.sweeper.Config.Retention.ResolvedTickets = config.NewDuration(2 * time.Hour)
	b.sweeper.Config.Retention.ArchiveDir = dir
	id := archiveTicket(t, b, "arch-fail", "resolved", 3*time.Hour, "sent")

	// The directory cannot be written: nothing is deleted.
	b.sweeper.Config.Retention.ArchiveDir = filepath.Join(dir, "gone")
	if _, err := b.sweeper.Pruner().Prune(ctx); err == nil || !strings.Contains(err.Error(), "archive tickets") {
		t.Errorf("Prune into a missing directory: %v; want the archive's error", err)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE id = $1`, id); n != 1 {
		t.Fatal("the ticket was deleted without an archive file")
	}

	// The delete fails after the file was written: the ticket stays.
	b.sweeper.Config.Retention.ArchiveDir = dir
	if _, err := b.pool.Exec(ctx, `CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse BEFORE DELETE ON sweeper.tickets FOR EACH ROW EXECUTE FUNCTION public.refuse()`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.sweeper.Pruner().Prune(ctx); err == nil {
		t.Error("Prune with the delete refused: no error")
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE id = $1`, id); n != 1 {
		t.Fatal("the ticket was deleted though the transaction failed")
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.ticket_archives`); n != 0 {
		t.Error("an archive row outlived its failed transaction")
	}
	if _, err := b.pool.Exec(ctx, `DROP TRIGGER refuse ON sweeper.tickets`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.sweeper.Pruner().Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE id = $1`, id); n != 0 {
		t.Error("the ticket was not archived on the next pass")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tickets-*.jsonl"))
	if len(files) != 2 {
		t.Errorf("archive files %v; want the failed pass's and the next one's", files)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".archiving-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestTicketDeleteGuard: the database refuses to delete a ticket or an
// event unless the transaction is sweeper's, the ticket resolved and
// archived; the archive rows themselves are append-only.
func TestTicketDeleteGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, baseConfig, nil)
	resolved := archiveTicket(t, b, "guard-resolved", "resolved", 3*time.Hour, "sent")
	open := archiveTicket(t, b, "guard-open", "open", 0, "sent")
	try := func(sweeper bool, stmt string, args ...any) error {
		tx, err := b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if sweeper {
			if _, err := tx.Exec(ctx, ledger.SweeperWriterSQL); err != nil {
				t.Fatal(err)
			}
		}
		_, err = tx.Exec(ctx, stmt, args...)
		return err
	}
	for _, c := range []struct {
		desc    string
		sweeper bool
		stmt    string
		id      int64
	}{
		{"a resolved ticket, not archived", true, `DELETE FROM sweeper.tickets WHERE id = $1`, resolved},
		{"its events, not archived", true, `DELETE FROM sweeper.ticket_events WHERE ticket_id = $1`, resolved},
		{"an archived ticket, not by sweeper", false, `WITH a AS (INSERT INTO sweeper.ticket_archives (ticket_id, op_key, file) VALUES ($1, 'k', '/f'))
			DELETE FROM sweeper.tickets WHERE id = $1`, resolved},
		{"an open ticket, archived", true, `WITH a AS (INSERT INTO sweeper.ticket_archives (ticket_id, op_key, file) VALUES ($1, 'k', '/f'))
			DELETE FROM sweeper.tickets WHERE id = $1`, open},
		{"an event, updated", true, `UPDATE sweeper.ticket_events SET actor = 'x' WHERE ticket_id = $1`, resolved},
	} {
		if err := try(c.sweeper, c.stmt, c.id); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("%s: %v; want refused", c.desc, err)
		}
	}
	if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.ticket_archives (ticket_id, op_key, file) VALUES (-1, 'k', '/f')`); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{`DELETE FROM sweeper.ticket_archives`, `UPDATE sweeper.ticket_archives SET file = '/g'`} {
		if err := try(true, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v; want refused", stmt, err)
		}
	}
}
