package migrations_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestDatabaseAheadOfTheBinary: a migration a newer binary applied is
// listed as unknown (the database is ahead), counted apart from applied
// and pending, and Up and Down refuse such a database without changing it.
func TestDatabaseAheadOfTheBinary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewDatabase(t))
	m := migrations.New(pool, nil)
	before, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := migrations.Counts(before); c.Pending != 0 || c.Unknown != 0 || m.Ahead(ctx) != nil {
		t.Fatalf("a current database counts %+v, ahead: %v", c, m.Ahead(ctx))
	}
	// What a newer binary's goose leaves in the history.
	const newer = 20991231000001
	if _, err := pool.Exec(ctx, `INSERT INTO sweeper.schema_migrations (version_id, is_applied) VALUES ($1, true)`, newer); err != nil {
		t.Fatal(err)
	}
	after, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(after, func(v migrations.Version) bool { return v.Version == newer })
	if i < 0 || !after[i].Unknown || !after[i].Applied || after[i].Component != migrations.ComponentSweeper {
		t.Fatalf("status does not list the newer migration as unknown: %+v", after)
	}
	if c := migrations.Counts(after); c.Unknown != 1 || c.Pending != 0 || c.Applied != len(before) {
		t.Errorf("counts %+v, want %d applied, 0 pending, 1 unknown", c, len(before))
	}
	var ahead *migrations.AheadError
	if err := m.Ahead(ctx); !errors.As(err, &ahead) || len(ahead.Unknown) != 1 {
		t.Errorf("Ahead = %v, want an AheadError naming one migration", err)
	}
	if _, err := m.Up(ctx); !errors.As(err, &ahead) {
		t.Errorf("Up on a database ahead: %v, want an AheadError", err)
	}
	if _, err := m.Down(ctx, 1); !errors.As(err, &ahead) {
		t.Errorf("Down on a database ahead: %v, want an AheadError", err)
	}
	if again, err := m.Status(ctx); err != nil || len(again) != len(after) || migrations.Counts(again) != migrations.Counts(after) {
		t.Errorf("the refusals changed the database: %+v (%v)", migrations.Counts(again), err)
	}
}

// TestDownRollsBackTheLastMigrations: Down(n) rolls back sweeper's last n
// migrations, newest first, which Up then applies again; more than are
// applied, or none, is refused without a change.
func TestDownRollsBackTheLastMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewDatabase(t))
	m := migrations.New(pool, nil)
	all, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ours []migrations.Version
	for _, v := range all {
		if v.Component == migrations.ComponentSweeper {
			ours = append(ours, v)
		}
	}
	if _, err := m.Down(ctx, len(ours)+1); err == nil {
		t.Error("rolled back more migrations than are applied")
	}
	if _, err := m.Down(ctx, 0); err == nil {
		t.Error("Down(0) was not refused")
	}
	if n, err := m.Pending(ctx); err != nil || n != 0 {
		t.Fatalf("after the refusals %d pending (%v), want 0", n, err)
	}
	done, err := m.Down(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	last, prev := ours[len(ours)-1], ours[len(ours)-2]
	if len(done) != 2 || done[0].Version != last.Version || done[1].Version != prev.Version {
		t.Fatalf("rolled back %+v, want %d then %d", done, last.Version, prev.Version)
	}
	if n, err := m.Pending(ctx); err != nil || n != 2 {
		t.Fatalf("after Down(2): %d pending (%v), want 2", n, err)
	}
	applied, err := m.Up(ctx)
	if err != nil || len(applied) != 2 {
		t.Fatalf("Up after Down(2) applied %+v (%v), want the 2 again", applied, err)
	}
}

// TestEveryMigrationRollsBack: each of sweeper's migrations has a Down
// that works, in order: all of them rolled back leave River's tables
// alone, and Up builds the schema again.
func TestEveryMigrationRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewDatabase(t))
	m := migrations.New(pool, nil)
	all, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ours := 0
	for _, v := range all {
		if v.Component == migrations.ComponentSweeper {
			ours++
		}
	}
	if done, err := m.Down(ctx, ours); err != nil || len(done) != ours {
		t.Fatalf("Down(%d) rolled back %d: %v", ours, len(done), err)
	}
	after, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := migrations.Counts(after); c.Pending != ours || c.Applied != len(all)-ours {
		t.Errorf("after rolling back every one: %+v, want %d pending and River's applied", c, ours)
	}
	if applied, err := m.Up(ctx); err != nil || len(applied) != ours {
		t.Fatalf("Up applied %d (%v), want %d", len(applied), err, ours)
	}
}
