package migrations_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestOutboxDeadEndsDownUp: the migration that gives parked rows their
// error code and uncertain rows their search window derives both from the
// rows an earlier version left; its Down parks dismissed rows again, and
// it applies once more.
func TestOutboxDeadEndsDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	m := migrations.New(pool, nil)
	if err := m.DownTo(ctx, 20261201000002); err != nil {
		t.Fatal(err)
	}
	// An earlier version's rows: parked on a Slack error, parked for their
	// age, uncertain and pending.
	_, err := pool.Exec(ctx, `
		BEGIN;
		SELECT set_config('sweeper.writer', 'sweeper', true);
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status)
		VALUES ('o-1', 'wf', 'mailer', 'send_email', repeat('a', 64), 'review');
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
		SELECT id, op_key, 'not_found', 'U0OWNER', 'normal', now() + interval '4 hours', '{}' FROM ledger.operations;
		INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		SELECT id, k, 'sweeper', 'ticket:' || id || ':' || k FROM sweeper.tickets, unnest(ARRAY['opened', 'e1', 'e2']) AS k;
		UPDATE sweeper.outbox SET state = 'parked', last_error = 'chat.postMessage: not_in_channel' WHERE kind = 'opened';
		UPDATE sweeper.outbox SET state = 'parked', last_error = 'expired: older than slack.max_alert_age (24h); not posted' WHERE kind = 'e1';
		UPDATE sweeper.outbox SET uncertain = true, channel = 'C0OLD', first_attempt_at = now() - interval '1 hour',
		    attempts = 3, last_error = 'chat.postMessage: EOF' WHERE kind = 'e2';
		COMMIT;`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT kind, coalesce(error_code, ''), jsonb_array_length(search_windows),
		coalesce(search_windows->0->>'channel', '') FROM sweeper.outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"opened not_in_channel 0 ", "e1 expired 0 ", "e2  1 C0OLD"}
	var got []string
	for rows.Next() {
		var kind, code, channel string
		var windows int
		if err := rows.Scan(&kind, &code, &windows, &channel); err != nil {
			t.Fatal(err)
		}
		got = append(got, kind+" "+code+" "+strconv.Itoa(windows)+" "+channel)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("rows after Up: %q, want %q", got, want)
		}
	}

	if _, err := pool.Exec(ctx, `UPDATE sweeper.outbox SET state = 'dismissed' WHERE kind = 'opened'`); err != nil {
		t.Fatal(err)
	}
	if err := m.DownTo(ctx, 20261201000002); err != nil {
		t.Fatal(err)
	}
	var parked int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.outbox WHERE state = 'parked'`).Scan(&parked); err != nil {
		t.Fatal(err)
	}
	if parked != 2 {
		t.Errorf("%d parked rows after Down, want 2 (the dismissed one parked again)", parked)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("Up after Down: %v", err)
	}
}
