package migrations_test

import (
	"context"
	"testing"

	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestIncidentsDownUp: a provider going down and up writes one incident
// and one outbox row for each change, whoever writes the state; an outbox
// row belongs to a ticket or an incident, never both or neither; the Down
// leaves the outbox an earlier version reads, and Up applies again.
func TestIncidentsDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	for _, q := range []string{
		`INSERT INTO sweeper.provider_health (provider, state, since) VALUES ('acme', 'down', now())`,
		`UPDATE sweeper.provider_health SET last_error = 'again' WHERE provider = 'acme'`, // no change of state
		`UPDATE sweeper.provider_health SET state = 'down' WHERE provider = 'acme'`,       // nor this
		`UPDATE sweeper.provider_health SET state = 'up', since = now() WHERE provider = 'acme'`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var incidents, rows int
	var ended bool
	err := pool.QueryRow(ctx, `SELECT count(*), bool_and(ended_at IS NOT NULL),
		(SELECT count(*) FROM sweeper.outbox WHERE incident_id IS NOT NULL) FROM sweeper.incidents`).Scan(&incidents, &ended, &rows)
	if err != nil {
		t.Fatal(err)
	}
	if incidents != 1 || !ended || rows != 2 {
		t.Fatalf("%d incidents (ended %v), %d outbox rows; want 1 ended, 2 rows", incidents, ended, rows)
	}
	for _, q := range []string{
		`INSERT INTO sweeper.outbox (dedupe_key, kind) VALUES ('neither', 'x')`,
		`DELETE FROM sweeper.incidents`,
		`TRUNCATE sweeper.incidents CASCADE`,
	} {
		if _, err := pool.Exec(ctx, q); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}

	// An alert group's message, and a skipped row, for the later
	// migrations' Down to undo.
	for _, q := range []string{
		`INSERT INTO sweeper.alert_groups (channel, provider, reason) VALUES ('C0', 'acme', 'not_found')`,
		`INSERT INTO sweeper.outbox (group_id, dedupe_key, kind) SELECT id, 'group:' || id || ':opened', 'group_opened' FROM sweeper.alert_groups`,
		`UPDATE sweeper.outbox SET state = 'skipped', error_code = 'settled_before_alert' WHERE kind = 'incident_closed'`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	m := migrations.New(pool, nil)
	if err := m.DownTo(ctx, 20261201000006); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.outbox`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("after Down: %d outbox rows, %v; want the incidents' and groups' rows gone", rows, err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
}
