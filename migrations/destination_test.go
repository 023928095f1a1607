package migrations_test

import (
	"context"
	"testing"

	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestOutboxDestinationDownUp: the migration that gives outbox rows their
// receiver-neutral destination and reference copies each row's channel and
// ts into them; while the old columns stay, writing either name writes
// both; its Down keeps what the new columns held in the old ones.
func TestOutboxDestinationDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	m := migrations.New(pool, nil)
	if err := m.DownTo(ctx, 20261208000060); err != nil {
		t.Fatal(err)
	}
	_, err := pool.Exec(ctx, `
		BEGIN;
		SELECT set_config('sweeper.writer', 'sweeper', true);
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status)
		VALUES ('o-1', 'wf', 'mailer', 'send_email', repeat('a', 64), 'review');
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
		SELECT id, op_key, 'not_found', 'U0OWNER', 'normal', now() + interval '4 hours', '{}' FROM ledger.operations;
		INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		SELECT id, k, 'sweeper', 'ticket:' || id || ':' || k FROM sweeper.tickets, unnest(ARRAY['opened', 'e1']) AS k;
		UPDATE sweeper.outbox SET state = 'sent', sent_at = now(), channel = 'C0ALERTS', ts = '1700000000.000100' WHERE kind = 'opened';
		COMMIT;`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	read := func(kind string) (dest, ref, channel, ts string) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT coalesce(destination, ''), coalesce(reference, ''), coalesce(channel, ''), coalesce(ts, '')
			FROM sweeper.outbox WHERE kind = $1`, kind).Scan(&dest, &ref, &channel, &ts); err != nil {
			t.Fatal(err)
		}
		return
	}
	if d, r, _, _ := read("opened"); d != "C0ALERTS" || r != "1700000000.000100" {
		t.Errorf("after Up: destination %q, reference %q; want the row's channel and ts", d, r)
	}
	// New code writes the new names, an older reader sees the old ones.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.outbox SET destination = 'C0OTHER', reference = '1700000001.000200' WHERE kind = 'e1'`); err != nil {
		t.Fatal(err)
	}
	if d, r, c, ts := read("e1"); d != "C0OTHER" || r != "1700000001.000200" || c != d || ts != r {
		t.Errorf("written by the new names: %q %q, old %q %q; want them equal", d, r, c, ts)
	}
	if _, err := pool.Exec(ctx, `UPDATE sweeper.outbox SET channel = 'C0THIRD' WHERE kind = 'e1'`); err != nil {
		t.Fatal(err)
	}
	if d, _, c, _ := read("e1"); d != "C0THIRD" || c != d {
		t.Errorf("written by the old name: destination %q, channel %q; want both C0THIRD", d, c)
	}
	if err := m.DownTo(ctx, 20261208000060); err != nil {
		t.Fatal(err)
	}
	var channel, ts string
	if err := pool.QueryRow(ctx, `SELECT channel, ts FROM sweeper.outbox WHERE kind = 'e1'`).Scan(&channel, &ts); err != nil {
		t.Fatal(err)
	}
	if channel != "C0THIRD" || ts != "1700000001.000200" {
		t.Errorf("after Down: channel %q, ts %q", channel, ts)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
}
